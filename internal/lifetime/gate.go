package lifetime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/internal/capi"
)

// Phase is where the interpreter is in its life (rule 1).
type Phase int32

// Phases, in order.
const (
	New        Phase = iota // not started
	Ready                   // running and open
	Closing                 // Finalize waits for the calls in flight
	Finalizing              // Py_FinalizeEx runs; nothing comes back from here
	Finalized               // gone
	Failed                  // start-up failed
)

func (p Phase) String() string {
	switch p {
	case New:
		return "new"
	case Ready:
		return "ready"
	case Closing:
		return "closing"
	case Finalizing:
		return "finalizing"
	case Finalized:
		return "finalized"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Phase(%d)", int32(p))
}

// Errors of the gate; pygi exports them under the same names.
var (
	ErrFinalized    = errors.New("pygi: Python is finalized")
	ErrLoopRunning  = errors.New("pygi: Finalize while the event loop runs: quit the loop first; app.Run and looptest.Main finalise after their loop returns")
	ErrInsideCall   = errors.New("pygi: Finalize called from inside a Python call or Do scope")
	ErrFlushFailed  = errors.New("pygi: Python was finalised, but flushing sys.stdout or sys.stderr failed: buffered output was lost")
	ErrFinalizeBusy = errors.New("pygi: Finalize on Python's own thread while another Finalize runs: that one needs this thread, so this one cannot wait for it")
)

// gate is the interpreter's phase and the number of entries in flight, in
// one word (rule 2): the phase in the top byte, the count below. The word
// is C memory (capi.GateState), so that capi.Call0 can count an entry in
// the crossing it makes anyway (see duet_call0 for its rules).
var gate struct {
	state   *atomic.Int64
	changed atomic.Pointer[chan struct{}] // closed when a Closing phase ends
	// finalizing is set while a Finalize holds the lock and a loop could
	// still be refused (see ClaimLoop).
	finalizing atomic.Bool

	// lock serialises Start and Finalize: a channel of one, not a mutex,
	// so that a Finalize queued behind another still ends with its ctx.
	lock    chan struct{}
	starter func() error
	initErr error
}

const phaseShift = capi.GatePhaseShift

// The gate's word and the flags an entry reads are C memory, which C's
// fast entry reads too (capi.Call0).
func init() {
	gate.lock = make(chan struct{}, 1)
	gate.state = capi.GateState()
	releases.dirty = capi.GateDirty()
	releases.uiDirty = capi.GateUIDirty()
	ui.running = capi.GateUIRunning()
}

func phaseOf(s int64) Phase { return Phase(s >> phaseShift) }
func countOf(s int64) int64 { return s & (1<<phaseShift - 1) }

// Current returns the phase now.
func Current() Phase { return phaseOf(gate.state.Load()) }

// FinalizeUnderWay reports whether a Finalize holds the lock now (it may
// still give up).
func FinalizeUnderWay() bool { return gate.finalizing.Load() }

// InFlight returns the number of entries in flight.
func InFlight() int64 { return countOf(gate.state.Load()) }

// move changes the phase from one value to another, keeping the count;
// false when the phase was not from.
func move(from, to Phase) bool {
	for {
		s := gate.state.Load()
		if phaseOf(s) != from {
			return false
		}
		if gate.state.CompareAndSwap(s, s+int64(to-from)<<phaseShift) {
			return true
		}
	}
}

// SetStarter registers the function that starts the interpreter (pygi's).
// It runs under the gate's lock, at most once successfully.
func SetStarter(start func() error) { gate.starter = start }

// Start starts the interpreter unless it runs already; concurrent callers
// wait for the one start.
func Start() error {
	switch Current() {
	case Ready:
		return nil
	case Closing, Finalizing, Finalized:
		return ErrFinalized
	}
	gate.lock <- struct{}{}
	defer func() { <-gate.lock }()
	switch Current() {
	case Ready:
		return nil
	case Closing, Finalizing, Finalized:
		return ErrFinalized
	case Failed:
		return gate.initErr
	}
	if err := gate.starter(); err != nil {
		gate.initErr = err
		move(New, Failed)
		return err
	}
	move(New, Ready)
	return nil
}

// Enter opens an entry into Python (rules 2 and 3): it starts Python on
// first use, waits while Finalize is deciding, refuses entries once Python
// is being finalised, and drains released references when no loop runs.
// Every nil return must be paired with Exit.
func Enter() error {
	s := gate.state.Add(1)
	if phaseOf(s) != Ready {
		if err := enterSlow(s); err != nil {
			return err
		}
	}
	// While the loop runs, it drains the queue itself, on the UI thread.
	// After it (the loop ran, and returned), any entry drains what it may
	// (drain decides), and one on the UI thread what waits for it too.
	if releases.dirty.Load() || capi.ReapPending() || releases.uiDirty.Load() && capi.OnUIThread() {
		if !ui.running.Load() { // running implies confined
			drain()
		}
	}
	return nil
}

// Exit closes an entry.
func Exit() { gate.state.Add(-1) }

// TryEnter opens an entry only when it needs no waiting: Python is ready
// and Finalize is not deciding. What may run inside another entry without
// knowing it (a release, which Finalize's own queue can take instead) uses
// it: entering there would wait for a Finalize that waits for the entry
// around it. Every true return must be paired with Exit.
func TryEnter() bool {
	if s := gate.state.Add(1); phaseOf(s) == Ready {
		return true
	}
	gate.state.Add(-1)
	return false
}

// EnterNested opens an entry for Go code that runs without the GIL (a bare
// signal handler), whose caller knows whether it is nested in an entry or
// callback of this thread (or detached from one): as Enter (a nested entry
// goes in while Finalize decides; another waits for the outcome; once
// Finalize runs its last step, only one nested there goes in), but it
// drains nothing and starts nothing. Every nil return must be paired with
// Exit.
func EnterNested(nested bool) error {
	for {
		s := gate.state.Add(1)
		switch phaseOf(s) {
		case Ready:
			return nil
		case Closing:
			if nested {
				return nil // what it is nested in is counted: Finalize waits for both
			}
			gate.state.Add(-1)
			waitChange()
		case Finalizing:
			// Finalize no longer waits for entries: only Go code nested in
			// its own last step (a __del__ or atexit function calling
			// Go, a widget's dispose emitting) may still run. Nested in a
			// Go callback of a Python thread elsewhere, the handler would
			// outlive the interpreter.
			if nested && capi.OnFinalizer() {
				return nil
			}
			gate.state.Add(-1)
			return ErrFinalized
		default:
			gate.state.Add(-1)
			return ErrFinalized
		}
	}
}

// enterSlow handles an entry that found the phase other than Ready; the
// caller's increment is already in s.
func enterSlow(s int64) error {
	for {
		switch phaseOf(s) {
		case Ready:
			return nil
		case Closing:
			if capi.Nested() {
				// Nested in something in flight (rule 3), attached or
				// detached from it (WithoutGIL): a bare handler is an entry.
				return nil
			}
			gate.state.Add(-1)
			waitChange()
		case Finalizing:
			if capi.Attached() {
				return nil
			}
			gate.state.Add(-1)
			return ErrFinalized
		case Finalized:
			gate.state.Add(-1)
			return ErrFinalized
		case New, Failed:
			gate.state.Add(-1)
			if err := Start(); err != nil {
				return err
			}
		}
		s = gate.state.Add(1)
	}
}

// waitChange waits until the current Closing phase ends (or returns at once
// when it has ended already).
func waitChange() {
	ch := gate.changed.Load()
	if ch != nil && Current() == Closing {
		<-*ch
	}
}

// Finalize runs the interpreter's end (rules 2, 3 and 7): Ready to
// Closing; waits until nothing is in flight; then, the gate open again,
// takes the thread choose gives (reserve: waiting, while ctx lasts, for
// what runs there now) and runs on it, attached, threading's shutdown
// (the hook pygi registers: Python's non-daemon threads, which may still
// call Go); then Closing again, and the move to Finalizing at a moment
// when nothing is in flight; runs finish (the release queue, AtFinalize
// hooks, Py_FinalizeEx) on the same thread, and the phase becomes
// Finalized. When ctx ends first, the phase goes back to Ready and the
// error says what held it up. Never started: Finalized at once.
//
// The thread is chosen (choose) under the lock, once Python's phase is
// settled: a Finalize that waited for Python's start, or for another
// Finalize that gave up, decides from where Python now lives, not from
// what it saw before it held the lock. choose's error is returned as is.
// The thread is taken with the gate open, never while Closing: what runs
// there (a signal handler posted to Python's thread) may be waiting to
// enter, and would wait for the Finalize that waits for it.
//
// Queued behind another Finalize (or a start), it waits for the lock while
// ctx lasts; with mustNotQueue (the caller is on the thread the one
// holding the lock may need) it does not wait while that one may still
// need it (ErrFinalizeBusy).
func Finalize(ctx context.Context, mustNotQueue bool, choose func() (reserve Reserve, err error)) error {
	select {
	case gate.lock <- struct{}{}:
	default:
		// Once Python is gone, or its last step has run (that step runs on
		// the caller's thread, and the caller is not inside it), the holder
		// needs the thread no more: waiting is safe.
		if p := Current(); mustNotQueue && p != Finalized && (p != Finalizing || capi.OnFinalizer()) {
			return ErrFinalizeBusy
		}
		select {
		case gate.lock <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("pygi: Finalize gave up waiting for another Finalize (or Python's start) to end: %w", ctx.Err())
		}
	}
	defer func() { <-gate.lock }()
	gate.finalizing.Store(true)
	defer gate.finalizing.Store(false)
	if ui.claimed.Load() {
		return ErrLoopRunning
	}
	switch Current() {
	case New, Failed:
		move(New, Finalized)
		move(Failed, Finalized)
		return nil
	case Finalized:
		return nil
	}
	reserve, err := choose()
	if err != nil {
		return err
	}
	var endClosing func()
	closeGate := func() bool {
		ch := make(chan struct{})
		gate.changed.Store(&ch)
		endClosing = func() { close(ch) }
		return move(Ready, Closing)
	}
	if !closeGate() {
		return fmt.Errorf("pygi: Finalize in phase %v", Current())
	}
	giveUp := func(err error) error {
		move(Closing, Ready)
		endClosing()
		return err
	}
	waitIdle := func(final bool) error {
		for backoff := time.Microsecond; ; {
			if final && gate.state.CompareAndSwap(int64(Closing)<<phaseShift, int64(Finalizing)<<phaseShift) {
				return nil
			}
			if !final && InFlight() == 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return giveUp(fmt.Errorf("pygi: Finalize gave up waiting for %d calls in flight: %w", InFlight(), ctx.Err()))
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Millisecond)
		}
	}
	if err := waitIdle(false); err != nil {
		return err
	}
	// The gate open again: threading's shutdown, as python3 runs it at
	// exit, lets Python's threads, the Go code they call and what that
	// starts use Python freely (Go code waiting on the gate while a thread
	// waits for it would never end); and the thread is taken now, not
	// while Closing (see above). The calls in flight before (a long one
	// holding the GIL in C, say) have ended.
	move(Closing, Ready)
	endClosing()
	run, release, err := reserve(ctx)
	if err != nil {
		return err
	}
	defer release()
	if f := threadShutdown.Load(); f != nil {
		run(func() {
			st := capi.Attach()
			defer capi.Detach(st)
			err = (*f)(ctx)
		})
		if err != nil {
			return err
		}
	}
	if !closeGate() {
		return fmt.Errorf("pygi: Finalize in phase %v", Current())
	}
	if err := waitIdle(true); err != nil {
		return err
	}
	endClosing()
	flushed := true
	run(func() {
		capi.MarkFinalizer(true)
		defer capi.MarkFinalizer(false)
		drain() // nothing unattached is in flight: Finalize waited for it
		runAtFinalize()
		drain()
		flushed = capi.Finalize()
	})
	move(Finalizing, Finalized)
	pythonSignalsGone()
	if !flushed {
		return ErrFlushFailed
	}
	return nil
}

