// Package lifetime is duet's lifetime machinery: the one place that decides
// when Python may be entered, on which thread things may happen, and when
// references Go dropped are released. Every other duet package asks it;
// none keeps its own copy of these rules.
//
// # The rules
//
//  1. The interpreter has one life: New, then Ready (or Failed), then
//     Closing, Finalizing and Finalized. Closing can fall back to Ready
//     (finalisation gave up: calls were still in flight when its deadline
//     passed); nothing falls back from Finalizing. Phase says where it is.
//  2. Every entry into Python from Go is counted while it runs (Enter,
//     Exit); the phase and the count are one atomic word, so Finalize moves
//     from Closing to Finalizing only at a moment when nothing is in
//     flight, and nothing can slip in between the check and the move.
//  3. While Closing, an entry from a thread that holds nothing waits for
//     the outcome: ErrFinalized if Python was finalised, the operation
//     itself if finalisation gave up. So what a goroutine observes is what
//     really happened. An entry nested in a scope that already holds the
//     GIL (a Go callback Python is running, a Do scope), or in one this
//     thread detached from (WithoutGIL inside it), goes ahead: it is part
//     of something already in flight, and waiting would deadlock. (Inside
//     a WithGIL scope or an entry, a call with no arguments is not even
//     counted: C's fast entry, capi.Call0, knows the scope is. Inside a Go
//     callback it is, since its Python caller is not.) While Finalizing,
//     only nested entries that hold the GIL go ahead, and bare handlers
//     only on the thread that finalises (Python's atexit functions and
//     __del__ may call Go, which may call Python, as python3 would let
//     them); everything else gets ErrFinalized.
//  4. The UI thread is the process's main OS thread. While the event loop
//     runs, it is also the only thread that releases Python references and
//     runs Python's cycle collector, because dropping the last reference to
//     a widget's wrapper finalises the widget, which GTK allows only there.
//     References dropped elsewhere wait in the release queue, which the loop
//     drains; OnUI runs a function there and waits for it.
//  5. Release from Go's GC never touches Python: a cleanup only appends to
//     the queue. The queue is drained by the next entry (when no loop runs)
//     or by the loop (when one does), and never with a Python exception
//     pending (internal/capi sets it aside).
//  6. Functions that GTK allows only on the UI thread check the thread and
//     return ErrNotMain; they never crash and never hop threads silently.
//  7. Finalisation never runs while the loop runs, nor from a thread other
//     than the one that started Python: the interpreter's life has one
//     owner, the code that runs the loop (app.Run, looptest.Main, or main).
//  8. The process's signals are the Go program's: duet changes no
//     disposition and drops no signal.Notify of the host's. It subscribes
//     (one channel per signal) only to the signals Python code handles or
//     ignores and, while the loop runs, to the ones the loop owns (SIGINT,
//     SIGTERM). Each arrival goes through the loop's policy
//     (SetSignalPolicy) while one runs, otherwise to Python as python3
//     would deliver it. duet never exits the process on a signal: one it
//     gives up is handed back (HandBackSignal). AtFinalize hooks take back
//     what duet installed in GTK objects that outlive Python.
package lifetime
