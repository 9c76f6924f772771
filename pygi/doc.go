// Package pygi embeds CPython (with PyGObject) in a Go program.
//
// # The model
//
// There is one interpreter per process. It starts on first use (or when
// [Init] is called) on the main OS thread, and the GIL is released as soon
// as it has started. The process's signals stay the Go program's (see
// Signals); Python keeps its view of them. From then on any goroutine may
// call into Python: every operation attaches the calling OS thread to
// Python (taking the GIL) and detaches it again inside a single cgo call.
// Each OS thread keeps the Python thread state it first got, which makes
// attaching cheap (make bench's "Go → Python call" row measures a whole
// trivial call). [WithGIL] runs a batch of operations under one
// attachment; [WithoutGIL] detaches around a blocking wait inside such a
// batch or inside a callback from Python.
//
// What stays true for goroutines: they never manage the GIL by hand, and a
// goroutine never deadlocks on it, but they do share it. A goroutine
// running Python holds the GIL for CPython's switch interval (5 ms) at a
// time. The UI thread goes first: while it waits for the GIL, other
// threads wait before their next entry (never inside one), so a UI frame
// waits about one switch interval behind busy goroutines, not many (make
// bench's "Invoke round trip running a Python call on the UI thread" rows,
// with goroutines busy in Python).
//
// # Who owns what
//
// An *[Object] owns exactly one strong reference to a Python object. Close
// releases it now (idempotent, exactly once, safe against concurrent use:
// the GIL orders the two, so the other operation either finishes or sees
// ErrClosed). An Object that is simply dropped is released after Go's
// garbage collector finds it unreachable: the GC cleanup only queues the
// reference (it never calls Python), and the queue is drained by the next
// operation or, when the event loop runs, by the loop, on the UI thread
// (releasing a widget's last wrapper finalises the widget, which GTK allows
// only there). [Drain] releases what is queued now; forensics.ReadStats
// counts. Objects that duet caches for the whole process and hands to
// every caller are shared: Close on them does nothing. They are None, and
// True and False as calls return them (a call returning a bool makes no
// Object, so a getter or predicate costs no cleanup).
//
// # The interpreter's life
//
// The interpreter starts (new, then ready), is finalised (closing,
// finalizing, finalized) or fails to start. [Finalize] has one owner, the
// code that runs the event loop: it is refused with [ErrLoopRunning] while
// the loop runs (app.Run and looptest.Main finalise after their loop),
// with [ErrWrongThread] off the thread that started Python, and with
// [ErrInsideCall] inside a Python call or WithGIL. It waits for the calls
// in flight; goroutines entering meanwhile wait until the gate opens
// again, when Finalize gives up or when it reopens it for threading's
// shutdown (they then run, as Python's threads may), and see
// [ErrFinalized] only once Python is really going away. When Finalize
// gives up (its context ended), the interpreter is ready again.
// Before that, it waits, as long as its context lets it, for Python threads
// that are not daemons (Py_FinalizeEx would wait for them for ever, as
// python3 does at exit): [ErrThreadsRunning] names those that outlast it.
// Finalisation that lost output (the final flush of sys.stdout or
// sys.stderr failed) returns [ErrFlushFailed]. Nothing of Python's is left in
// the process's signal handling afterwards.
//
// While threading's shutdown runs, Python's threads and the Go code they
// call use Python freely, as under python3 at exit. After a Finalize that
// gave up, Python is usable but threading's shutdown
// has begun, as in python3: the main thread counts as stopped, and
// concurrent.futures (run_in_executor, to_thread, asyncio's getaddrinfo)
// takes no new work.
//
// # Signals
//
// The process's signals belong to the Go program that embeds Python.
// Starting Python changes no process-wide signal state: no disposition, no
// signal.Notify of the program's own, nothing a child process inherits
// (SIGPIPE stays as Go has it). Python code sees python3's table
// (signal.getsignal: default_int_handler for SIGINT, SIGPIPE and SIGXFSZ
// ignored) and gets the signals it asks for:
//
//   - A handler set with signal.signal runs on Python's main thread at its
//     next check, as under python3 (a blocking sleep or select there is
//     interrupted); duet subscribes to that signal alone, beside any
//     signal.Notify of the program's.
//   - signal.SIG_IGN set by Python code: the signal no longer ends the
//     process.
//   - SIG_DFL, and default_int_handler on SIGINT, are Python's defaults:
//     the signal does what it does in the Go program (SIGINT, SIGTERM and
//     SIGHUP end it; os/signal subscribers get it).
//
// What Python code sets is Python's table only: no disposition reaches the
// kernel (CPython's own sigaction, sigaltstack and siginterrupt calls are
// intercepted, so no signal.signal, finalisation or faulthandler call
// leaves a moment in which a signal would take its default action). So,
// unlike python3: a child process does not inherit a SIG_IGN Python code
// set, SIGCHLD set to SIG_IGN does not make the kernel reap children, and
// SIGPIPE set to SIG_DFL does not make Python's writes to a closed pipe end
// the process. One process-wide choice is made for Python's sake: SIGPIPE
// and SIGXFSZ raised by C code on a thread Go does not run (Python's
// threads, GLib's) fail the write, as python3 has them, instead of ending
// the process; Go's own writes to a closed stdout still end the program,
// and child processes inherit the default dispositions.
//
// So outside the event loop Ctrl+C ends a Go program as it always did, or
// reaches its own handler; Python code that wants KeyboardInterrupt there
// installs a handler that raises it. The loop (eventloop.Run, app.Run)
// owns SIGINT and SIGTERM while it runs: see package eventloop.
//
// faulthandler works as documented (faulthandler.enable, -X faulthandler,
// PYTHONFAULTHANDLER): a native crash writes Python's tracebacks to its
// file, and a fault in Go code stays Go's (a nil dereference in a Go
// callback is a recoverable panic); faulthandler.register writes its
// tracebacks when the signal comes (holding the GIL: a thread that keeps
// it in C code delays the dump), and the program's own subscribers get the
// signal too (chain or not). After Finalize, nothing of Python's is left in
// the process's signal handling.
//
// A Python handler runs at the main thread's first check after duet's
// forwarding goroutine has handed the signal over (a few milliseconds;
// python3 runs it at the next bytecode, even for os.kill of itself).
//
// A child process forked with Python code to run in it (os.fork,
// multiprocessing's fork start method, subprocess's preexec_fn) is a Python
// process: its signals are Python's (as in python3's children), and Go
// code cannot run in it (no Go runtime runs in a forked child: a Go
// callback called there hangs). Go's own os/exec children, and those of
// subprocess without preexec_fn, start with the default dispositions.
//
// # API
//
//   - Start and end: [Init] with [Options] ([ErrStarted] once it has
//     started), [Finalize].
//   - Running code: [Import], [Eval], [Exec], [ExecFile], [ExecModule],
//     [NewGlobals]; [RequireVersion] before a GI namespace is imported
//     ("gi.repository.Gtk"; [ErrNoGI] when PyGObject is missing).
//   - Attaching: [WithGIL] (a batch under one attachment), [WithoutGIL]
//     (a blocking wait inside one).
//   - Objects: [Object], with [Object.Attr], [Object.SetAttr], [Object.HasAttr],
//     [Object.DelAttr], [Object.Call], [Object.CallMethod], [Object.Item],
//     [Object.SetItem], [Object.DelItem], [Object.Len], [Object.Iter],
//     [Object.Is], [Object.IsInstance], [Object.IsNone], [Object.Truthy]
//     (bool(o)), [Object.TypeName], [Object.RefCount], [Object.Clone]
//     (a second reference), [Object.Close], [Object.Closed].
//   - Go to Python: [New] (any Go value), [Kw] (keyword arguments),
//     [Tuple], [None], [Converter] (a Go type's own Python form).
//   - Python to Go: [As] (strict: nothing is truncated; As[any] gives the
//     natural Go form), [Object.String] (str(o), for fmt; never fails),
//     [Object.Repr].
//   - Releases: [Drain] (release what Go dropped, now).
//   - Blocks, one error check for many operations: [Block] with
//     [Block.Import], [Block.Attr], [Block.SetAttr], [Block.CallMethod],
//     [Block.Item], [Block.Eval], [Block.Exec], [Block.Globals], [BlockAs],
//     [Block.Err], [Block.Fail].
//   - Errors: [Error] (a Python exception, with its traceback;
//     [Error.Matches] tests its class),
//     [ConversionError] (and [ErrConversion]), [PanicError] (a Go panic at
//     a boundary); [ErrClosed], [ErrNilObject], [ErrFinalized],
//     [ErrLoopRunning], [ErrInsideCall], [ErrWrongThread], [ErrFinalizeBusy],
//     [ErrFlushFailed],
//     [ErrThreadsRunning].
//
// Every function here is safe from any goroutine, with the thread rules of
// Finalize above. Python objects that are GTK widgets are another matter:
// GTK allows them only on the UI thread (see package eventloop).
//
// # Values
//
// New converts Go values to Python (nil, bools, every integer kind exactly,
// floats, UTF-8 strings, []byte, slices, arrays, maps, pointers, *Object);
// As converts back, refusing anything that would not fit rather than
// truncating it. Containers cross in one cgo call
// whatever their size. Go funcs become Python callables when package
// callbacks is linked in.
//
// # What Python code observes
//
// Python code inside duet sees what it sees under python3 (each row is
// tested against /usr/bin/python3 under the same conditions):
//
//	sys.executable,        the python3 of the embedded libpython (so code
//	_base_executable,      that starts sys.executable, such as
//	prefix                 multiprocessing's spawn, starts Python); a virtual
//	                       environment's when one is configured
//	                       (Options.Venv; $VIRTUAL_ENV only when the app
//	                       passes it), with
//	                       its site-packages
//	sys.argv, orig_argv    the app's command line (Options.Args)
//	sys.path, site         python3's; nothing from the working directory
//	sys.flags, stdio,      python3's defaults, PYTHON* variables honoured
//	encodings, locale,     (PYTHONFAULTHANDLER enables faulthandler, ...),
//	faulthandler           the same stdio encodings and buffering
//	signals                python3's table (default_int_handler for SIGINT,
//	                       SIGPIPE ignored); handlers set with signal.signal
//	                       run on the main thread; faulthandler as
//	                       documented (the process's signal handling stays
//	                       the Go program's: see Signals; package eventloop
//	                       for the loop's part)
//	excepthooks            python3's; while the event loop runs duet's, which
//	                       print exactly as python3's unless Go subscribes
//	gc                     python3's thresholds and switches; while the loop
//	                       runs, collections happen on the UI thread
//	atexit                 functions run when Python is finalised
//	recursion limit,       python3's
//	switch interval,
//	__main__
//	GLib's main context    depth and pending state as inside a python3
//	                       GLib.MainLoop's dispatch
//	warnings, logging      on stderr as under python3, or to Go's log/slog
//	                       (eventloop.RouteLogs)
//
// # Errors
//
// A Python exception becomes an *Error with its type, message and formatted
// traceback; an exception raised by a Go callback unwraps to the Go error
// (or *PanicError) it carried. Nothing in this package panics on bad
// input (values, closed or nil Objects); a nil *Block is a programmer's
// error, as a nil *bytes.Buffer is.
package pygi
