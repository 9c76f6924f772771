package lifetime

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/duet-gtk/duet/internal/capi"
)

// Signals (rule 8). The process's signal handlers are the Go program's.
// duet subscribes (signal.Notify, one channel per signal, so that each can
// be dropped alone with signal.Stop) only to
//
//   - the signals Python code handles or ignores with signal.signal
//     (SIG_DFL, and default_int_handler on SIGINT, are Python's defaults:
//     they hand the signal back), and
//   - while the event loop runs, the signals the loop owns (SIGINT and
//     SIGTERM, unless the program declined).
//
// It never calls signal.Reset or signal.Ignore (they would drop the host's
// own subscriptions) and never exits the process: a signal duet gives up
// (HandBackSignal) is raised again, to do what it does without duet.

// SignalKind is what Python code wants for a signal.
type SignalKind int

// Kinds, as signal.signal sets them.
const (
	SignalDefault    SignalKind = 0 // SIG_DFL
	SignalIgnored    SignalKind = 1 // SIG_IGN
	SignalDefaultInt SignalKind = 2 // signal.default_int_handler (SIGINT's, at start)
	SignalPython     SignalKind = 3 // a handler Python code registered
)

// Kinds that are not dispositions: faulthandler.register and unregister.
const (
	signalDumpOn  = 4
	signalDumpOff = 5
)

var sigs struct {
	mu     sync.Mutex
	python map[syscall.Signal]SignalKind // set by Python code since start-up
	dump   map[syscall.Signal]bool       // faulthandler.register'd
	owned  map[syscall.Signal]bool       // the running loop's
	policy func(syscall.Signal, SignalKind)
	subs   map[syscall.Signal]chan os.Signal
	// handing is a signal being handed back: no subscription of duet's
	// while it is raised.
	handing syscall.Signal
}

// PythonSignal records what Python code just set for sig with
// signal.signal (pygi calls it from the wrapper, on Python's main thread).
func PythonSignal(sig syscall.Signal, kind SignalKind) {
	if sig == syscall.SIGKILL || sig == syscall.SIGSTOP || !forwardable(sig) {
		return // Go's own (synchronous signals, SIGURG, SIGPROF): Python's table only
	}
	sigs.mu.Lock()
	defer sigs.mu.Unlock()
	switch kind {
	case signalDumpOn, signalDumpOff:
		if sigs.dump == nil {
			sigs.dump = map[syscall.Signal]bool{}
		}
		sigs.dump[sig] = kind == signalDumpOn
	default:
		if sigs.python == nil {
			sigs.python = map[syscall.Signal]SignalKind{}
		}
		sigs.python[sig] = kind
	}
	resubscribe(sig)
}

// forwardable: the signals Python code may take from Go. Go's own
// (SIGURG for preemption, SIGPROF, the synchronous ones) only change in
// Python's table.
func forwardable(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGURG, syscall.SIGPROF, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE,
		syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGSTKFLT, syscall.SIGABRT:
		return false
	}
	return sig > 0 && sig < 65
}

// PythonSignalKind is what Python's table says for sig now: what Python
// code set, or python3's start-up table (default_int_handler for SIGINT
// unless the process started with it ignored; SIGPIPE and SIGXFSZ
// ignored; the rest default).
func PythonSignalKind(sig syscall.Signal) SignalKind {
	sigs.mu.Lock()
	defer sigs.mu.Unlock()
	return kindLocked(sig)
}

func kindLocked(sig syscall.Signal) SignalKind {
	if k, ok := sigs.python[sig]; ok {
		return k
	}
	switch sig {
	case syscall.SIGINT:
		if signal.Ignored(sig) {
			return SignalIgnored
		}
		return SignalDefaultInt
	case syscall.SIGPIPE, syscall.SIGXFSZ:
		return SignalIgnored
	}
	return SignalDefault
}

