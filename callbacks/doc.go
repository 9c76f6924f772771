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
// (a leak). The first is reproduced on purpose by the stress harness's
// broken mode (see stress/harness: Env.Broken), never by this package's
// API.
//
// # Calling
//
// Arguments arrive in Go adapted to the function's parameter types, checked
// once when the callback is made; a call with the wrong arity or types
// raises TypeError naming the function and the parameter. *pygi.Object
// parameters receive the argument itself for the duration of the call (like
// PyO3's borrowed references: no reference is taken, which keeps signal
// handlers cheap); afterwards such an Object reads as closed, never as freed
// memory; Clone it to keep it. A boxed signal argument (a Gdk.RGBA, say)
// lends the emission's memory while the handler runs: one kept past it
// (cloned, or handed to Python) is given a copy of its own then, as
// PyGObject's closures for GTK's signals do. Returned errors raise
// GoError; panics are recovered at the boundary (they must never unwind
// through CPython's C frames) and raise GoPanic, a BaseException carrying
// the Go stack. Both come back to Go as a *pygi.Error that unwraps to the
// original error or to a *PanicError.
//
// The function runs on the thread Python called it from, holding the GIL
// (except a bare or lazy signal handler: see Signals).
// Calling back into Python from it is fine (re-entrancy is supported);
// blocking on other goroutines that need Python is not: wrap such waits in
// pygi.WithoutGIL.
//
// # Coroutines
//
// [Async] makes a func(ctx context.Context, args...) (T, error) a Python
// coroutine function: awaiting it on the duet loop (where asyncio runs,
// see package eventloop) runs the func on a goroutine of its own, without
// the GIL, and the await returns its result or raises GoError/GoPanic;
// cancelling the awaiting task cancels ctx. The coroutine function is a
// callback like any other, owned by Python: it holds two (NAME and
// NAME.cancel) for its life, and an await in flight costs no callback.
//
// # Signals
//
// [Connect] and [ConnectAfter] connect a Go function to a GObject signal;
// the handler receives the emitter, the signal's arguments and the data
// given at connect time, as PyGObject's connect passes them, so it never
// needs to capture the object it is connected to. Without data it runs
// through duet's own GClosure: GLib's values go straight to Go, and only
// the arguments the function takes are made (a handler that ignores the
// emitter gets no wrapper built), with no argument tuple and no Python
// call in between. The connection holds the callback exactly as
// PyGObject's connect would, so the lifetime contract is unchanged:
// [Disconnect], or the object's finalisation, frees it. What the handler
// returns becomes the signal's return value (nothing is False for a
// boolean signal, as None is under PyGObject); what it raises or panics is
// printed through sys.excepthook and the emission goes on, as with
// PyGObject's closures.
//
// A handler that takes nothing and returns nothing (func(), or func()
// error) runs bare: without the GIL, as gotk4's own handlers run, so a
// handler that touches no Python costs GLib's dispatch and one crossing
// into Go, and Python threads run meanwhile. The pygi calls it makes take
// the GIL each; wrap a run of them in pygi.WithGIL to take it once.
//
// A handler that takes only GObjects as *pygi.Object (the emitter, a list
// item; after an optional *pygi.Block) and returns nothing or an error
// runs lazily: without the GIL until it first uses Python, given Objects
// whose Python wrappers are made when first used, and from that first use
// to its end holding the GIL, as if it had held it all along (its further
// pygi calls cost what they cost inside WithGIL). Only its own calls
// count as its use: a handler it runs (a signal it emits through gotk4,
// one a nested loop dispatches) takes and lets go of the GIL as it would
// anywhere else. So a click handler that
// only does Go work costs what a bare one does, and one that uses its
// emitter costs what it did. Before its first use of Python it may wait
// for goroutines that use Python, except where its emission comes from a
// thread that holds the GIL: then it runs attached from its start, as a
// handler of any other shape does (dispose-time signals such as destroy
// and unrealize, emitted as Python lets go of a widget's last wrapper or
// as package widgets lets go of gotk4's references to it; emissions
// from GTK's loop and from PyGObject's emit let go of the GIL).
// After its first use, the rule below holds. Lock
// order is a goroutine's too: a lock it holds at its first use of Python
// is taken before the GIL, so Go code that Python calls (holding the GIL)
// must not take it (a handler holding the GIL from its start took the
// two the other way round). Work the loop runs inside it (a nested loop,
// Invoke's functions, the collector) is not its use of Python. Its
// Objects end when it returns, as borrowed arguments do. An emission
// whose values are not all GObjects (an integer where the handler takes
// an Object) runs it holding the GIL, its values converted as PyGObject
// converts them. Every other shape runs holding the GIL, as a Python
// handler would. Without the GIL nothing serialises bare or lazy handlers
// of signals emitted on several threads at once (GTK emits on the UI
// thread; a GObject of your own may not): such a handler guards its own
// state, as a gotk4 handler does.
//
// Every connection of a Go handler is recorded in one place, whichever
// way it was made: Connect and ConnectAfter, widgets.Widget.Connect, the
// generated Connect<Signal> methods, widgets.LoadUI's handler maps, and
// PyGObject's connect family (connect, connect_after, connect_object,
// connect_object_after) called from Go (Object.CallMethod,
// widgets.CallMethod) or from Python code, which duet's connect hook
// routes the same way. The hook is in from the first Connect, or from
// GTK's start in package widgets (app starts it), whichever comes first.
// [Cycles] reads the record, and package widgets disconnects, from it, the
// Go handlers of every widget of a window that is destroyed.
//
// gotk4's typed Connect methods (button.ConnectClicked) are gotk4's own:
// the Go closure lives in gotk4's registry, not in Python, so duet does not
// record it, Cycles does not see it, and it goes when GLib drops the
// object's handlers at its dispose, or when duet releases gotk4's
// reference to the object (gotk4 has let go of the Go function by then,
// so duet disconnects the closure first: a gotk4 destroy handler does not
// run then, see package widgets). A gotk4 closure that captures a gotk4 object keeps that
// object alive from Go for as long as the connection lasts: on an object
// that is never disposed (a model, the application, a widget moved
// between windows) that is a leak no collector can see. They suit a
// gotk4-made widget whose handler captures nothing of GTK's; a handler
// that captures a widget, or runs on a Python-made object, belongs on
// Connect, with widgets.Weakly for what it must capture.
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
//   - Making callbacks: [New], [NewMethod] (binds as a method when set on
//     a class), [Async] (a coroutine function Python awaits), with the
//     options [Option]: [Name], [Doc], [Params], [Module].
//   - Signals: [Connect], [ConnectAfter], [Disconnect] ([ErrNotConnected]).
//   - Diagnosis: [Cycles] (callbacks whose Go function keeps alive the
//     object whose signal holds them), each a [Cycle] ([Cycle.String]).
//
// Counts of callbacks made, freed and live are forensics.ReadStats'
// Callbacks group; forensics.TakeCensus lists the live ones by name and
// creation site.
//
// Everything here is safe from any goroutine. To count live callbacks in a
// test once Python has let go of what it will, use looptest.Settle;
// eventloop.Collect runs both garbage collectors once.
package callbacks
