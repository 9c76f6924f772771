// Package capi is duet's raw cgo layer: the only package that includes
// Python.h. Everything above it is plain Go.
//
// Each function here makes one cgo crossing that attaches to Python itself
// (see duet.h), so callers need no GIL bookkeeping. Results that own a
// Python reference come back as a Slot; the caller must eventually hand
// every Slot it receives to Close or Drain.
package capi

/*
#cgo pkg-config: python3-embed
#cgo CFLAGS: -O2 -Wall -Wno-unused-function
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include "duet.h"
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// Slot is a duet_slot*: C memory holding one strong Python reference (or
// none once closed). It is owned by exactly one Go value at a time.
type Slot unsafe.Pointer

// Val mirrors duet_val (checked by a static assert in duet.c and a test).
type Val struct {
	Kind int32
	_    int32
	N    int64
	I    int64
	F    float64
	P    unsafe.Pointer // a Slot for KindSlot; never a Go pointer
}

// Compile-time check that Val and duet_val agree in size (duet.c checks
// the offsets).
var _ [unsafe.Sizeof(Val{})]byte = [C.sizeof_duet_val]byte{}

// Value kinds, as in duet.h.
const (
	KindNone int32 = iota
	KindBool
	KindInt
	KindUint
	KindBigInt
	KindFloat
	KindStr
	KindBytes
	KindList
	KindTuple
	KindDict
	KindSet
	KindSlot
	KindHandle
)

// Status is the outcome of an operation.
type Status int

// Status values, as in duet.h.
const (
	OK      Status = 0  // a new Slot was returned
	None    Status = 1  // the result was None; no Slot
	End     Status = 2  // an iterator is exhausted
	Err     Status = -1 // a Python exception; its Slot was returned
	Closed  Status = -2 // a Slot involved was closed
	NotInit Status = -3
)

func cstr(s string) (*C.char, C.int64_t) {
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.int64_t(len(s))
}

func cvals(v []Val) (*C.duet_val, C.int64_t) {
	return (*C.duet_val)(unsafe.Pointer(unsafe.SliceData(v))), C.int64_t(len(v))
}

func carena(b []byte) *C.char { return (*C.char)(unsafe.Pointer(unsafe.SliceData(b))) }

func slot(s Slot) *C.duet_slot { return (*C.duet_slot)(s) }

// Init starts the interpreter on the calling OS thread and releases the GIL
// before returning, whether or not it succeeded.
func Init(argv0 string) error {
	a := C.CString(argv0)
	defer C.free(unsafe.Pointer(a))
	var msg *C.char
	if C.duet_init(a, &msg) != 0 {
		defer C.free(unsafe.Pointer(msg))
		return errors.New(C.GoString(msg))
	}
	return nil
}

// Finalize runs Py_FinalizeEx. It must run on the thread that called Init,
// with no Python call in flight anywhere.
func Finalize() { C.duet_finalize() }

// HoldsGIL reports whether the calling OS thread holds the GIL.
func HoldsGIL() bool { return C.PyGILState_Check() != 0 }

// Attach and Detach bracket a batch scope; the caller must keep its
// goroutine on one OS thread in between.
func Attach() int           { return int(C.duet_attach()) }
func Detach(state int)      { C.duet_detach(C.int(state)) }
func SaveThread() Slot      { return Slot(C.duet_save_thread()) }
func RestoreThread(ts Slot) { C.duet_restore_thread(unsafe.Pointer(ts)) }

// Close releases the reference held by s now; s stays readable (and empty)
// until drained.
func Close(s Slot) { C.duet_close(slot(s)) }

// Drain releases what each slot still holds and frees the slots. With
// pythonAlive false (after finalisation) it only frees the memory.
func Drain(slots []Slot, pythonAlive bool) {
	if len(slots) == 0 {
		return
	}
	alive := C.int(0)
	if pythonAlive {
		alive = 1
	}
	C.duet_drain((**C.duet_slot)(unsafe.Pointer(unsafe.SliceData(slots))), C.int64_t(len(slots)), alive)
}

// Holds reports whether s still holds a reference. It reads without the GIL
// and is only meaningful when no goroutine can close s concurrently (for
// example in a GC cleanup, where the owner is already unreachable).
func Holds(s Slot) bool { return *(*unsafe.Pointer)(s) != nil }

// Clone returns a new slot with its own reference to the same object, or
// nil when s is closed.
func Clone(s Slot) Slot { return Slot(C.duet_clone(slot(s))) }

// Refcount returns the object's reference count, or -1 when s is closed.
func Refcount(s Slot) int64 { return int64(C.duet_refcount(slot(s))) }

// FromVals builds one Python object from an encoded Go value.
func FromVals(v []Val, arena []byte) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	cv, n := cvals(v)
	st := C.duet_from_vals(cv, n, carena(arena), &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

// ToVals encodes the object in s and hands the encoding to use, which runs
// before ToVals returns. vals and arena alias C memory that is only valid
// during use (use must copy what it keeps, and must not call ToVals). Every
// KindSlot value carries a new Slot that use takes over.
func ToVals(s Slot, use func(vals []Val, arena []byte)) (Status, Slot) {
	var cv *C.duet_val
	var cb *C.char
	var nv, nb C.int64_t
	var exc *C.duet_slot
	// The encoding lives in this thread's scratch buffer until the next
	// ToVals on the thread: stay on it while use reads it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := C.duet_to_vals(slot(s), &cv, &nv, &cb, &nb, &exc)
	if Status(st) == OK {
		use(unsafe.Slice((*Val)(unsafe.Pointer(cv)), int(nv)), unsafe.Slice((*byte)(unsafe.Pointer(cb)), int(nb)))
	}
	return Status(st), Slot(exc)
}

// Import imports a module by dotted name.
func Import(name string) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	p, n := cstr(name)
	st := C.duet_import(p, n, &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

func GetAttr(s Slot, name string) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	p, n := cstr(name)
	st := C.duet_getattr(slot(s), p, n, &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

// SetAttr sets name to the value encoded in v.
func SetAttr(s Slot, name string, v []Val, arena []byte) (Status, Slot) {
	var exc *C.duet_slot
	p, n := cstr(name)
	cv, nv := cvals(v)
	st := C.duet_setattr(slot(s), p, n, cv, nv, carena(arena), &exc)
	return Status(st), Slot(exc)
}

func DelAttr(s Slot, name string) (Status, Slot) {
	var exc *C.duet_slot
	p, n := cstr(name)
	st := C.duet_delattr(slot(s), p, n, &exc)
	return Status(st), Slot(exc)
}

func HasAttr(s Slot, name string) (bool, Status, Slot) {
	var exc *C.duet_slot
	var res C.int
	p, n := cstr(name)
	st := C.duet_hasattr(slot(s), p, n, &res, &exc)
	return res != 0, Status(st), Slot(exc)
}

// Call calls s (or its method named method, when method is not empty) with
// nargs positional values then nkw (name, value) pairs, encoded in v.
func Call(s Slot, method string, v []Val, arena []byte, nargs, nkw int) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	var mp *C.char
	var ml C.int64_t
	if method != "" {
		mp, ml = cstr(method)
	}
	cv, nv := cvals(v)
	st := C.duet_call(slot(s), mp, ml, cv, nv, carena(arena), C.int64_t(nargs), C.int64_t(nkw), &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

func GetItem(s Slot, key []Val, arena []byte) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	cv, nv := cvals(key)
	st := C.duet_getitem(slot(s), cv, nv, carena(arena), &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

// SetItem: v holds the key then the value.
func SetItem(s Slot, v []Val, arena []byte) (Status, Slot) {
	var exc *C.duet_slot
	cv, nv := cvals(v)
	st := C.duet_setitem(slot(s), cv, nv, carena(arena), &exc)
	return Status(st), Slot(exc)
}

func DelItem(s Slot, key []Val, arena []byte) (Status, Slot) {
	var exc *C.duet_slot
	cv, nv := cvals(key)
	st := C.duet_delitem(slot(s), cv, nv, carena(arena), &exc)
	return Status(st), Slot(exc)
}

func Len(s Slot) (int64, Status, Slot) {
	var exc *C.duet_slot
	var n C.int64_t
	st := C.duet_len(slot(s), &n, &exc)
	return int64(n), Status(st), Slot(exc)
}

// Str returns str(s), or repr(s) when repr is true.
func Str(s Slot, repr bool) (string, Status, Slot) {
	var exc *C.duet_slot
	var p *C.char
	var n C.int64_t
	r := C.int(0)
	if repr {
		r = 1
	}
	runtime.LockOSThread() // the text is thread scratch: copy before moving
	st := C.duet_str(slot(s), r, &p, &n, &exc)
	var text string
	if Status(st) == OK {
		text = C.GoStringN(p, C.int(n))
	}
	runtime.UnlockOSThread()
	return text, Status(st), Slot(exc)
}

func TypeName(s Slot) (string, Status) {
	var p *C.char
	var n C.int64_t
	runtime.LockOSThread()
	st := C.duet_typename(slot(s), &p, &n)
	var text string
	if Status(st) == OK && p != nil {
		text = C.GoStringN(p, C.int(n))
	}
	runtime.UnlockOSThread()
	return text, Status(st)
}

func Truth(s Slot) (bool, Status, Slot) {
	var exc *C.duet_slot
	var res C.int
	st := C.duet_truth(slot(s), &res, &exc)
	return res != 0, Status(st), Slot(exc)
}

func Is(a, b Slot) (bool, Status) {
	var res C.int
	st := C.duet_is(slot(a), slot(b), &res)
	return res != 0, Status(st)
}

func IsInstance(s, cls Slot) (bool, Status, Slot) {
	var exc *C.duet_slot
	var res C.int
	st := C.duet_isinstance(slot(s), slot(cls), &res, &exc)
	return res != 0, Status(st), Slot(exc)
}

func Iter(s Slot) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	st := C.duet_iter(slot(s), &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

// Next returns the next item (status OK, even for None), End, or Err.
func Next(it Slot) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	st := C.duet_next(slot(it), &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

// Run compiles and runs src with globals as both globals and locals. eval
// selects expression mode (the result is returned) over statement mode.
func Run(src, filename string, eval bool, globals Slot) (Slot, Status, Slot) {
	var out, exc *C.duet_slot
	p, n := cstr(src)
	f := C.CString(filename)
	defer C.free(unsafe.Pointer(f))
	mode := C.int(0)
	if eval {
		mode = 1
	}
	st := C.duet_run(p, n, f, mode, slot(globals), &out, &exc)
	return Slot(out), Status(st), Slot(exc)
}

// NewGlobals returns a new dict with __builtins__ set.
func NewGlobals() Slot {
	var out *C.duet_slot
	C.duet_new_dict_with_builtins(&out)
	return Slot(out)
}

// NoneSlot returns a new slot holding None.
func NoneSlot() Slot {
	var out *C.duet_slot
	C.duet_none(&out)
	return Slot(out)
}
