package eventloop

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// SignalError reports that a signal ended the loop (SIGINT or SIGTERM with
// Python's default disposition, or Python's handler raising
// KeyboardInterrupt).
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "eventloop: quit on " + e.Signal.String() }

// The grace a signal gives the UI thread: after a signal, the UI thread must
// come back (run the signal's Python handler, or finish the loop for the
// ordered shutdown) within it, or the process ends.
var signalGrace atomic.Int64

func init() { signalGrace.Store(int64(3 * time.Second)) }

// SetSignalGrace sets how long the UI thread has, after SIGINT or SIGTERM,
// to come back before the process ends with 128+n; it returns the previous
// value (default 3 s).
func SetSignalGrace(d time.Duration) time.Duration { return time.Duration(signalGrace.Swap(int64(d))) }

// signalHandling is the running loop's signal policy (internal/lifetime,
// rule 8). Each signal Python handles is handed to Python as if it had
// arrived, and its handler is then run on the UI thread if no Python code
// there ran it first: SIGINT's default handler raises KeyboardInterrupt,
// which starts the ordered shutdown; a handler of Python code's own does
// what it does. A signal whose Python disposition is the default starts
// the ordered shutdown directly. Meanwhile the UI thread has the grace to
// come back; a second signal before it has ends the process at once.
type signalHandling struct {
	stop func(error)

	mu       sync.Mutex
	waiting  syscall.Signal // a signal whose handling the UI thread has not reached yet
	quitting syscall.Signal // the signal that started the ordered shutdown
	timer    *time.Timer
	returned bool
}

func (h *signalHandling) onSignal(sig syscall.Signal, kind lifetime.SignalKind) {
	if kind == lifetime.SignalIgnored {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.returned {
		exitNow(sig, "after the loop ended")
	}
	if h.waiting != 0 || h.quitting != 0 {
		exitNow(sig, "again before the UI thread came back")
	}
	h.arm(sig)
	if kind == lifetime.SignalDefaultInt && !capi.PythonMainIsUI() {
		// Python started off the main thread: its handlers run there, not
		// on the loop, so the KeyboardInterrupt has nowhere to go. Quit.
		kind = lifetime.SignalDefault
	}
	if kind == lifetime.SignalDefault {
		h.quitting = sig
		go h.stop(&SignalError{Signal: sig})
		return
	}
	h.waiting = sig
	capi.SignalInterrupt(int(sig))
	if !capi.PythonMainIsUI() && lifetime.OnPythonMain(func() { h.runHandler(sig) }) {
		return
	}
	Invoke(func() { h.runHandler(sig) })
}

// arm starts the grace period. Called with h.mu held.
func (h *signalHandling) arm(sig syscall.Signal) {
	if h.timer != nil {
		h.timer.Stop()
	}
	h.timer = time.AfterFunc(time.Duration(signalGrace.Load()), func() {
		exitNow(sig, fmt.Sprintf("and the UI thread did not come back within %v", time.Duration(signalGrace.Load())))
	})
}

// runHandler runs on Python's main thread (the UI thread, normally):
// Python's pending handler, if Python code running there has not run it
// already.
func (h *signalHandling) runHandler(sig syscall.Signal) {
	err := runPythonSignalHandlers()
	h.mu.Lock()
	h.waiting = 0
	if h.quitting == 0 && h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	var pe *pygi.Error
	switch {
	case err == nil:
	case errors.As(err, &pe) && (pe.Matches("KeyboardInterrupt") || pe.Matches("SystemExit")):
		h.quit(sig, err)
	default:
		reportHandlerError(err)
	}
}

// quit starts the ordered shutdown because Python said so.
func (h *signalHandling) quit(sig syscall.Signal, err error) {
	h.mu.Lock()
	if h.quitting == 0 {
		h.quitting = sig
		h.arm(sig)
	}
	h.mu.Unlock()
	var pe *pygi.Error
	if errors.As(err, &pe) && pe.Matches("SystemExit") {
		h.stop(err)
		return
	}
	h.stop(&SignalError{Signal: sig})
}

func (h *signalHandling) loopReturned() {
	h.mu.Lock()
	h.returned = true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
}

// keyboardInterrupt is told that KeyboardInterrupt escaped Python code on
// the loop (a handler interrupted by SIGINT, say): as in a python3 GTK app,
// the app quits.
func keyboardInterrupt() {
	state.mu.Lock()
	h := state.signals
	state.mu.Unlock()
	if h != nil {
		h.quit(syscall.SIGINT, nil)
	}
}

// runPythonSignalHandlers runs the Python handlers of signals that have
// arrived (PyErr_CheckSignals), on Python's main thread.
func runPythonSignalHandlers() error {
	if err := lifetime.Enter(); err != nil {
		return err
	}
	defer lifetime.Exit()
	if st, exc := capi.CheckSignals(); st == capi.Err {
		return bridge.NewError(exc)
	}
	return nil
}

func exitNow(sig syscall.Signal, why string) {
	fmt.Fprintf(os.Stderr, "duet: %v %s: exiting\n", sig, why)
	os.Exit(128 + int(sig))
}

func reportHandlerError(err error) {
	var pe *pygi.Error
	if errors.As(err, &pe) && deliverPython(pe) {
		return
	}
	fmt.Fprintln(os.Stderr, "eventloop: Python signal handler:", err)
}
