// Package capi is duet's raw cgo layer: the only package that includes
// Python.h. Everything above it is plain Go.
//
// Each function here makes one cgo crossing that attaches to Python itself
// (see duet.h), so callers need no GIL bookkeeping. Results that own a
// Python reference come back as a Ref; the caller must eventually hand
// every owned Ref it receives to Close or Drain.
//
// # Re-entry
//
// Almost any call into Python can run Python code the caller did not
// write: building an object can run the cycle collector, a decref can run
// __del__ or a weakref callback, PyGObject's marshalling runs overrides,
// and any entry may drain the release queue. That code can call a Go
// callback, which calls back in here on the same thread. So no state may
// be held, per thread or shared, across such a call unless a nested call
// leaves it intact. The places that hold any, and why each is safe:
//
//   - values.c's per-thread scratch buffer (duet_to_vals' encoding): a
//     nested encoding resets it and frees it when large, so ToVals copies
//     the encoding into Go memory of its own before the decoder runs.
//   - ops.c's per-thread text buffer (str, repr, type names): copied into
//     a Go string right after the call, with the thread locked, before
//     anything else runs on it.
//   - A closed slot met while decoding: a private exception (ClosedSlot),
//     which CPython saves and restores around __del__ and friends, not a
//     per-thread flag that a nested decode would clear.
//   - duet_current_cb (the running callback, for provenance) and
//     duet_depth (nested attaches): saved and restored, or counted, by
//     every nesting level.
//   - duet_ring_cur (the crash ring's current entry): a nested crossing
//     moves it, so the outer one's detail may land on the nested entry. A
//     label, never memory: the ring is a static array.
//   - Go's encoders (pygi/encode.go) and ToVals' copies come from pools,
//     one per call in flight; the invoke queue hands each batch over whole
//     before running it.
package capi

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-function
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include "duet.h"
*/
import "C"

import (
	"errors"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Ref mirrors duet_ref: a slot (C memory, never freed) and the generation
// it was issued with. A Ref whose generation is no longer current is stale
// and every operation reports it as Closed.
type Ref struct {
	S   unsafe.Pointer // duet_slot*: C memory
	Gen uint64
}

// Valid reports whether r was ever issued (it may still be stale).
func (r Ref) Valid() bool { return r.S != nil }

// c and goRef reinterpret between the mirrors: sound because the layouts
// are the same (checked at compile time below) and neither holds Go memory.
func (r Ref) c() C.duet_ref { return *(*C.duet_ref)(unsafe.Pointer(&r)) }

func goRef(r C.duet_ref) Ref { return *(*Ref)(unsafe.Pointer(&r)) }

// Val mirrors duet_val (checked by a static assert in duet.c and below).
type Val struct {
	Kind int32
	_    int32
	N    int64 // length, item count, or for KindSlot the generation
	I    int64
	F    float64
	// P is for KindSlot the duet_slot*: C memory, never a Go pointer, so
	// held as an integer. That makes []Val pointer-free for Go: cgo's
	// pointer check has nothing to walk in it (it walks the whole backing
	// array of a slice that may hold pointers, so a pooled encoder's
	// array, grown once by a long list, cost every later call time in
	// proportion), and the garbage collector does not scan it.
	P uintptr
}

// SlotVal encodes a (borrowed) reference to r's object.
func SlotVal(r Ref) Val { return Val{Kind: KindSlot, P: uintptr(r.S), N: int64(r.Gen)} }

// Ref returns the reference a KindSlot value carries. The slot is C memory,
// which never moves: reading the integer back as a pointer is sound.
func (v Val) Ref() Ref { return Ref{S: *(*unsafe.Pointer)(unsafe.Pointer(&v.P)), Gen: uint64(v.N)} }

// Compile-time checks that the Go mirrors agree in size with C (duet.c
// checks the field offsets).
var (
	_ [unsafe.Sizeof(Val{})]byte = [C.sizeof_duet_val]byte{}
	_ [unsafe.Sizeof(Ref{})]byte = [C.sizeof_duet_ref]byte{}
)

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
)