// pythonAsked: whether Python code's choice for sig needs the signal
// delivered to duet (a handler, or ignoring a signal the process would not
// ignore by itself).
func pythonAsked(sig syscall.Signal) bool {
	if sigs.dump[sig] {
		return true
	}
	k, ok := sigs.python[sig]
	if !ok {
		return false
	}
	switch k {
	case SignalPython:
		return true
	case SignalDefaultInt:
		return sig != syscall.SIGINT // on SIGINT it is Python's default
	case SignalIgnored:
		return !signal.Ignored(sig) && sig != syscall.SIGPIPE && sig != syscall.SIGXFSZ
	}
	return false
}

// resubscribe makes duet's subscription to sig what Python and the loop
// need. Called with sigs.mu held.
func resubscribe(sig syscall.Signal) {
	need := (sigs.owned[sig] || pythonAsked(sig)) && sig != sigs.handing
	ch := sigs.subs[sig]
	switch {
	case need && ch == nil:
		if sigs.subs == nil {
			sigs.subs = map[syscall.Signal]chan os.Signal{}
		}
		ch = make(chan os.Signal, 16)
		sigs.subs[sig] = ch
		signal.Notify(ch, sig)
		go func() {
			for range ch {
				deliver(sig)
			}
		}()
	case !need && ch != nil:
		signal.Stop(ch) // only this channel: the host's subscriptions stay
		close(ch)       // no send can follow Stop
		delete(sigs.subs, sig)
	}
}

// deliver hands one arrival of sig on: to the loop's policy while a loop
// runs and the signal is the loop's or Python's, else to Python's handler.
func deliver(sig syscall.Signal) {
	sigs.mu.Lock()
	kind := kindLocked(sig)
	policy := sigs.policy
	wanted := sigs.owned[sig] || pythonAsked(sig)
	dump := sigs.dump[sig]
	sigs.mu.Unlock()
	if dump {
		faultDump(sig)
	}
	switch {
	case !wanted:
		// It came as the subscription ended (the loop returned, Python
		// gave the signal back), and without duet it would have reached
		// the process: it does now.
		raiseHere(sig)
	case kind == SignalIgnored:
	case policy != nil:
		policy(sig, kind)
	case kind == SignalPython || kind == SignalDefaultInt:
		InterruptPython(sig)
	}
}

// InterruptPython hands sig to Python as if it had arrived: its handler
// runs on Python's main thread at the next check. Also while Finalize
// decides (Closing): Python is whole then, and Finalize may give up, or
// reopen the gate for threading's shutdown, where python3 too runs the
// handlers of signals that came (one dropped there was lost for good when
// Finalize gave up). Nothing happens once Python is being finalised (its
// handlers are going away): the call is counted in flight, so Finalize
// waits for it.
func InterruptPython(sig syscall.Signal) {
	s := gate.state.Add(1)
	defer gate.state.Add(-1)
	if p := phaseOf(s); p == Ready || p == Closing {
		capi.SignalInterrupt(int(sig))
	}
}

// SetSignalPolicy registers what happens to signals while the event loop
// runs, and which signals the loop itself owns (subscribed for as long as
// the policy stays); nil removes both.
func SetSignalPolicy(f func(syscall.Signal, SignalKind), owned ...syscall.Signal) {
	sigs.mu.Lock()
	defer sigs.mu.Unlock()
	old := sigs.owned
	sigs.policy, sigs.owned = f, nil
	if f != nil {
		sigs.owned = map[syscall.Signal]bool{}
		for _, s := range owned {
			sigs.owned[s] = true
			resubscribe(s)
		}
	}
	for s := range old {
		resubscribe(s)
	}
}

