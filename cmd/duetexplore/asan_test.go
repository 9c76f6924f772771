//go:build asan

package main

// sanitized says that this test binary is built with -asan (make
// sanitize): see skipSanitized.
const sanitized = true