// Status is the outcome of an operation.
type Status int

// Status values, as in duet.h.
const (
	OK     Status = 0  // a new owned Ref was returned
	None   Status = 1  // the result was None; no Ref
	End    Status = 2  // an iterator is exhausted
	Err    Status = -1 // a Python exception; its Ref was returned
	Closed Status = -2 // a Ref involved was stale
	Slow   Status = 3  // Call0 and CallMethod0 only: take the full path (the gate's Enter, then Call)
	True   Status = 4  // Call, Call0 and CallMethod0 only: the result was True; no Ref
	False  Status = 5  // the same for False
)

// cstr, cvals and carena pass Go memory to C for the duration of one call:
// sound because the C side reads it only during the call and keeps no
// pointer to it (cgo's rules for Go memory passed to C), and Val holds no
// Go pointers (see its P field).
func cstr(s string) (*C.char, C.int64_t) {
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.int64_t(len(s))
}

func cvals(v []Val) (*C.duet_val, C.int64_t) {
	return (*C.duet_val)(unsafe.Pointer(unsafe.SliceData(v))), C.int64_t(len(v))
}

func carena(b []byte) *C.char { return (*C.char)(unsafe.Pointer(unsafe.SliceData(b))) }

// Init starts the interpreter on the calling OS thread and releases the GIL
// before returning, whether or not it succeeded. args become sys.argv; venv,
// when not empty, is the python program of a virtual environment to behave
// as (see runtime.c).
func Init(args []string, venv string) error {
	argv := make([]*C.char, len(args)+1)
	for i, a := range args {
		argv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(argv[i]))
	}
	var cvenv *C.char
	if venv != "" {
		cvenv = C.CString(venv)
		defer C.free(unsafe.Pointer(cvenv))
	}
	setGoText()
	// argv's array is Go memory holding C pointers only, read during the call.
	var msg *C.char
	if C.duet_init(C.int(len(args)), unsafe.SliceData(argv), cvenv, &msg) != 0 {
		defer C.free(unsafe.Pointer(msg))
		return errors.New(C.GoString(msg))
	}
	return nil
}

// Finalize runs Py_FinalizeEx. It must run on the thread that called Init,
// with no Python call in flight anywhere. False: flushing buffered data
// (sys.stdout, sys.stderr) failed, and what they held is lost.
func Finalize() bool { return C.duet_finalize() == 0 }

// setGoText tells signals.c where Go's code is, so that faulthandler's
// front can leave faults in Go code (Go's panics) to Go: the range in which
// the runtime finds Go functions, found by bisection from one Go function
// (nil below the first and from the end on).
func setGoText() {
	isGo := func(pc uintptr) bool { return runtime.FuncForPC(pc) != nil }
	pc := reflect.ValueOf(setGoText).Pointer()
	if !isGo(pc) {
		return
	}
	lo, hi := uintptr(0), pc // !isGo(lo), isGo(hi)
	for hi-lo > 1 {
		if m := lo + (hi-lo)/2; isGo(m) {
			hi = m
		} else {
			lo = m
		}
	}
	start := hi
	lo, hi = pc, uintptr(1)<<47 // isGo(lo), !isGo(hi)
	for hi-lo > 1 {
		if m := lo + (hi-lo)/2; isGo(m) {
			lo = m
		} else {
			hi = m
		}
	}
	C.duet_set_go_text(C.uintptr_t(start), C.uintptr_t(hi))
}

// The lifetime gate's word and flags live in C memory (duet.h), so that
// Call0 can enter the gate in its own crossing; internal/lifetime owns
// them and reaches them only through these pointers, with Go's atomics.
// GatePhaseShift and GateReady are how C reads the word.
const (
	GatePhaseShift = C.DUET_GATE_SHIFT
	GateReady      = C.DUET_GATE_READY
)