// Reserve takes the thread that finalises, waiting while ctx lasts for what
// runs there; run runs a function there and waits for it; release lets the
// thread go. Finalize calls it once, and release once after its last run.
type Reserve func(ctx context.Context) (run func(func()), release func(), err error)

var threadShutdown atomic.Pointer[func(context.Context) error]

// SetThreadShutdown registers threading's bounded shutdown (pygi's), run
// by Finalize once no Go call is in flight.
func SetThreadShutdown(f func(context.Context) error) { threadShutdown.Store(&f) }

var atFinalize struct {
	mu  sync.Mutex
	fns []func()
}

// AtFinalize registers fn to run just before Py_FinalizeEx, on the thread
// that finalises, attached, with Python still whole: where duet's packages
// take back what they installed in objects that outlive the interpreter
// (a handler on a GTK list that lives for the process, say), so that no
// Python code stays reachable from them. The last registered runs first;
// each runs once, for this interpreter.
func AtFinalize(fn func()) {
	atFinalize.mu.Lock()
	atFinalize.fns = append(atFinalize.fns, fn)
	atFinalize.mu.Unlock()
}

func runAtFinalize() {
	atFinalize.mu.Lock()
	fns := atFinalize.fns
	atFinalize.fns = nil
	atFinalize.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	st := capi.Attach()
	defer capi.Detach(st)
	for i := len(fns) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if p := recover(); p != nil {
					fmt.Fprintf(os.Stderr, "duet: before finalising Python: panic: %v\n", p)
				}
			}()
			fns[i]()
		}()
	}
}
