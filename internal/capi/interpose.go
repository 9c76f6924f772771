package capi

/*
#include "duet.h"
*/
import "C"

// How interpose.c tells CPython's calls to sigaction, sigaltstack and
// siginterrupt from the rest of the process's (InterposeMode).
const (
	InterposeNone    = 0 // not at all: signals.c puts CPython's changes back by hand
	InterposeShared  = 1 // libpython3.11.so's code (the duet_sharedpython build)
	InterposeSymbols = 2 // CPython's functions in the executable's symbol table
	InterposeDynamic = 3 // a stripped executable: its dynamic symbol table, static functions placed by the unwind table
)

// InterposePrepare finds CPython's code (Init does it before Python starts).
func InterposePrepare() { C.duet_interpose_prepare() }

// InterposeMode is one of the Interpose constants.
func InterposeMode() int { return int(C.duet_interpose_mode()) }

// FromPythonAt reports whether a call returning to pc counts as CPython's.
func FromPythonAt(pc uintptr) bool { return C.duet_from_python_at(C.uintptr_t(pc)) != 0 }

// ExeBias is the executable's load address against its link-time one.
func ExeBias() uintptr { return uintptr(C.duet_exe_bias()) }
