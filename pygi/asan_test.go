//go:build asan

package pygi

// sanitized: this test binary is built with -asan (make sanitize), whose
// instrumentation allocates where a plain build does not.
const sanitized = true
