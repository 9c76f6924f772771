//go:build duet_sharedpython

package capi

// With the tag duet_sharedpython, CPython comes from libpython3.11.so: for
// -buildmode=pie and c-shared builds, which the static archive cannot
// make; slower (see link_static.go).

/*
#cgo pkg-config: python3-embed
*/
import "C"