func GateState() *atomic.Int64    { return (*atomic.Int64)(unsafe.Pointer(&C.duet_gate_state)) }
func GateDirty() *atomic.Bool     { return (*atomic.Bool)(unsafe.Pointer(&C.duet_gate_dirty)) }
func GateUIDirty() *atomic.Bool   { return (*atomic.Bool)(unsafe.Pointer(&C.duet_gate_ui_dirty)) }
func GateUIRunning() *atomic.Bool { return (*atomic.Bool)(unsafe.Pointer(&C.duet_gate_ui_running)) }

// Call0 is Call(r, "", nil, nil, 0, 0) entering the lifetime gate itself
// (duet_call0): a caller gets Slow when it must Enter and use Call. The
// commonest call, and nested in a batch scope the cheapest: no gate count,
// no PyGILState_Ensure, no pointer for cgo to check.
func Call0(r Ref) (Ref, Status, Ref) {
	return res0(C.duet_call0(C.uintptr_t(uintptr(r.S)), C.uint64_t(r.Gen)))
}

// CallMethod0 is Call0 for r.method() (a method path, as Call takes it):
// Call(r, method, nil, nil, 0, 0) entering the gate itself.
func CallMethod0(r Ref, method string) (Ref, Status, Ref) {
	mp, ml := cstr(method)
	return res0(C.duet_callm0(C.uintptr_t(uintptr(r.S)), C.uint64_t(r.Gen), mp, ml))
}

func res0(cr C.duet_res0) (Ref, Status, Ref) {
	st := Status(cr.status)
	if st == Err {
		return Ref{}, st, goRef(cr.ref)
	}
	return goRef(cr.ref), st, Ref{}
}

// ReapPending reports whether threads that ended left Python states to
// delete (a load of a C variable, no cgo call: it is on the entry path).
func ReapPending() bool {
	return atomic.LoadInt32((*int32)(unsafe.Pointer(&C.duet_reap_pending))) != 0
}

// ReapThreads deletes the Python states of threads that ended, on this
// thread (their thread-locals' __del__ run here, Go callbacks included).
func ReapThreads() { C.duet_reap_threads() }

// ThreadStates counts the interpreter's thread states now; ThreadsFreed
// those deleted because their thread ended (for tests and the census).
func ThreadStates() int64 { return int64(C.duet_thread_states()) }
func ThreadsFreed() int64 { return int64(C.duet_threads_freed()) }

// LeakedExceptions counts entries that returned with a Python exception
// still set (a bug of duet's; each was reported as unraisable and cleared).
func LeakedExceptions() int64 { return int64(C.duet_leaked_exceptions()) }

// Attached reports whether a duet scope holds the GIL on the calling OS
// thread: an operation, a batch scope, or a Go callback Python is running.
// It is duet's own per-thread count (see duet_impl.h), which stays right
// when sub-interpreters exist, unlike PyGILState_Check.
func Attached() bool { return C.duet_attached() != 0 }

// InCallback reports whether a Go callback runs on the calling OS thread,
// attached or not (a bare signal handler runs without the GIL).
func InCallback() bool { return C.duet_in_callback() != 0 }

// Nested reports whether the calling OS thread is inside something of
// duet's that is still open: attached, in a Go callback, or detached
// (WithoutGIL) from an entry or callback that has not returned.
func Nested() bool { return C.duet_nested() != 0 }

// MarkFinalizer marks (or unmarks) the calling OS thread as the one that
// runs Finalize's last step; OnFinalizer reports whether it is.
func MarkFinalizer(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.duet_mark_finalizer(v)
}

func OnFinalizer() bool { return C.duet_on_finalizer() != 0 }

// IsMainThread reports whether the calling OS thread is the process's main
// thread.
func IsMainThread() bool { return C.duet_is_main_thread() != 0 }

// PendingException reports whether a Python exception is set on the calling
// thread (attaching for the check), and clears it when clear is true.
func PendingException(clear bool) bool {
	c := C.int(0)
	if clear {
		c = 1
	}
	return C.duet_pending_exception(c) != 0
}

