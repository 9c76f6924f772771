package capi

/*
#cgo pkg-config: glib-2.0
#include "loop.h"
#include "duet.h"
*/
import "C"

import (
	"sync/atomic"
	"time"
	"unsafe"
)

var (
	loopDispatch atomic.Pointer[func(heldBack time.Duration) bool]
	timerFire    atomic.Pointer[func(uintptr) bool]
)

// SetLoopHandlers installs the Go side of the event loop's sources: dispatch
// runs a batch of queued invocations and says whether some are left for the
// next turn, fire runs a timer and says whether it repeats. dispatch's
// heldBack is how long sources at a higher priority kept a backlog from
// running before this turn, when they kept it past its bounded wait (0
// otherwise: see loop.c).
func SetLoopHandlers(dispatch func(heldBack time.Duration) bool, fire func(uintptr) bool) {
	loopDispatch.Store(&dispatch)
	timerFire.Store(&fire)
}

//export duetLoopDispatch
func duetLoopDispatch(heldBackUS C.longlong) C.int {
	if f := loopDispatch.Load(); f != nil && (*f)(time.Duration(heldBackUS)*time.Microsecond) {
		return 1
	}
	return 0
}

//export duetTimerFire
func duetTimerFire(handle C.uintptr_t) C.int {
	if f := timerFire.Load(); f != nil && (*f)(uintptr(handle)) {
		return 1
	}
	return 0
}

// LoopSetup attaches the invoke source to the default main context (once).
func LoopSetup() { C.duet_loop_setup() }

// LoopAllowNested says whether what runs now, inside the invoke source's
// dispatch, may run a nested main loop that dispatches Invokes (an async
// settle's resumed task may), and returns the previous setting, to be put
// back. Elsewhere it does nothing (and returns false).
func LoopAllowNested(on bool) bool {
	v := C.int(0)
	if on {
		v = 1
	}
	return C.duet_loop_allow_nested(v) != 0
}

// LoopWrapPoll puts the loop's spin (LoopExpect) around the default
// context's poll (on), or gives the context back its own poll (off); the
// UI thread, around a run of the loop.
func LoopWrapPoll(on bool) {
	c := C.int(0)
	if on {
		c = 1
	}
	C.duet_loop_wrap_poll(c)
}

// LoopPost makes the invoke source dispatch soon; safe from any thread.
func LoopPost() { C.duet_loop_post() }

// LoopExpect says, on the UI thread, that an async Go call has just started
// whose completion is an Invoke: the loop spins for it a short, bounded
// while before sleeping in poll (see loop.c).
func LoopExpect() { C.duet_loop_expect() }

// SpinStats counts the loop's spins before poll: those that found a post,
// those that ended with none, and the posts that needed no wake-up because
// the loop was spinning.
func SpinStats() (found, empty, unwoken int) {
	var f, e, u C.int
	C.duet_loop_spin_stats(&f, &e, &u)
	return int(f), int(e), int(u)
}

// A Parker decides, between a goroutine waiting for a wake and its waker,
// whether the wake found it spinning (in C: no scheduler involved) or
// asleep (then the waker wakes it in Go). See loop.c.
type Parker struct{ p unsafe.Pointer } // C memory

func NewParker() Parker { return Parker{C.duet_parker_new()} }

// Free releases the parker; nobody may use it after (a waker whose Wake
// has returned no longer does).
func (p Parker) Free() { C.duet_parker_free(p.p) }

// Arm says the goroutine is about to wait: from now, a Wake may come.
func (p Parker) Arm() { C.duet_park_arm(p.p) }

// Spin waits a few tens of microseconds for a Wake: true when one came,
// false when none did and the goroutine must now wait in Go for its waker.
func (p Parker) Spin() bool { return C.duet_park_spin(p.p) != 0 }

// Wake wakes the armed goroutine: true when it was spinning and has the
// wake, false when it waits in Go (the caller wakes it there).
func (p Parker) Wake() bool { return C.duet_park_wake(p.p) != 0 }

// LoopPollWrapped reports whether the default context polls through
// duet's spin (loop.c), wrapping another poll than itself.
func LoopPollWrapped() bool { return C.duet_loop_poll_wrapped() != 0 }

// MultiCPU reports whether the loop's and the starters' spins are on: with
// one CPU they would take the CPU that what they wait for needs.
func MultiCPU() bool { return C.duet_multi_cpu() != 0 }

