package lifetime

import (
	"sync/atomic"
	"syscall"
)

// SignalKind is what Python code wants for a signal (rule 8 in doc.go).
type SignalKind int

// Kinds, as signal.signal sets them.
const (
	SignalDefault    SignalKind = 0 // SIG_DFL
	SignalIgnored    SignalKind = 1 // SIG_IGN
	SignalDefaultInt SignalKind = 2 // signal.default_int_handler (SIGINT's, at start)
	SignalPython     SignalKind = 3 // a handler Python code registered
)

var signalPolicy atomic.Pointer[func(syscall.Signal, SignalKind)]

// SetSignalPolicy registers what happens to a signal while the event loop
// runs (the loop's policy); nil removes it. pygi delivers every signal
// Python or duet handles to it, one at a time.
func SetSignalPolicy(f func(syscall.Signal, SignalKind)) {
	if f == nil {
		signalPolicy.Store(nil)
		return
	}
	signalPolicy.Store(&f)
}

// SignalPolicy returns the registered policy, or nil.
func SignalPolicy() func(syscall.Signal, SignalKind) {
	if f := signalPolicy.Load(); f != nil {
		return *f
	}
	return nil
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
