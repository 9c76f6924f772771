// Package forensics says why a duet app crashed and shows what lives while
// it runs: crash reports, callback provenance, a quarantine for freed
// callbacks, a census, and duet's running counts.
//
// # Crash reports
//
// On with [EnableCrashReports] (or DUET_CRASH_REPORT=1, or =path, for any
// duet program; on by default in looptest and in the stress harness).
// Then a fatal signal in C code (SIGSEGV, SIGBUS), an abort, or a fatal Go
// error (an unrecovered panic, a runtime throw) writes one report, to
// stderr and to the report file, which no other local user can read or
// redirect (a private directory of the user's, 0700, checked; a 0600 file
// whose unpredictable name is made by the crash itself, so that a process
// that ends any other way leaves nothing behind):
//
//   - the Go runtime's stacks of every goroutine (Go is asked to crash,
//     debug.SetTraceback("crash"), instead of exiting, and to copy its
//     output to the file, debug.SetCrashOutput);
//   - the last boundary crossings, from a ring in C memory: each entry
//     point (the operation and the Python type it worked on, with the
//     attribute or method), each call from Python or from a GLib signal
//     into Go (the callback's name, the signal), each callback freed (by
//     Python, or by the Go GC in the broken mode), with the OS thread;
//   - the Python traceback of every thread (CPython's faulthandler dumper).
//
// The Go part comes first for a fatal signal in C code (the runtime prints
// every goroutine, then relays SIGQUIT through its threads; duet's handler
// ends the process at the first relay, after writing its part, because a
// thread that blocks signals, as GLib's do, would make the runtime wait
// 10 s). A fatal Go error ends in the runtime's SIGABRT, where duet's
// handler, chained before Go's, writes its part after Go's; an abort()
// from C code (Py_FatalError, g_error, the diagnosis below) gets duet's
// part first. The process then dies of SIGABRT (a core dump, where the
// system keeps them). stderr also names the report file. duet's private
// directory keeps the newest 100 reports: a process that turns reports on
// there removes the oldest past that (its own reports only: files named
// duet-crash-*.txt, regular and the user's own; a path of the user's
// choosing is never pruned).
//
// What recording a crossing costs with the ring on is make bench's "crash
// reports' ring" row; off, it is one predictable branch. A Go nil dereference
// recovered as a panic passes through duet's SIGSEGV handler untouched.
// With crash reports on, a SIGQUIT the process sends itself after a fatal
// signal ends it, as the runtime's crash would have.
//
// # Provenance and the quarantine
//
// With provenance on (crash reports, DUET_DEBUG=callbacks, [SetProvenance])
// each callback keeps the call stack above callbacks.New or Connect as
// PCs (eight frames of runtime.Callers, whose cost per callback made is
// make bench's "callback provenance" row), resolved only when shown:
// census rows and diagnoses read
// "name (file.go:line)", the first frame outside duet's library and Go's
// standard library. Without it, or when all eight frames are duet's, the
// site is where the Go function was written. The callbacks duet's own APIs
// make around a func of yours (app.AddAction's, app.OnActivate's and the
// other application signals', app.Main's) are sited at your call of that
// API in either case, never in duet's wrapper.
//
// DUET_DEBUG=callbacks (or [SetDebugCallbacks]) keeps the native state of a
// freed callback in quarantine (4096 at most, oldest freed for good first)
// instead of freeing it, so that a call into it stops with a diagnosis
// instead of a bare SIGSEGV:
//
//	duet: use after free: callback on_click (scenarios/scenarios.go:166),
//	freed by the Go GC (the deliberately broken ownership) at 0.34 s, called from
//	signal 'clicked' of GtkToggleButton 0x…
//
// and then aborts (with the crash report, when on). Only the broken
// ownership mode or a bug frees a callback Python can still call.
//
// # Census
//
// [TakeCensus] counts the Go callbacks alive by name and creation site, the
// Python objects Go holds references to by Python type, and the GObjects
// duet tracks or watches by GType (package widgets registers that table:
// gotk4 objects it tracks, objects it watches; a GObject only PyGObject
// holds shows up as the Python object Go holds, if Go holds one); Grew
// says what grew since an earlier census. The census window
// (kit.ShowCensus; app.Options.Census or DUET_CENSUS=1 puts it on
// Ctrl+Shift+C) shows the tables live, each row with its change since a
// mark and a graph of its last minute. The stress harness puts a census at
// the start (after the scenario's set-up) and at the end (after it
// settled) of each scenario in report.json, and names what grew in its
// output and plot.
//
// # API
//
//   - Crash reports: [EnableCrashReports], [CrashReportPath], [Crossings]
//     (the last crossings, each a [Crossing]), [SetRing] (the ring of
//     crossings without crash reports).
//   - Callbacks: [SetProvenance], [SetDebugCallbacks].
//   - Census: [TakeCensus], a [Census] of [Count] rows, [Census.Grew] and
//     its [Change] rows.
//   - Counts: [ReadStats], whose [Stats] has a group per package:
//     pygi's Objects, callbacks', the event loop's, package widgets'
//     GObjects.
package forensics
