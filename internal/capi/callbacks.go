package capi

/*
#include <stdint.h>
#include "duet.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// CallbackResult tells the C trampoline what a Go callback produced.
type CallbackResult int

const (
	ResultRef    CallbackResult = 0  // the owned Ref returned is the result
	ResultNone   CallbackResult = 1  // the result is None
	ResultRaised CallbackResult = -1 // a Python exception was set with Raise
	// ResultGone: the handle is unknown, its Go side already freed (the
	// deliberately broken ownership mode, or a bug). The C caller, which
	// knows what is calling (a signal, or Python), reports it through the
	// dead handler and aborts.
	ResultGone CallbackResult = -2
	// ResultNotRun: a bare closure's handler did not run, Python being
	// finalised meanwhile (as a marshal on another thread does not run
	// once Py_FinalizeEx has begun).
	ResultNotRun CallbackResult = -3
)

// CallbackHandler runs a Go callback. args aliases C memory valid only
// during the call: nargs positional refs then nkw keyword values (their
// names are in the tuple kwnames), all borrowed.
type CallbackHandler func(handle uintptr, args []Ref, nargs, nkw int, kwnames Ref) (Ref, CallbackResult)

// BareHandler runs a Go callback that takes nothing and returns nothing
// (or an error), for a signal, without the GIL: it attaches only to report
// a failure, which it prints (as PyGObject prints what a handler raised),
// so it returns ResultNone, ResultRaised (printed), ResultGone or
// ResultNotRun.
//
// nested says the emission runs inside a duet entry or another Go callback
// on this thread (which Finalize already waits for).
//
// gobjs is empty for such a function; for one that takes only GObjects it
// holds their pointers (a lazy handler, see gobject.c), borrowed from the
// emission: valid until the handler returns. The handler's first entry
// into Python on this thread attaches, and stays attached until it
// returns. made, as long as gobjs, is where the handler leaves the
// wrappers' references it made for them (owned), which the marshal
// releases when it returns, under the GIL the handler may still hold
// (no crossing more).
type BareHandler func(handle uintptr, nested bool, gobjs []uintptr, made []Ref) CallbackResult

var (
	bareHandler     atomic.Pointer[BareHandler]
	callbackHandler atomic.Pointer[CallbackHandler]
	releaseHandler  atomic.Pointer[func(uintptr)]
	handleRelease   atomic.Pointer[func(uintptr)]
)

// SetCallbackHandlers installs the Go side of callbacks: invoke runs one,
// release is told when Python freed a callback, handle when Python freed a
// capsule made by HandleCapsule.
func SetCallbackHandlers(invoke CallbackHandler, bare BareHandler, release, handle func(uintptr)) {
	callbackHandler.Store(&invoke)
	bareHandler.Store(&bare)
	releaseHandler.Store(&release)
	handleRelease.Store(&handle)
}

//export duetCallbackInvoke
func duetCallbackInvoke(handle C.uintptr_t, args *C.duet_ref, nargs, nkw C.int64_t, kwnames C.duet_ref, result *C.duet_ref) C.int {
	n := int(nargs + nkw)
	// Sound: the trampoline's array of duet_ref (mirrored by Ref), valid until
	// this function returns, which is as long as the handler may use it.
	refs := unsafe.Slice((*Ref)(unsafe.Pointer(args)), n)
	r, st := (*callbackHandler.Load())(uintptr(handle), refs, int(nargs), int(nkw), goRef(kwnames))
	*result = r.c()
	return C.int(st)
}

//export duetCallbackInvokeBare
func duetCallbackInvokeBare(handle C.uintptr_t, nested C.int, gobjs *C.uintptr_t, made *C.duet_ref, n C.int) C.int {
	var objs []uintptr
	var refs []Ref
	if n > 0 {
		// Sound: the marshal's arrays on its C stack, valid until this
		// returns; made holds refs (C pointers) only.
		objs = unsafe.Slice((*uintptr)(unsafe.Pointer(gobjs)), int(n))
		refs = unsafe.Slice((*Ref)(unsafe.Pointer(made)), int(n))
	}
	return C.int((*bareHandler.Load())(uintptr(handle), nested != 0, objs, refs))
}

// PrintRaised prints the Python exception set on this thread, through
// sys.excepthook, and clears it; the thread must be Attached.
func PrintRaised() { C.duet_print_raised() }

//export duetCallbackRelease
func duetCallbackRelease(handle C.uintptr_t) {
	if f := releaseHandler.Load(); f != nil {
		(*f)(uintptr(handle))
	}
}

//export duetHandleRelease
func duetHandleRelease(handle C.uintptr_t) {
	if f := handleRelease.Load(); f != nil {
		(*f)(uintptr(handle))
	}
}

// Callback flags, as in duet.h.
const (
	CallbackMethod = 1 // bind like a Python method (instancemethod)
	CallbackBroken = 2 // the deliberately broken ownership mode
)

// NewCallback makes the Python callable for handle. native is the callback's
// C state, which only the broken mode ever frees from Go (FreeNative).
func NewCallback(handle uintptr, name, doc, module string, flags int) (ref Ref, native unsafe.Pointer, st Status, exc Ref) {
	np, nl := cstr(name)
	var dp, mp *C.char
	var dl, ml C.int64_t
	if doc != "" {
		dp, dl = cstr(doc)
	}
	if module != "" {
		mp, ml = cstr(module)
	}
	cr := C.duet_callback_new(C.uintptr_t(handle), np, nl, dp, dl, mp, ml, C.int(flags))
	ref, st, exc = res(cr)
	return ref, cr.p, st, exc
}

// FreeNative frees a broken-mode callback's C state (see duet.h).
func FreeNative(native unsafe.Pointer) { C.duet_callback_free_native(native) }

// HandleCapsule returns a capsule that gives handle back (through the
// handler set with SetCallbackHandlers) when Python frees it.
func HandleCapsule(handle uintptr) (Ref, Status) {
	out, st, _ := res(C.duet_handle_capsule(C.uintptr_t(handle)))
	return out, st
}

// CapsuleHandle returns the handle in a HandleCapsule capsule, or 0.
func CapsuleHandle(r Ref) uintptr { return uintptr(C.duet_capsule_handle(r.c())) }

// RaiseOwned sets exc's object as the current Python exception (inside a
// callback) and releases exc, in one crossing.
func RaiseOwned(exc Ref) Status { return Status(C.duet_raise_owned(exc.c())) }

// Builtin exception kinds for RaiseMessage.
const (
	TypeError    = 0
	RuntimeError = 1
	SystemError  = 2
)

// RaiseMessage sets a builtin exception with msg (inside a callback).
func RaiseMessage(kind int, msg string) {
	p, n := cstr(msg)
	C.duet_raise_msg(C.int(kind), p, n)
}

// IsCallback reports whether r is a Go callback (a function NewCallback made).
func IsCallback(r Ref) bool { return C.duet_is_callback(r.c()) != 0 }

// CallbackHandle returns the Go handle of a duet callback, or 0.
func CallbackHandle(r Ref) uintptr { return uintptr(C.duet_callback_handle(r.c())) }
