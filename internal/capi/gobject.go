package capi

/*
#cgo pkg-config: pygobject-3.0 gobject-2.0
#include <stdint.h>
#include <stdlib.h>
#include <glib.h>
#include "gobject.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// GObjectPointer returns the GObject* a PyGObject wrapper designates, and
// whether the wrapper holds a toggle reference on it. The pointer is
// borrowed: valid while the wrapper lives.
func GObjectPointer(r Ref) (p unsafe.Pointer, toggled bool, st Status, exc Ref) {
	cr := C.duet_gobject_pointer(r.c())
	_, st, exc = res(cr)
	return cr.p, cr.n != 0, st, exc
}

// PropertyFuncs returns a tuple (set_property, construct) of Python
// builtins that write GObject properties as PyGObject does, but refuse
// (ValueError) a value GLib's validation of the property would change,
// which GLib would drop with a warning.
func PropertyFuncs() (Ref, Status, Ref) { return res(C.duet_property_funcs()) }

// WrapGObject returns the PyGObject wrapper of gobj (a new owned ref).
func WrapGObject(gobj uintptr) (Ref, Status, Ref) {
	return res(C.duet_gobject_wrap(C.uintptr_t(gobj)))
}

var finalizedHandler atomic.Pointer[func(uintptr)]

// SetFinalizedHandler sets what WatchGObject reports to.
func SetFinalizedHandler(f func(uintptr)) { finalizedHandler.Store(&f) }

//export duetGObjectFinalized
func duetGObjectFinalized(handle C.uintptr_t) {
	if f := finalizedHandler.Load(); f != nil {
		(*f)(uintptr(handle))
	}
}

// WatchGObject reports handle to the finalized handler when gobj is
// finalised (object data with a destroy notify: it does not keep gobj
// alive, and unlike a weak reference it does not fire at dispose).
func WatchGObject(gobj, handle uintptr) { C.duet_gobject_watch(C.uintptr_t(gobj), C.uintptr_t(handle)) }

// GObjectRefcount reads gobj's reference count (for tests and diagnostics).
func GObjectRefcount(gobj uintptr) int { return int(C.duet_gobject_refcount(C.uintptr_t(gobj))) }

// GObjectTypeName returns the name of gobj's type.
func GObjectTypeName(gobj uintptr) string {
	return C.GoString(C.duet_gobject_type_name(C.uintptr_t(gobj)))
}

// Gotk4Toggles counts gotk4's toggle references on gobj: -1 without gotk4,
// -2 when GLib's record is not laid out as expected (release nothing).
func Gotk4Toggles(gobj uintptr) int { return int(C.duet_gotk4_toggles(C.uintptr_t(gobj))) }

var idleAfter atomic.Pointer[func()]

// SetIdleAfterHandler sets what ScheduleIdleAfter runs.
func SetIdleAfterHandler(f func()) { idleAfter.Store(&f) }

//export duetIdleAfter
func duetIdleAfter() {
	if f := idleAfter.Load(); f != nil {
		(*f)()
	}
}

// ScheduleIdleAfter runs the handler once in a fresh default-priority idle:
// after every default-priority idle already queued (see gobject.c).
func ScheduleIdleAfter() { C.duet_idle_after() }

// Gotk4ReleaseAll counts and removes gotk4's toggle references on gobj in
// one step and returns how many (-1 without gotk4, -2 when GLib's record
// has an unknown layout); see gobject.c for why that is safe on the UI
// thread. It may finalise gobj.
func Gotk4ReleaseAll(gobj uintptr) int { return int(C.duet_gotk4_release_all(C.uintptr_t(gobj))) }

// ToggleLayoutKnown reports whether GLib keeps toggle references and
// watched closures in the records gobject.c reads (checked on an object of
// its own).
func ToggleLayoutKnown() bool { return C.duet_toggle_layout_known() != 0 }

// WeakNew makes a weak reference to gobj (C memory the caller frees with
// WeakFree, which never touches Python).
func WeakNew(gobj uintptr) unsafe.Pointer { return C.duet_weak_new(C.uintptr_t(gobj)) }

// WeakGet returns the wrapper of the object (OK) or None when it is gone.
func WeakGet(weak unsafe.Pointer) (Ref, Status, Ref) { return res(C.duet_weak_get(weak)) }

// WeakFree frees a weak reference; any thread.
func WeakFree(weak unsafe.Pointer) { C.duet_weak_free(weak) }

// UsedGObject is a GObject Go holds a reference to that a Go callback used
// while it ran. Type was read while the object was surely alive; the
// address may be stale by the time it is read.
type UsedGObject struct {
	Handle, Addr uintptr
	Type         string
}

// UsedGObjects returns the GObjects Go holds references to that a Go
// callback used while it ran.
func UsedGObjects() []UsedGObject {
	const max = 4096
	buf := make([]C.uintptr_t, 2*max)
	names := make([]*C.char, max) // C pointers only: GLib's interned type names
	n := int(C.duet_used_gobjects(unsafe.SliceData(buf), unsafe.SliceData(names), C.int(max)))
	out := make([]UsedGObject, n)
	for i := range out {
		out[i] = UsedGObject{uintptr(buf[2*i]), uintptr(buf[2*i+1]), C.GoString(names[i])}
	}
	return out
}

// HandlerRun is how a Go signal handler runs on an emission.
type HandlerRun int

const (
	// RunGIL: holding the GIL, given the values it takes as Python objects.
	RunGIL HandlerRun = 0
	// RunBare: without the GIL; it takes nothing and returns nothing or an
	// error.
	RunBare HandlerRun = 1
	// RunLazy: it takes only GObjects and returns nothing or an error; it
	// runs without the GIL, given their pointers, until its first entry
	// into Python, and attached from there to its end. An emission whose
	// values are not all GObjects runs it as RunGIL does.
	RunLazy HandlerRun = 2
)

// ConnectNative connects the Go callback fn, whose Go function takes nargs
// of the signal's values (-1: all), to a signal of the GObject wrapper obj
// through duet's own closure; it returns the handler id and the GObject's
// address (an identity only: valid while obj lives).
//
// run says how the Go function runs on an emission, when fn is a duet
// callback (see BareHandler).
func ConnectNative(obj Ref, signal string, fn Ref, after bool, nargs int, run HandlerRun) (uint64, uintptr, Status, Ref) {
	p, n := cstr(signal)
	cr := C.duet_connect_native(obj.c(), p, n, fn.c(), cbool(after), C.int(nargs), C.int(run))
	_, st, exc := res(cr)
	return uint64(cr.n), uintptr(cr.p), st, exc
}

// ConnectNew makes the callback for handle (as NewCallback, PythonOwned)
// and connects it as ConnectNative does, in one crossing; the connection
// holds the callback's only reference.
func ConnectNew(obj Ref, signal string, handle uintptr, name, doc, module string, after bool, nargs int, run HandlerRun) (uint64, uintptr, Status, Ref) {
	sp, sn := cstr(signal)
	np, nl := cstr(name)
	var dp, mp *C.char
	var dl, ml C.int64_t
	if doc != "" {
		dp, dl = cstr(doc)
	}
	if module != "" {
		mp, ml = cstr(module)
	}
	cr := C.duet_connect_new(obj.c(), sp, sn, C.uintptr_t(handle), np, nl, dp, dl, mp, ml, cbool(after), C.int(nargs), C.int(run))
	_, st, exc := res(cr)
	return uint64(cr.n), uintptr(cr.p), st, exc
}

// Disconnect disconnects handler id from the GObject wrapper obj and
// returns the GObject's address (an identity only); false when no such
// handler was connected.
func Disconnect(obj Ref, id uint64) (bool, uintptr, Status, Ref) {
	cr := C.duet_disconnect(obj.c(), C.uint64_t(id))
	_, st, exc := res(cr)
	return cr.n == 1, uintptr(cr.p), st, exc
}

// DrainOffUI releases, off the UI thread once the loop has returned, the
// references whose release cannot finalise a GTK object, and returns those
// it kept (the last references to GObjects' wrappers), for the UI thread.
func DrainOffUI(refs []Ref) []Ref {
	if len(refs) == 0 {
		return nil
	}
	// Sound: Ref mirrors duet_ref; C reads and rewrites the slice during the call only.
	n := int(C.duet_drain_off_ui((*C.duet_ref)(unsafe.Pointer(unsafe.SliceData(refs))), C.int64_t(len(refs))))
	return refs[:n]
}

// EmitN emits signal (no arguments, no return value) on the GObject at gobj
// n times from C, as GTK emits from its own code, and returns the
// nanoseconds per emission: make bench's row for signals GTK emits. The
// caller keeps gobj alive; no GIL is held.
func EmitN(gobj uintptr, signal string, n int) (float64, error) {
	cs := C.CString(signal)
	defer C.free(unsafe.Pointer(cs))
	ns := float64(C.duet_emit_n(C.uintptr_t(gobj), cs, C.int64_t(n)))
	if ns < 0 {
		return 0, fmt.Errorf("capi: cannot emit %q %d times", signal, n)
	}
	return ns, nil
}

// ConnectNoop connects a C handler that does nothing to signal on the
// GObject at gobj: with EmitN, the floor under any handler (GLib's own cost
// of an emission to one handler).
func ConnectNoop(gobj uintptr, signal string) error {
	cs := C.CString(signal)
	defer C.free(unsafe.Pointer(cs))
	if C.duet_connect_noop(C.uintptr_t(gobj), cs) == 0 {
		return fmt.Errorf("capi: cannot connect to %q", signal)
	}
	return nil
}
