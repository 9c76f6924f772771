//go:build !asan

package pygi

// sanitized: see asan_test.go.
const sanitized = false
