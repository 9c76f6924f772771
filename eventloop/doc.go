// Package eventloop runs the one GLib main loop that Go and the embedded
// PyGObject share.
//
// GLib's default main context is the only loop: it runs on the main OS
// thread (the UI thread), with the GIL released while it waits, so Python
// signal handlers, GLib.timeout_add from Python and Go work interleave in
// one order. Nothing polls: an idle app's threads sleep until something
// happens (input, a timer, an Invoke, Python work that makes a collection
// due); forensics.ReadStats' Loop group counts what duet's own sources
// did. The UI thread owns the default context for the whole life of the
// process, also while no loop runs, so GLib work queued from other threads
// (g_main_context_invoke) always waits for the UI thread.
//
// From any goroutine, [Invoke] queues a function for the loop (one persistent
// GSource made in C, woken with g_main_context_wakeup: no allocation per
// call, no Python involved) and InvokeWait waits for it with a context.
// The loop runs queued work in order, in turns of about 2 ms: a flood of
// Invokes from busy goroutines does not keep the UI thread from its input,
// timers and redraws, which run between two turns (while work is left
// over, the invoke source waits just below GTK's redraw priority, for at
// most 4 ms: whatever stays ready above that cannot keep Invokes waiting
// longer; once the queue is empty it is back at the default priority).
// When they did keep it that long (a timer slower than its interval is
// always due), the next turn comes in the same iteration of the loop,
// after what is ready at the default priority, and is as long as they
// held it, up to 8 ms, plus as long as the UI thread waited for a CPU in
// it (so that a loaded machine, where everything stretches, does not
// shrink its share), so that Invokes and the busy sources share the thread
// instead of the queue growing for good. A round trip still waits for the work queued before it, so a flood is
// paced: past [PaceAbove] queued Invokes, a goroutine's Invoke waits (at
// most [PaceFor], and never on the UI thread or holding the GIL) for the
// loop to catch up, and the backlog of small Invokes stays a few
// milliseconds of work; a loop slower than its senders keeps at most about
// [PaceCap] (past it, senders wait for the loop's progress).
// A nested main loop run inside an Invoke'd function (a modal wait in
// Python code it calls) gets no Invokes until the function returns, as
// GLib keeps any source from running inside its own dispatch: run modal
// waits from a handler, a timer or an asyncio task instead. A task that a
// Go async func's result resumed may: it runs as it would in the asyncio
// source's dispatch, where Invokes do reach a nested loop.
// After and Every are timers backed by GLib timeout sources; Cancel is safe
// from any goroutine, also while the timer's function runs, and once it
// returns the function does not run again.
//
// # The UI thread
//
// GTK allows its objects only on the UI thread. Every duet function with
// that rule checks it and returns an error wrapping ErrNotMain when called
// from elsewhere (never a crash, never a silent hop to another thread);
// [RequireMain] is the check, for your own functions too. Here, Run and
// Drive are UI-thread only; everything else is safe from any goroutine.
//
// While the loop runs it also takes care of two things that keep Go, Python
// and GTK from hurting each other:
//
//   - Python references Go dropped are released on the loop (an invoke
//     scheduled when pygi's release queue becomes non-empty), so objects are
//     freed even when no Go code calls Python; and releases happen only on
//     the UI thread, because releasing the last reference to a widget's
//     Python wrapper finalises the widget, which GTK allows only there.
//   - Python's cycle collector runs on the UI thread too: automatic
//     collection is switched off while the loop runs, and the loop collects
//     when CPython's own thresholds say a collection is due (a GLib source
//     reads the collector's counters; a goroutine's Python work wakes the
//     loop when it makes one due, and while Python threads live the loop
//     looks on a timeout, from 10 ms while they work to 1 s while they
//     wait, with a young collection after one that freed something, as
//     their garbage can hide from the counters). A due collection waits
//     below the default priority for at most 4 ms, then runs at the
//     default priority: a loop that other sources keep busy still collects, as
//     CPython collects whatever else is busy. [Collect] (both collectors, from
//     any goroutine) runs its Python part there as well. Python code keeps
//     its own view: gc.disable() stops the schedule
//     and gc.isenabled() answers what the code asked for. A collection that
//     still happens on another thread (gc.collect() on a Python thread, say)
//     is reported through OnPythonException as duet_gc.OffThreadCollection,
//     naming the thread.
//
// Exceptions that PyGObject would print and drop (raised in signal
// handlers, sources, Python threads, __del__) reach OnPythonException.
// Run quits on Quit, on the end of its context, or on a signal (returning a
// *SignalError).
//
// # Signals
//
// The process's signals belong to the program (see pygi's "Signals": Python
// gets only the signals Python code asked for, and nothing of the host's
// signal.Notify is ever dropped). While the loop runs it owns SIGINT and
// SIGTERM (Run and Drive with HostSignals() leave them to the program; a
// signal the process started with ignored, as under nohup, stays ignored):
//
//   - SIGINT goes through Python's disposition, so Python code that
//     replaced it decides: with default_int_handler it raises
//     KeyboardInterrupt in the Python code the UI thread runs (also in a
//     blocking sleep there), or at the loop's next turn. A KeyboardInterrupt
//     that comes out of Python into Go on the UI thread ends the loop (Run
//     returns a *SignalError for SIGINT), whatever the Go code that got it
//     as an error does with it; Python code that catches it keeps going, as
//     under python3. Python's own GLib.MainLoop and Gtk.Application.run keep
//     PyGObject's Ctrl+C handling.
//   - SIGTERM (or SIGINT set to SIG_DFL) starts the ordered shutdown: Run
//     returns a *SignalError.
//   - The UI thread then has a grace (the [SignalGrace] option, 3 s) to
//     come back. If
//     it does not, or the same signal comes again first, duet hands the
//     signal back: it stops handling it and raises it again, so that it
//     does what it does in the program without duet (a Go program dies of
//     it, status 128+n in a shell; a program that subscribed to it decides).
//     duet never calls os.Exit.
//
// Every other signal Python code handles (SIGUSR1, SIGALRM, SIGCHLD,
// asyncio's add_signal_handler ...) runs its Python handler on the UI
// thread, however long the UI thread was busy, as often as CPython would
// (it coalesces a signal that comes again before its handler ran): no
// grace, no exit. A handler that raises SystemExit or KeyboardInterrupt
// quits the loop. When the loop ends, its subscriptions end with it.
//
// Drive lets another blocking loop runner, such as g_application_run, be
// the loop (package app uses it). Neither finalises Python: that is for
// their caller, after they return.
//
// # asyncio
//
// While the loop runs, the UI thread's running asyncio loop is driven by
// it: asyncio.get_running_loop() in a signal handler, a GLib source or an
// Invoke returns a GLibEventLoop (asyncio's selector loop whose file
// descriptors GLib polls and whose iterations a GSource runs), so
// create_task, timers, call_soon_threadsafe, run_in_executor, sockets,
// subprocesses (each watched through a pidfd, no watcher thread) and
// add_signal_handler work as asyncio documents, with no second loop and no
// thread of duet's. It starts when the program first imports asyncio (a
// program that never does pays nothing) and ends with the loop as
// asyncio.run ends: the tasks left are cancelled and get the
// [AsyncioGrace] option's time to finish, then async generators and the default executor are shut down.
// Outside a running loop, asyncio.run works as in python3; inside it,
// asyncio.run and run_until_complete raise, as they do inside any running
// asyncio loop, and loop.stop() does nothing (Quit stops the loop). An
// exception nobody retrieves goes to sys.excepthook, so to
// OnPythonException, with asyncio's description as a note.
//
// Go awaits Python with Await (or StartTask and Task.Wait): the coroutine
// runs as a task on the loop, its exception arrives as a *pygi.Error, and
// a context that ends first cancels the task. Python awaits Go through
// callbacks.Async.
//
// # API
//
//   - Running the loop: [Run] and [Drive] with their [Option] values
//     [HostSignals], [SignalGrace] and [AsyncioGrace]; [Quit], [Running];
//     [ErrRunning] (one at a time).
//   - Work on the loop: [Invoke], [InvokeWait] (a flood paced past
//     [PaceAbove], for at most [PaceFor] an Invoke, and for the loop's
//     progress past [PaceCap]), and the [Timer] of
//     [After] and [Every], with [Timer.Cancel] and [Timer.Fired].
//   - The UI thread: [IsMain], [RequireMain], [ErrNotMain].
//   - Garbage: [Collect] (both collectors; Python's on the UI thread).
//   - Reporting: [OnPythonException], [OnPanic] (panics in loop work, as
//     *pygi.PanicError), [SignalError] (what Run returns after a signal).
//   - asyncio: [Await], [StartTask] and its [Task] ([Task.Wait],
//     [Task.Cancel], [Task.Done]); [ErrNotRunning].
//   - Python's output: [RouteLogs] (warnings, logging's last resort,
//     unraisable exceptions, GLib/GTK messages to slog).
//
// Package looptest runs tests (yours too) with the loop on the main thread.
package eventloop