// Attach and Detach bracket a batch scope; the caller must keep its
// goroutine on one OS thread in between.
func Attach() int      { return int(C.duet_attach()) }
func Detach(state int) { C.duet_detach(C.int(state)) }

// Detached is what SaveThread hands to RestoreThread.
type Detached struct {
	ts    unsafe.Pointer // PyThreadState* (C memory, owned by CPython)
	depth C.int
}

// SaveThread detaches the calling thread, which must be Attached;
// RestoreThread attaches it again, on the same thread.
func SaveThread() Detached {
	var d Detached
	d.ts = C.duet_save_thread(&d.depth)
	return d
}

func RestoreThread(d Detached) { C.duet_restore_thread(d.ts, d.depth) }

// WithoutGILBegin is WithoutGIL's one crossing: -1 when a duet scope holds
// the GIL on this thread (Attached: the caller detaches with SaveThread);
// otherwise the lazy handler state it paused, 1 when there was one that
// had not attached (inside WithoutGIL's function its first entry into
// Python does not keep the GIL; see RunLazy), which LazyResume puts back.
func WithoutGILBegin() int { return int(C.duet_without_gil_begin()) }

// LazyResume puts back the lazy state WithoutGILBegin paused.
func LazyResume(was int) { C.duet_lazy_resume(C.int(was)) }

// Close releases r's reference now, if r is current.
func Close(r Ref) { C.duet_close(r.c()) }

// CloseOnUI closes r when called on the UI thread; elsewhere it does
// nothing and returns false (the caller defers the release).
func CloseOnUI(r Ref) bool { return C.duet_close_on_ui(r.c()) == 0 }

// MarkUIThread marks (or unmarks) the calling OS thread as the UI thread.
func MarkUIThread(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.duet_mark_ui_thread(v)
}

// OnUIThread reports whether the calling OS thread is marked as the UI thread.
func OnUIThread() bool { return C.duet_on_ui_thread() != 0 }

// Drain releases each current ref and returns how many were current.
func Drain(refs []Ref) int64 {
	if len(refs) == 0 {
		return 0
	}
	// Sound: Ref mirrors duet_ref, and C reads the slice only during the call.
	return int64(C.duet_drain((*C.duet_ref)(unsafe.Pointer(unsafe.SliceData(refs))), C.int64_t(len(refs))))
}

// res unpacks an operation's outcome.
func res(r C.duet_res) (Ref, Status, Ref) {
	st := Status(r.status)
	if st == Err {
		return Ref{}, st, goRef(r.ref)
	}
	return goRef(r.ref), st, Ref{}
}

// Clone returns a new owned ref to r's object.
func Clone(r Ref) (Ref, Status) {
	out, st, _ := res(C.duet_clone(r.c()))
	return out, st
}

// Refcount returns the object's reference count, or -1 when r is stale.
func Refcount(r Ref) int64 { return int64(C.duet_refcount(r.c())) }

// FromVals builds one Python object from an encoded Go value.
func FromVals(v []Val, arena []byte) (Ref, Status, Ref) {
	cv, n := cvals(v)
	return res(C.duet_from_vals(cv, n, carena(arena)))
}

// ToVals encodes r's object and hands the encoding to use, which runs
// before ToVals returns. vals and arena are Go memory of use's own, valid
// during use (use may call anything, ToVals included). Every KindSlot value
// carries a new owned Ref that use takes over.
func ToVals(r Ref, use func(vals []Val, arena []byte)) (Status, Ref) {
	// The encoding lives in this thread's scratch buffer until the next
	// ToVals on the thread: stay on it while it is copied out. It is copied
	// before use runs because use can run Python code (any entry may drain
	// the release queue, building objects may run the cycle collector, and
	// __del__ may call a Go callback whose arguments are encoded here too),
	// which would reuse or free the scratch buffer under the reader.
	runtime.LockOSThread()
	cr := C.duet_to_vals(r.c())
	_, st, exc := res(cr)
	if st != OK {
		runtime.UnlockOSThread()
		return st, exc
	}
	b := getValBuf()
	// Sound: C memory of this thread's scratch buffer, unchanged until the
	// next duet_to_vals on this (locked) thread, which comes after the copy.
	b.vals = append(b.vals[:0], unsafe.Slice((*Val)(cr.p), int(cr.n))...)
	b.arena = append(b.arena[:0], unsafe.Slice((*byte)(cr.p2), int(cr.n2))...)
	runtime.UnlockOSThread()
	use(b.vals, b.arena)
	putValBuf(b)
	return st, exc
}

