package eventloop

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/pygi"
)

// SignalError reports that a signal ended the loop (SIGINT or SIGTERM with
// Python's default disposition, or a KeyboardInterrupt raised by SIGINT).
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "eventloop: quit on " + e.Signal.String() }

// Option changes how Run and Drive run the loop.
type Option func(*config)

type config struct {
	hostSignals  bool
	signalGrace  time.Duration // after SIGINT or SIGTERM, for the UI thread to come back
	asyncioGrace time.Duration // for the asyncio tasks the loop's end cancels
}

func newConfig(opts []Option) config {
	c := config{signalGrace: 3 * time.Second, asyncioGrace: 2 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// SignalGrace sets how long the UI thread has, after SIGINT or SIGTERM, to
// come back (run the signal's Python handler, or end the loop for the
// ordered shutdown) before duet hands the signal back to the process (see
// "Signals" in the package doc). Default 3 s.
func SignalGrace(d time.Duration) Option { return func(c *config) { c.signalGrace = d } }

// AsyncioGrace bounds how long the loop's end waits for the asyncio tasks
// it cancels (and the default executor) to finish. Default 2 s.
func AsyncioGrace(d time.Duration) Option { return func(c *config) { c.asyncioGrace = d } }

// HostSignals leaves SIGINT and SIGTERM to the program: the loop does not
// subscribe to them, so they do what the program makes them do (its own
// signal.Notify or signal.NotifyContext, whose context it can give to Run;
// without one they end the process). Python handlers for them still run.
func HostSignals() Option { return func(c *config) { c.hostSignals = true } }

// loopSignals are the signals the loop owns while it runs: the ordered
// shutdown. One the process started with ignored (nohup, a background
// job) stays ignored, as python3 leaves it.
func loopSignals(c config) []syscall.Signal {
	if c.hostSignals {
		return nil
	}
	var out []syscall.Signal
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

// signalHandling is the running loop's signal policy (internal/lifetime,
// rule 8). Each arrival goes to Python as if it had arrived, and its
// handler then runs on the UI thread if no Python code there ran it first.
// For the signals the loop owns (SIGINT, SIGTERM): SIGINT's default
// handler raises KeyboardInterrupt, which quits the loop wherever it comes
// out into Go; a SIG_DFL disposition starts the ordered shutdown at once;
// a Python handler of its own does what it does. Meanwhile the UI thread
// has the grace to come back; if it does not, or the signal comes again
// first, duet hands the signal back (lifetime.HandBackSignal). A signal
// Python handles that the loop does not own just runs its handler.
type signalHandling struct {
	stop  func(error)
	owned map[syscall.Signal]bool
	grace time.Duration

	mu       sync.Mutex
	waiting  syscall.Signal // an owned signal whose handling the UI thread has not reached yet
	quitting syscall.Signal // the owned signal that started the ordered shutdown
	timer    *time.Timer
	back     bool // the loop's run returned: the UI thread is back, no grace any more
	returned bool // the loop has ended: its subscriptions are going
	// sigint: a SIGINT duet handed to Python is pending or its handler
	// ran, and its queued runHandler has not run yet: a KeyboardInterrupt
	// that comes out into Go meanwhile is the signal's.
	sigint bool
}

func newSignalHandling(stop func(error), owned []syscall.Signal, grace time.Duration) *signalHandling {
	h := &signalHandling{stop: stop, owned: map[syscall.Signal]bool{}, grace: grace}
	for _, s := range owned {
		h.owned[s] = true
	}
	return h
}

func (h *signalHandling) onSignal(sig syscall.Signal, kind lifetime.SignalKind) {
	if kind == lifetime.SignalIgnored {
		return
	}
	h.mu.Lock()
	owned := h.owned[sig]
	if !owned {
		h.mu.Unlock()
		if kind == lifetime.SignalPython || kind == lifetime.SignalDefaultInt {
			lifetime.InterruptPython(sig)
			h.onPythonMain(func() { h.runHandler(sig) })
		}
		return
	}
	if h.returned {
		// The loop has ended and no longer owns it: as without duet.
		h.handBack(sig, "")
		h.mu.Unlock()
		return
	}
	if sig == h.waiting || sig == h.quitting {
		h.handBack(sig, "again before the UI thread came back")
		h.mu.Unlock()
		return
	}
	pending := h.waiting != 0 || h.quitting != 0
	if !pending && !h.back {
		h.arm(sig)
	}
	if kind == lifetime.SignalDefaultInt && !capi.PythonMainIsUI() {
		// Python started off the main thread: its handlers run there, not
		// on the loop, so the KeyboardInterrupt has nowhere to go. Quit.
		kind = lifetime.SignalDefault
	}
	if kind == lifetime.SignalDefault || h.back && kind == lifetime.SignalDefaultInt {
		// The ordered shutdown (also when the loop is ending already for
		// another reason: the signal is what Run then reports).
		if h.quitting == 0 {
			h.quitting = sig
		}
		h.mu.Unlock()
		go h.stop(&SignalError{Signal: sig})
		return
	}
	if h.waiting == 0 && !h.back {
		h.waiting = sig
	}
	if sig == syscall.SIGINT {
		h.sigint = true // its handler, default_int_handler or PyGObject's, raises KeyboardInterrupt
	}
	// Outside h.mu: handing the signal to Python takes the GIL, and the UI
	// thread may hold it while it waits for h.mu (keyboardInterrupt).
	h.mu.Unlock()
	lifetime.InterruptPython(sig)
	h.onPythonMain(func() { h.runHandler(sig) })
}

// onPythonMain runs fn where Python's signal handlers run: the UI thread,
// or Python's own thread when it started off the main thread.
func (h *signalHandling) onPythonMain(fn func()) {
	if !capi.PythonMainIsUI() && lifetime.OnPythonMain(fn) {
		return
	}
	enqueue(fn)
}

// arm starts the grace period. Called with h.mu held.
func (h *signalHandling) arm(sig syscall.Signal) {
	if h.timer != nil {
		h.timer.Stop()
	}
	grace := h.grace
	h.timer = time.AfterFunc(grace, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.back {
			h.handBack(sig, fmt.Sprintf("and the UI thread did not come back within %v", grace))
		}
	})
}

// handBack gives up on sig: the loop no longer owns it, and the signal,
// raised again, does what it does without duet (ends the process, or
// reaches the program's own handler). Called with h.mu held.
func (h *signalHandling) handBack(sig syscall.Signal, why string) {
	if !h.owned[sig] {
		return
	}
	delete(h.owned, sig)
	if h.timer != nil && !h.stillArmedFor(sig) {
		h.timer.Stop()
	}
	if why != "" {
		fmt.Fprintf(os.Stderr, "duet: %v %s: the signal is no longer handled by duet and is raised again\n", sig, why)
	}
	lifetime.HandBackSignal(sig)
}

// stillArmedFor: whether the grace running is another owned signal's.
// Called with h.mu held.
func (h *signalHandling) stillArmedFor(sig syscall.Signal) bool {
	other := h.waiting
	if other == sig {
		other = h.quitting
	}
	return other != 0 && other != sig && h.owned[other]
}

// runHandler runs on Python's main thread (the UI thread, normally):
// Python's pending handler, if Python code running there has not run it
// already.
func (h *signalHandling) runHandler(sig syscall.Signal) {
	err := runPythonSignalHandlers()
	// PyGObject's own SIGINT handler (a nested GLib.MainLoop's run
	// installs it over the default one) quits that loop and raises the
	// signal's KeyboardInterrupt only when the loop's run returns: it is
	// still the signal's when it comes out into Go, later.
	later := sig == syscall.SIGINT && err == nil && pygobjectRaisesLater()
	h.mu.Lock()
	h.cameBack(sig)
	if sig == syscall.SIGINT && !later {
		h.sigint = false
	}
	h.mu.Unlock()
	var pe *pygi.Error
	switch {
	case err == nil:
	case errors.As(err, &pe) && pe.Matches("SystemExit"):
		h.quit(sig, err)
	case errors.As(err, &pe) && pe.Matches("KeyboardInterrupt"):
		h.quit(syscall.SIGINT, nil)
	default:
		reportHandlerError(err)
	}
}

// cameBack: the UI thread ran sig's Python handler, or reached the point
// where it would. Called with h.mu held.
func (h *signalHandling) cameBack(sig syscall.Signal) {
	if h.waiting == sig {
		h.waiting = 0
		if h.quitting == 0 && h.timer != nil {
			h.timer.Stop()
		}
	}
}

// handlerRan: Python's handler for sig is running now, on Python's main
// thread, wherever Python code was (lifetime's hook): the UI thread has
// come back for the signal, as far as the grace goes.
func (h *signalHandling) handlerRan(sig syscall.Signal) {
	h.mu.Lock()
	h.cameBack(sig)
	h.mu.Unlock()
}

// quit starts the ordered shutdown because Python said so: err (a
// SystemExit) when given, else a SignalError for sig.
func (h *signalHandling) quit(sig syscall.Signal, err error) {
	h.mu.Lock()
	if h.quitting == 0 {
		h.quitting = sig
		if h.owned[sig] {
			h.arm(sig)
		}
	}
	h.mu.Unlock()
	if err != nil {
		h.stop(err)
		return
	}
	h.stop(&SignalError{Signal: sig})
}

// uiBack: the loop's run returned, so the UI thread has come back: no
// grace runs any more (asyncio's end and the release of references still
// follow, with the signals still owned).
func (h *signalHandling) uiBack() {
	h.mu.Lock()
	h.back = true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
}

func (h *signalHandling) loopReturned() {
	h.mu.Lock()
	h.back, h.returned = true, true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
}

// keyboardInterrupt is told that a KeyboardInterrupt came out of Python
// code into Go on Python's main thread (pygi's errors) or reached a hook
// nobody caught it in. While a SIGINT duet handed to Python is pending,
// that is the signal's KeyboardInterrupt: as in a python3 GTK app, the app
// quits, whatever the Go code does with the error. One Python code raised
// by itself is Python's business, as under python3.
func keyboardInterrupt() {
	state.mu.Lock()
	h := state.signals
	state.mu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	ours := h.sigint
	h.sigint = false
	h.mu.Unlock()
	if ours {
		h.quit(syscall.SIGINT, nil)
	}
}

// pygobjectRaisesLater reports whether PyGObject's SIGINT fallback (gi's
// _ossighelper, active while a main loop it runs is nested in Python
// code) has been called and will raise KeyboardInterrupt as its loop
// returns. UI thread.
func pygobjectRaisesLater() bool {
	// Its handler is still the one installed (it is put back as the
	// loop's run returns), and it was called.
	r, err := pygi.Eval(`(lambda sys, signal: getattr(sys.modules.get("gi._ossighelper"), "_sigint_called", False) is True and `+
		`getattr(signal.getsignal(signal.SIGINT), "__module__", None) == "gi._ossighelper")(__import__("sys"), __import__("signal"))`, nil)
	if err != nil {
		return false
	}
	v, err := pygi.As[bool](r)
	return err == nil && v
}

// runPythonSignalHandlers runs the Python handlers of signals that have
// arrived (PyErr_CheckSignals), on Python's main thread.
func runPythonSignalHandlers() error {
	if err := lifetime.Enter(); err != nil {
		return err
	}
	defer lifetime.Exit()
	if st, exc := capi.CheckSignals(); st == capi.Err {
		return pyobj.Error(exc)
	}
	return nil
}

func reportHandlerError(err error) {
	var pe *pygi.Error
	if errors.As(err, &pe) && deliverPython(pe) {
		return
	}
	report.Print("eventloop: Python signal handler", err)
}
