//go:build asan

package eventloop_test

// sanitized: this test binary is built with -asan (make sanitize).
const sanitized = true
