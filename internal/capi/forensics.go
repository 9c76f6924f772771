package capi

/*
#include <stdint.h>
#include <stdlib.h>
#include "duet.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// A Crossing is one recorded boundary crossing (see forensics.c).
type Crossing struct {
	Seq    uint64
	Thread int32
	Kind   string
	What   string
}

// SetRing turns the recording of crossings on or off.
func SetRing(on bool) { C.duet_ring_enable(cbool(on)) }

// Ring returns up to max recorded crossings, oldest first.
func Ring(max int) []Crossing {
	if max <= 0 {
		return nil
	}
	// C copies the entries into buf (Go memory holding no Go pointers);
	// kind points at a C string literal, which lives as long as the program.
	buf := make([]C.duet_crossing, max)
	n := int(C.duet_ring_read(&buf[0], C.int(max)))
	out := make([]Crossing, n)
	for i := range out {
		c := &buf[i]
		out[i] = Crossing{Seq: uint64(c.seq), Thread: int32(c.tid), Kind: C.GoString(c.kind),
			What: C.GoString(&c.what[0])}
	}
	return out
}

// InstallCrashHandler makes fd the report file (-1: stderr only) and puts
// duet's handlers for SIGABRT, SIGQUIT and the fatal signals in place,
// chained to Go's (once; later calls change the file). When dirfd is not
// -1, fd is an unnamed file (O_TMPFILE) that the crash handler links into
// that directory as name before it writes; path is what stderr names. C
// copies the strings.
func InstallCrashHandler(fd, dirfd int, name, path string) bool {
	cn, cp := C.CString(name), C.CString(path)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cp))
	return C.duet_crash_install(C.int(fd), C.int(dirfd), cn, cp) == 0
}

// SetDebugCallbacks turns the quarantine of freed callbacks on or off.
func SetDebugCallbacks(on bool) { C.duet_debug_set(cbool(on)) }

// Quarantined counts the freed callbacks kept in quarantine.
func Quarantined() int { return int(C.duet_quarantined()) }

// CensusRefs returns a dict {type name: count} of the references Go holds.
func CensusRefs() (Ref, Status, Ref) { return res(C.duet_census_refs()) }

// DeadHandler is told about a call into a quarantined callback: its
// handle and, when a signal emission made the call, the signal's name and
// the emitter's type and address. It must not return (the C side aborts
// if it does).
type DeadHandler func(handle uintptr, signal, typ string, instance uintptr)

var deadHandler atomic.Pointer[DeadHandler]

// SetDeadHandler installs the Go side of the quarantine's diagnosis.
func SetDeadHandler(h DeadHandler) { deadHandler.Store(&h) }

//export duetCallbackDead
func duetCallbackDead(handle C.uintptr_t, signal, typ *C.char, instance C.uintptr_t) {
	h := deadHandler.Load()
	if h == nil {
		return
	}
	str := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	(*h)(uintptr(handle), str(signal), str(typ), uintptr(instance))
}
