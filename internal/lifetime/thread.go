package lifetime

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
)

// ErrNotMain is returned by every function GTK allows only on the UI thread
// when it is called from elsewhere (rule 6); eventloop exports it.
var ErrNotMain = errors.New("duet: must be called on the UI (main) thread, not from a goroutine: use eventloop.Invoke or InvokeWait")

// IsMain reports whether the caller runs on the process's main OS thread,
// the UI thread. Only meaningful for a goroutine locked to its thread (main
// is; so is everything the loop runs).
func IsMain() bool { return capi.IsMainThread() }

// RequireMain returns nil on the UI thread and an error wrapping ErrNotMain
// naming what elsewhere.
func RequireMain(what string) error {
	if capi.IsMainThread() {
		return nil
	}
	return fmt.Errorf("%s: %w", what, ErrNotMain)
}

// ui is what the running loop registered.
var ui struct {
	running  *atomic.Bool                       // the loop runs (C memory, see init): collections on the UI thread, OnUI hops there
	claimed  atomic.Bool                        // a loop is starting or runs: Finalize is refused (ClaimLoop)
	confined atomic.Bool                        // a loop has run: releases on the UI thread only, from then on
	exec     atomic.Pointer[func(func()) error] // runs a function on the UI thread and waits
	post     atomic.Pointer[func(func())]       // runs a function on the UI thread, later
	onDirty  atomic.Pointer[func()]             // schedules a drain on the loop
}

// LoopStarted is called by the event loop, on the UI thread, when it starts
// running: exec runs a function on the loop and waits for it (an error when
// it cannot); post queues a function for the loop without waiting, to run
// there exactly once even if the loop stops first (see PostUI); onDirty
// schedules a drain of the release queue on the loop.
func LoopStarted(exec func(func()) error, post func(func()), onDirty func()) {
	capi.MarkUIThread(true)
	ui.exec.Store(&exec)
	ui.post.Store(&post)
	ui.onDirty.Store(&onDirty)
	ui.confined.Store(true)
	ui.running.Store(true)
}

// LoopStopped undoes LoopStarted, on the UI thread, once the loop has
// returned. Releases stay confined to the UI thread: GTK objects made while
// the loop ran live on, and the last reference to one's wrapper may be
// dropped on a goroutine during the app's shutdown; the UI thread (and
// Finalize) drain what is queued.
func LoopStopped() {
	ui.running.Store(false)
	ui.onDirty.Store(nil)
	ui.exec.Store(nil)
	ui.post.Store(nil)
}

// LoopRunning reports whether the event loop runs.
func LoopRunning() bool { return ui.running.Load() }

// ClaimLoop is called by the event loop as it begins, before it touches
// Python: the loop and Finalize exclude each other. A Finalize under way
// (it may have passed its own check before this loop began, and reopens
// the gate while Python's threads end) refuses the loop; a loop claimed
// refuses Finalize (ErrLoopRunning). Each sets its own flag, then reads
// the other's, so that at least one of two that race sees the other. Every
// nil return is paired with UnclaimLoop, when the loop has returned.
func ClaimLoop() error {
	ui.claimed.Store(true)
	if gate.finalizing.Load() {
		ui.claimed.Store(false)
		return errFinalizeUnderWay
	}
	return nil
}

// UnclaimLoop ends ClaimLoop's claim.
func UnclaimLoop() { ui.claimed.Store(false) }

// errFinalizeUnderWay refuses a loop that begins while Finalize runs: it
// cannot wait for the outcome (Python's threads that Finalize waits for
// may be waiting for the loop).
var errFinalizeUnderWay = fmt.Errorf("eventloop: a Finalize is under way, the loop cannot start: %w", ErrFinalized)

// OnUI runs fn on the UI thread and returns its error: here when this is
// the UI thread or no loop runs (then there is no confinement to keep),
// otherwise through the loop. fn must not wait for the caller.
func OnUI(fn func() error) error {
	if !ui.running.Load() || capi.OnUIThread() {
		return fn()
	}
	exec := ui.exec.Load()
	if exec == nil {
		return fn() // the loop stopped in between
	}
	var err error
	if xerr := (*exec)(func() { err = fn() }); xerr != nil {
		return xerr
	}
	return err
}

// PostUI runs fn on the UI thread once, without waiting for it: queued
// behind the Invokes made before it when the loop runs (and run as the loop
// stops if it stops first), here when no loop runs. For what completes work
// that nobody waits for on this side: the caller goes on, and no wake-up of
// the caller is owed when fn has run.
func PostUI(fn func()) {
	if ui.running.Load() {
		if post := ui.post.Load(); post != nil {
			(*post)(fn)
			return
		}
	}
	fn()
}

// ---- error causes ---------------------------------------------------------------

var errorCause atomic.Pointer[func(capi.Ref) error]

// SetErrorCause registers the function that finds the Go error a Python
// exception carries (package callbacks raises such exceptions). It runs
// inside an entry, with exc borrowed.
func SetErrorCause(f func(exc capi.Ref) error) { errorCause.Store(&f) }

// ErrorCause returns the Go error exc carries, or nil.
func ErrorCause(exc capi.Ref) error {
	if f := errorCause.Load(); f != nil {
		return (*f)(exc)
	}
	return nil
}

// FlushContext dispatches whatever the default main context has ready,
// without blocking, at most max times, and returns how many iterations
// dispatched something. UI thread only, while no loop runs: app uses it
// during shutdown, so that destroyed widgets finish disposing while Python
// is still alive.
func FlushContext(max int) (int, error) {
	if err := RequireMain("flushing the main context"); err != nil {
		return 0, err
	}
	if LoopRunning() {
		return 0, errors.New("duet: the loop is running; it dispatches by itself")
	}
	n := 0
	for n < max && capi.LoopIterate(false) {
		n++
	}
	return n, nil
}

var timerCanceller atomic.Pointer[func()]

// SetTimerCanceller sets what cancels every scheduled timer (package
// eventloop).
func SetTimerCanceller(f func()) {
	if f == nil {
		timerCanceller.Store(nil)
		return
	}
	timerCanceller.Store(&f)
}

// CancelTimers cancels every timer still scheduled; app calls it during
// shutdown, before Python goes away.
func CancelTimers() {
	if f := timerCanceller.Load(); f != nil {
		(*f)()
	}
}
