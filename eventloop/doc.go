// Package eventloop runs the one GLib main loop that Go and the embedded
// PyGObject share.
//
// GLib's default main context is the only loop: it runs on the main OS
// thread (the UI thread), with the GIL released while it waits, so Python
// signal handlers, GLib.timeout_add from Python and Go work interleave in
// one order. Nothing polls.
//
// From any goroutine, Invoke queues a function for the loop (one persistent
// GSource made in C, woken with g_main_context_wakeup: no allocation per
// call, no Python involved) and InvokeWait waits for it with a context.
// After and Every are timers backed by GLib timeout sources; Cancel is safe
// from any goroutine, also while the timer's function runs, and once it
// returns the function does not run again.
//
// While the loop runs it also takes care of two things that keep Go, Python
// and GTK from hurting each other:
//
//   - Python references Go dropped are released on the loop (an invoke
//     scheduled when pygi's release queue becomes non-empty), so objects are
//     freed even when no Go code calls Python; and releases happen only on
//     the UI thread, because releasing the last reference to a widget's
//     Python wrapper finalises the widget, which GTK allows only there.
//   - Python's cycle collector runs on the UI thread too (automatic
//     collection is switched off while the loop runs and the loop runs
//     CPython's own generational schedule every 20 ms), for the same
//     reason: a collection on a goroutine's thread could finalise widgets.
//
// Exceptions that PyGObject would print and drop (raised in signal
// handlers, sources, Python threads, __del__) reach OnPythonException.
// Run quits on Quit, on the end of its context, or on SIGINT/SIGTERM
// (gracefully, returning a *SignalError). Drive lets another blocking loop
// runner, such as g_application_run, be the loop (package app uses it).
//
// Package looptest runs tests (yours too) with the loop on the main thread.
package eventloop