// valBufs are ToVals' copies, reused; a nested ToVals gets its own.
var valBufs = sync.Pool{New: func() any { return new(valBuf) }}

type valBuf struct {
	vals  []Val
	arena []byte
}

func getValBuf() *valBuf { return valBufs.Get().(*valBuf) }

func putValBuf(b *valBuf) {
	if cap(b.vals) > 1<<16 || cap(b.arena) > 1<<20 {
		return // a huge one once: let it go
	}
	clear(b.vals) // no refs kept alive in a pooled buffer
	valBufs.Put(b)
}

// Import imports a module by dotted name.
func Import(name string) (Ref, Status, Ref) {
	p, n := cstr(name)
	return res(C.duet_import(p, n))
}

func GetAttr(r Ref, name string) (Ref, Status, Ref) {
	p, n := cstr(name)
	return res(C.duet_getattr(r.c(), p, n))
}

// SetAttr sets name to the value encoded in v.
func SetAttr(r Ref, name string, v []Val, arena []byte) (Status, Ref) {
	p, n := cstr(name)
	cv, nv := cvals(v)
	_, st, exc := res(C.duet_setattr(r.c(), p, n, cv, nv, carena(arena)))
	return st, exc
}

func DelAttr(r Ref, name string) (Status, Ref) {
	p, n := cstr(name)
	_, st, exc := res(C.duet_delattr(r.c(), p, n))
	return st, exc
}

func HasAttr(r Ref, name string) (bool, Status, Ref) {
	p, n := cstr(name)
	cr := C.duet_hasattr(r.c(), p, n)
	_, st, exc := res(cr)
	return cr.n != 0, st, exc
}

// Call calls r's object (or its method named method, when method is not
// empty) with nargs positional values then nkw (name, value) pairs encoded
// in v.
func Call(r Ref, method string, v []Val, arena []byte, nargs, nkw int) (Ref, Status, Ref) {
	var mp *C.char
	var ml C.int64_t
	if method != "" {
		mp, ml = cstr(method)
	}
	cv, nv := cvals(v)
	return res(C.duet_call(r.c(), mp, ml, cv, nv, carena(arena), C.int64_t(nargs), C.int64_t(nkw)))
}

func GetItem(r Ref, key []Val, arena []byte) (Ref, Status, Ref) {
	cv, nv := cvals(key)
	return res(C.duet_getitem(r.c(), cv, nv, carena(arena)))
}

// SetItem: v holds the key then the value.
func SetItem(r Ref, v []Val, arena []byte) (Status, Ref) {
	cv, nv := cvals(v)
	_, st, exc := res(C.duet_setitem(r.c(), cv, nv, carena(arena)))
	return st, exc
}

func DelItem(r Ref, key []Val, arena []byte) (Status, Ref) {
	cv, nv := cvals(key)
	_, st, exc := res(C.duet_delitem(r.c(), cv, nv, carena(arena)))
	return st, exc
}

func Len(r Ref) (int64, Status, Ref) {
	cr := C.duet_len(r.c())
	_, st, exc := res(cr)
	return int64(cr.n), st, exc
}

