//go:build duet_sharedpython

package capi

// With the tag duet_sharedpython, CPython comes from libpython3.11.so, for
// a system without the static archive (Debian's libpython3.11-dev has
// both); slower (see link_static.go).

/*
#cgo pkg-config: python3-embed
*/
import "C"
