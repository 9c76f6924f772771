// Package forensics says why a duet app crashed and shows what lives while
// it runs: crash reports, callback provenance, a quarantine for freed
// callbacks, and a census.
//
// # Crash reports
//
// On with EnableCrashReports (or DUET_CRASH_REPORT=1, or =path, for any
// duet program; on by default in looptest and in the stress harness).
// Then a fatal signal in C code (SIGSEGV, SIGBUS), an abort, or a fatal Go
// error (an unrecovered panic, a runtime throw) writes one report, to
// stderr and to the report file:
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
// The Go part comes first for a fatal signal or Go error (the runtime's
// crash ends in SIGABRT, where duet's handler, chained before Go's, writes
// the rest); for an abort() from C code (Py_FatalError, g_error) duet's part
// comes first. The process then dies of SIGABRT (a core dump, where the
// system keeps them). Recording a crossing costs a few nanoseconds (see
// make bench); with crash reports off it is one predictable branch.
//
// # Provenance and the quarantine
//
// With provenance on (crash reports, DUET_DEBUG=callbacks, SetProvenance)
// each callback keeps the call stack above callbacks.New or Connect as
// PCs, resolved only when shown: census rows and diagnoses read
// "name (file.go:line)", the first frame outside duet's library. Without
// it, the site is where the Go function was written.
//
// DUET_DEBUG=callbacks (or SetDebugCallbacks) keeps the native state of a
// freed callback in quarantine (4096 at most, oldest freed for good first)
// instead of freeing it, so that a call into it stops with a diagnosis
// instead of a bare SIGSEGV:
//
//	duet: use after free: callback on_click (scenarios.go:140), freed by
//	the Go GC (GoOwnedBroken ownership) at 0.12 s, called from signal
//	'clicked' of GtkButton 0x…
//
// and then aborts (with the crash report, when on). Only the broken
// ownership mode or a bug frees a callback Python can still call.
//
// # Census
//
// TakeCensus counts the Go callbacks alive by name and creation site, the
// Python objects Go holds references to by Python type, and the GObjects
// duet tracks or watches by GType; Grew says what grew since an earlier
// census. An app opens the census window with app.Options.Census or
// Ctrl+Shift+C; the stress harness puts a census at the start and the end
// of each scenario in its report.
//
// # API
//
//	Crash reports   EnableCrashReports, CrashReportPath, CloseCrashReports,
//	                Crossings, EnableRing
//	Callbacks       SetProvenance, SetDebugCallbacks
//	Census          TakeCensus, Census, Count, Total, Census.Grew, Change,
//	                RegisterGObjects (for package widgets)
package forensics