// Str returns str(r), or repr(r) when repr is true.
func Str(r Ref, repr bool) (string, Status, Ref) {
	rp := C.int(0)
	if repr {
		rp = 1
	}
	runtime.LockOSThread() // the text is per-thread: copy it before moving
	defer runtime.UnlockOSThread()
	cr := C.duet_str(r.c(), rp)
	_, st, exc := res(cr)
	var text string
	if st == OK {
		text = C.GoStringN((*C.char)(cr.p), C.int(cr.n))
	}
	return text, st, exc
}

func TypeName(r Ref) (string, Status) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cr := C.duet_typename(r.c())
	var text string
	if Status(cr.status) == OK {
		text = C.GoStringN((*C.char)(cr.p), C.int(cr.n))
	}
	return text, Status(cr.status)
}

func Truth(r Ref) (bool, Status, Ref) {
	cr := C.duet_truth(r.c())
	_, st, exc := res(cr)
	return cr.n != 0, st, exc
}

func Is(a, b Ref) (bool, Status) {
	cr := C.duet_is(a.c(), b.c())
	return cr.n != 0, Status(cr.status)
}

func IsInstance(r, cls Ref) (bool, Status, Ref) {
	cr := C.duet_isinstance(r.c(), cls.c())
	_, st, exc := res(cr)
	return cr.n != 0, st, exc
}

func Iter(r Ref) (Ref, Status, Ref) { return res(C.duet_iter(r.c())) }

// Next returns the next item (status OK, even for None), End, or Err.
func Next(it Ref) (Ref, Status, Ref) { return res(C.duet_next(it.c())) }

// Run compiles and runs src with globals as both globals and locals. eval
// selects expression mode (the result is returned) over statement mode.
func Run(src, filename string, eval bool, globals Ref) (Ref, Status, Ref) {
	p, n := cstr(src)
	f := C.CString(filename)
	defer C.free(unsafe.Pointer(f))
	mode := C.int(0)
	if eval {
		mode = 1
	}
	return res(C.duet_run(p, n, f, mode, globals.c()))
}

// NewGlobals returns a new dict with __builtins__ set.
func NewGlobals() (Ref, Status) {
	out, st, _ := res(C.duet_new_globals())
	return out, st
}

// SingletonRef returns a new owned ref to None, True or False: which is
// None, True or False.
func SingletonRef(which Status) Ref {
	out, _, _ := res(C.duet_singleton(C.int(which)))
	return out
}

var signalKind atomic.Pointer[func(sig, kind int)]

// SetSignalKindHandler sets what learns, when Python code calls
// signal.signal, what Python now wants for that signal (see signals.c).
func SetSignalKindHandler(f func(sig, kind int)) { signalKind.Store(&f) }

//export duetSignalKind
func duetSignalKind(sig, kind C.int) {
	if f := signalKind.Load(); f != nil {
		(*f)(int(sig), int(kind))
	}
}

var signalRan atomic.Pointer[func(sig int)]

// SetSignalRanHandler sets what learns that a Python signal handler is
// running now (on Python's main thread, GIL held).
func SetSignalRanHandler(f func(sig int)) { signalRan.Store(&f) }

//export duetSignalRan
func duetSignalRan(sig C.int) {
	if f := signalRan.Load(); f != nil {
		(*f)(int(sig))
	}
}

// SignalInterrupt hands a signal to Python, as if it had arrived (any
// thread, no GIL needed).
func SignalInterrupt(sig int) { C.duet_signal_interrupt(C.int(sig)) }

// FaultDump writes the tracebacks faulthandler.register asked for sig to
// its file (any thread, no GIL).
func FaultDump(sig int) { C.duet_fault_dump(C.int(sig)) }

// PythonMainIsUI reports whether Python's main thread, where its signal
// handlers run, is the process's main thread (Python started there).
func PythonMainIsUI() bool { return C.duet_python_main_is_process_main() != 0 }

// CheckSignals runs the Python handlers of signals that have arrived, on
// Python's main thread; Err carries what a handler raised.
func CheckSignals() (Status, Ref) {
	_, st, exc := res(C.duet_check_signals())
	return st, exc
}
