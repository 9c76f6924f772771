//go:build !asan

package main

const sanitized = false