// HandBackSignal gives sig back to the process for one arrival: duet's
// subscriptions to it (the loop's ownership for good, Python's for the
// moment) are dropped and sig is raised on this thread, so that it does
// what it does in the program without duet (ends the process, or reaches
// the program's own signal.Notify) before HandBackSignal returns; then a
// handler Python code set for it is subscribed again.
func HandBackSignal(sig syscall.Signal) {
	sigs.mu.Lock()
	delete(sigs.owned, sig)
	sigs.handing = sig
	resubscribe(sig)
	sigs.mu.Unlock()
	raiseHere(sig)
	sigs.mu.Lock()
	sigs.handing = 0
	resubscribe(sig)
	sigs.mu.Unlock()
}

// raiseHere raises sig on the calling OS thread, where the kernel delivers
// it before the call returns (Go's threads block no signal): to the
// program's subscribers, or by its default action.
func raiseHere(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
}

// faultDump writes the tracebacks faulthandler.register asked for, counted
// in flight like any entry (no GIL needed: the dumper is CPython's
// async-signal-safe one).
func faultDump(sig syscall.Signal) {
	s := gate.state.Add(1)
	defer gate.state.Add(-1)
	if p := phaseOf(s); p == Ready || p == Closing { // as InterruptPython
		capi.FaultDump(int(sig))
	}
}

// pythonSignalsGone forgets what Python code asked for (after
// Py_FinalizeEx: its handlers are gone) and drops those subscriptions.
func pythonSignalsGone() {
	sigs.mu.Lock()
	defer sigs.mu.Unlock()
	old, dump := sigs.python, sigs.dump
	sigs.python, sigs.dump = nil, nil
	for s := range old {
		resubscribe(s)
	}
	for s := range dump {
		resubscribe(s)
	}
}

// Subscribed reports the signals duet is subscribed to now (for tests).
func Subscribed() []syscall.Signal {
	sigs.mu.Lock()
	defer sigs.mu.Unlock()
	var out []syscall.Signal
	for s := range sigs.subs {
		out = append(out, s)
	}
	return out
}

var handlerRan atomic.Pointer[func(syscall.Signal)]

// SetSignalRanHook registers what learns that a Python signal handler is
// running now, on Python's main thread (the running loop's); nil removes it.
func SetSignalRanHook(f func(syscall.Signal)) {
	if f == nil {
		handlerRan.Store(nil)
		return
	}
	handlerRan.Store(&f)
}

// PythonSignalRan is called by pygi when a Python signal handler starts.
func PythonSignalRan(sig syscall.Signal) {
	if f := handlerRan.Load(); f != nil {
		(*f)(sig)
	}
}

var keyboardInterrupt atomic.Pointer[func()]

// SetKeyboardInterruptHook registers what runs when a KeyboardInterrupt
// comes out of Python into Go (the running loop's: it quits, as python3's
// would, whatever Go code does with the error); nil removes it.
func SetKeyboardInterruptHook(f func()) {
	if f == nil {
		keyboardInterrupt.Store(nil)
		return
	}
	keyboardInterrupt.Store(&f)
}

// KeyboardInterruptReachedGo is called by pygi when a KeyboardInterrupt
// becomes a Go error.
func KeyboardInterruptReachedGo() {
	// Only on Python's main thread does SIGINT raise it; elsewhere an
	// uncaught KeyboardInterrupt ends a thread, not the program (python3).
	if !IsMain() {
		return
	}
	if f := keyboardInterrupt.Load(); f != nil {
		(*f)()
	}
}

var pythonMain atomic.Pointer[func(func())]

// SetPythonMain registers how to run a function on Python's main thread when
// that is not the UI thread (pygi's dedicated thread, when Python started
// off the main thread); nil removes it.
func SetPythonMain(f func(func())) {
	if f == nil {
		pythonMain.Store(nil)
		return
	}
	pythonMain.Store(&f)
}

// OnPythonMain runs fn on Python's dedicated main thread, without waiting;
// false when there is none.
func OnPythonMain(fn func()) bool {
	if f := pythonMain.Load(); f != nil {
		(*f)(fn)
		return true
	}
	return false
}