// ParkStats counts the wakes starters took while spinning, and those of
// starters asleep (woken in Go).
func ParkStats() (spun, slept int) {
	var s, w C.int
	C.duet_park_stats(&s, &w)
	return int(s), int(w)
}

// A MainLoop is a GMainLoop on the default context.
type MainLoop struct{ p unsafe.Pointer } // GMainLoop*: C memory

func NewMainLoop() MainLoop          { return MainLoop{C.duet_loop_new()} }
func (l MainLoop) Run()              { C.duet_loop_run(l.p) }
func (l MainLoop) Quit()             { C.duet_loop_quit(l.p) }
func (l MainLoop) Unref()            { C.duet_loop_unref(l.p) }
func LoopIterate(mayBlock bool) bool { return C.duet_loop_iterate(cbool(mayBlock)) != 0 }

// LoopOwnDefault makes the calling thread the owner of the default main
// context for the rest of the process (see loop.c); false when another
// thread owns it.
func LoopOwnDefault() bool { return C.duet_loop_own_default() != 0 }

// LoopIsOwner reports whether the calling thread owns the default context
// (it is running or iterating it).
func LoopIsOwner() bool { return C.duet_loop_is_owner() != 0 }

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// NewTimer attaches a timeout source firing every interval milliseconds;
// the returned GSource reference belongs to the caller (ReleaseTimer).
func NewTimer(handle uintptr, intervalMs uint64) unsafe.Pointer {
	return C.duet_timer_new(C.uintptr_t(handle), C.uint64_t(intervalMs))
}

// ReleaseTimer removes the source (if still attached) and drops the
// caller's reference.
func ReleaseTimer(src unsafe.Pointer) { C.duet_timer_release(src) }

var gcDispatch atomic.Pointer[func()]

// SetGCHandler sets what runs, on the UI thread, when Python's collector is
// due while the loop runs (see gcstate.c).
func SetGCHandler(f func()) {
	if f == nil {
		gcDispatch.Store(nil)
		return
	}
	gcDispatch.Store(&f)
}

//export duetGCDispatch
func duetGCDispatch() {
	if f := gcDispatch.Load(); f != nil {
		(*f)()
	}
}

// GCLoop tells gcstate.c that the loop starts (true) or stops (false)
// collecting; UI thread, Python initialised.
func GCLoop(on bool) { C.duet_gc_loop(cbool(on)) }

// GCSetWanted records whether Python code wants the collector on
// (gc.enable/gc.disable while the loop runs).
func GCSetWanted(on bool) { C.duet_gc_set_wanted(cbool(on)) }

// GCDue returns the generation the loop is to collect now, or -1: by
// CPython's rule, or the young collection that follows one while Python
// threads live (see gcstate.c). UI thread.
func GCDue() int { return int(C.duet_gc_due_ui()) }

// GCCollected tells gcstate.c how many objects the loop's collection
// freed. UI thread.
func GCCollected(freed int64) { C.duet_gc_collected(C.int64_t(freed)) }

var glibLog atomic.Pointer[func(level int, domain, message, file, line, fn string)]

// SetGLibLogHandler sets where GLib's log messages go while routed.
func SetGLibLogHandler(f func(level int, domain, message, file, line, fn string)) { glibLog.Store(&f) }

//export duetGLibLog
func duetGLibLog(level C.int, domain, message, file, line, fn *C.char) {
	if f := glibLog.Load(); f != nil {
		(*f)(int(level), C.GoString(domain), C.GoString(message), C.GoString(file), C.GoString(line), C.GoString(fn))
	}
}

// LogWriterIsGotk4 reports whether gotk4's glib package set GLib's log
// writer (it sends messages to slog.Default()).
func LogWriterIsGotk4() bool { return C.duet_log_gotk4() != 0 }

// FatalCriticals makes GLib and GTK criticals abort the process, as
// G_DEBUG=fatal-criticals does.
func FatalCriticals() { C.duet_fatal_criticals() }

// LogInstall sets duet's GLib log writer, once, unless gotk4's is linked in.
func LogInstall() { C.duet_log_install() }

// LogRoute sends GLib's messages to the handler (true) or to stderr.
func LogRoute(on bool) { C.duet_log_route(cbool(on)) }
