// Package callbacks turns Go functions into Python callables whose lifetime
// Python owns.
//
// # The lifetime contract
//
// A callback is a builtin function (PyCFunction, called with CPython's
// vectorcall/FASTCALL convention) whose __self__ is a PyCapsule. The capsule
// holds an integer handle (never a Go pointer) to the Go function and owns
// the callback's PyMethodDef, in C memory. When the last Python reference to
// the function goes away, CPython frees the capsule and its destructor gives
// the handle back to Go. So the Go function lives exactly as long as Python
// holds it: a GTK signal, a list, a global or a reference cycle (collected by
// gc.collect) keep it alive, and the *pygi.Object Go gets back is just one
// more reference that Go may drop at any time. This is what host-language
// bindings get wrong in both directions: freeing a callback Python still
// holds (a segfault when GTK later emits the signal) or never freeing any
// (a leak). GoOwnedBroken reproduces the first on purpose.
//
// # Calling
//
// Arguments arrive in Go adapted to the function's parameter types, checked
// once when the callback is made; a call with the wrong arity or types
// raises TypeError naming the function and the parameter. *pygi.Object
// parameters receive the argument itself for the duration of the call (like
// PyO3's borrowed references: no reference is taken, which keeps signal
// handlers cheap); afterwards such an Object reads as closed, never as freed
// memory; Clone it to keep it. Returned errors raise GoError; panics are
// recovered at the boundary (they must never unwind through CPython's C
// frames) and raise GoPanic, a BaseException carrying the Go stack. Both come
// back to Go as a *pygi.Error that unwraps to the original error or to a
// *PanicError.
//
// The function runs on the thread Python called it from, holding the GIL.
// Calling back into Python from it is fine (re-entrancy is supported);
// blocking on other goroutines that need Python is not: wrap such waits in
// pygi.WithoutGIL.
//
// # Coroutines
//
// Async makes a func(ctx context.Context, args...) (T, error) a Python
// coroutine function: awaiting it on the duet loop (where asyncio runs,
// see package eventloop) runs the func on a goroutine of its own, without
// the GIL, and the await returns its result or raises GoError/GoPanic;
// cancelling the awaiting task cancels ctx. The coroutine function is a
// callback like any other, owned by Python: it holds two (NAME and
// NAME.cancel) for its life, and an await in flight costs no callback.
//
// # Signals
//
// Connect connects a Go function to a GObject signal through duet's own
// GClosure: GLib's values go straight to Go, and only the arguments the
// function takes are made (a handler that ignores the emitter gets no
// wrapper built), with no argument tuple and no Python call in between.
// The connection holds the callback exactly as PyGObject's connect would,
// so the lifetime contract is unchanged: disconnecting, or the object's
// finalisation, frees it. What the handler returns becomes the signal's
// return value (nothing is False for a boolean signal, as None is under
// PyGObject); what it raises or panics is printed through sys.excepthook
// and the emission goes on, as with PyGObject's closures. Package widgets
// sends every plain connect of a Go callback this way, including Python
// code's own widget.connect("clicked", go_func).
//
// Importing this package also makes every Go func passed to pygi (call
// arguments, attributes, items, containers) a callback automatically.
//
// A callback must return. runtime.Goexit inside one (t.FailNow, require.*
// on a test's T) cannot unwind through Python's C frames: the process ends
// with a message naming the callback, instead of hanging with the GIL held.
//
// # API
//
//	Making callbacks   New, NewMethod; options Name, Doc, Params, Module,
//	                   WithOwnership
//	Signals            Connect (duet's own closure), Disconnect
//	Coroutines         Async (a Go func Python awaits)
//	Ownership          PythonOwned (the product), GoOwnedBroken (the
//	                   classic crash, on purpose, for the stress harness)
//	Counting           ReadStats, Stats (created, freed, live)
//	Diagnosis          Cycles (callbacks whose Go function keeps alive
//	                   the object whose signal holds them)
//
// Everything here is safe from any goroutine. To count live callbacks in a
// test once Python has let go of what it will, use looptest.Settle;
// eventloop.Collect runs both garbage collectors once.
package callbacks
