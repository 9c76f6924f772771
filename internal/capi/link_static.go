//go:build !duet_sharedpython

package capi

// CPython is linked in from its static archive, as Debian's python3 is:
// libpython3.11.so's position-independent code costs 10-15% on every
// Python-heavy path (make bench). --export-dynamic gives the extension
// modules (PyGObject's _gi among them) the C API they link against, as
// python3's executable does; expat and zlib are what the archive's
// built-in modules need. interpose.c finds CPython's code in the
// executable's symbol tables.
//
// The archive is not position-independent: -buildmode=pie and c-shared
// need the tag duet_sharedpython (its position-independent twin,
// libpython3.11-pic.a, measures as slow as libpython.so).

/*
#cgo pkg-config: python3
#cgo CFLAGS: -DDUET_STATIC_PYTHON
#cgo LDFLAGS: -l:libpython3.11.a -Wl,--export-dynamic -lexpat -lz -lm -ldl
*/
import "C"
