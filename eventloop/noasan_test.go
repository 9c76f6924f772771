//go:build !asan

package eventloop_test

// sanitized: see asan_test.go.
const sanitized = false
