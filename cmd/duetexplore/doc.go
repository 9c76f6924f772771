// Command duetexplore explores a duet app from outside: it builds it, runs
// it in a child process with package explore's explorer on (DUET_EXPLORE),
// catches what the explorer finds and what kills the process, confirms a
// finding by replaying its trace in a fresh process, shrinks the trace to
// a short one that still gives it, and writes that as a replay file.
//
//	go run github.com/duet-gtk/duet/cmd/duetexplore [flags] ./path/to/app [app arguments]
//	go run github.com/duet-gtk/duet/cmd/duetexplore -exe ./built-app [flags]
//	go run github.com/duet-gtk/duet/cmd/duetexplore -replay trace.jsonl ./path/to/app
//	go run github.com/duet-gtk/duet/cmd/duetexplore -test ./path/to/app
//	go run github.com/duet-gtk/duet/cmd/duetexplore -keep-going -duration 5m ./path/to/app
//
// The package is built with go build into a temporary directory (-exe
// takes a program already built). With no DISPLAY and no WAYLAND_DISPLAY,
// duetexplore starts an X server for itself (see The display and signals).
// The program runs with DUET_EXPLORE made
// from the flags, DUET_EXPLORE_OUT (the report's JSON lines) and
// DUET_EXPLORE_TRACE (each action as it starts and once done, each
// finding as it is made, a heartbeat every second; see package app) in the
// temporary directory, DUET_CRASH_REPORT=1 (unless set: see package
// forensics), DUET_ALLOW_CRITICALS=1 and fatal-criticals taken out of
// G_DEBUG, so that a critical is a finding, not an abort.
//
// # The display and signals
//
// Without a display, duetexplore starts Xvfb as its own child (-displayfd:
// the server takes a free display and says which once it accepts
// connections), reachable with a fresh cookie in a private directory
// (XAUTHORITY, as xvfb-run does), for the exploration and every replay,
// and ends it (SIGTERM, so that it removes its socket) and the directory
// when it ends. It does not run itself again under xvfb-run: the process
// the user started would then be xvfb-run's shell, and a signal to it
// would leave the driver, the program and the server running, with their
// files in /tmp; here the driver stays the process the user started.
//
// SIGINT, SIGTERM or SIGHUP to it ends the run: the program (SIGKILL to its
// process group), then the X server; the status is then 128 plus the
// signal's number (130, 143), as a shell reports it. A second signal ends
// the driver at once; the program and the X server still go with it (the
// kernel signals them when their parent dies). Each program runs in a
// process group of its own, killed once it ends (whatever ended it), so
// that what it started (a helper, a subprocess) does not outlive it;
// with -v, its output is copied for at most a second after it ended (a
// process it started may hold the pipe open).
//
// # Findings
//
// Those of the explorer (a Go panic, a Python exception, a GLib/GTK
// warning or critical, a stall, a hang, a leak: see package explore;
// -ignore-log REGEXP takes the GLib/GTK messages it matches out, for the
// toolkit's own warnings a program cannot help, and the message a finding
// is made of, "Gtk-WARNING: ...", is what it matches), and
// two only a parent sees: a crash (the process died of a signal, or exited
// with a status that is neither 0 nor 3; the message names the runtime's
// "SIGSEGV: segmentation violation" line when there is one, and the crash
// report's path is printed; once package app set up the explorer: see
// below) and a hang. A hang is said three ways, and
// each time the process gets SIGQUIT, for the Go runtime's goroutine dump
// in its stderr, then, 2 s later, SIGKILL:
//
//   - the explorer's own: the UI thread did not come back within -hang
//     (the explorer writes its report, with the action that never
//     returned last, and says so on DUET_EXPLORE_TRACE: the program is
//     ended at once, its report is the finding);
//   - no progress: the process, once it has streamed its first heartbeat,
//     streams neither an action nor its heartbeat for -hang plus 3 s
//     before its end line (the whole process is stuck: stopped,
//     or its Go runtime wedged, so that the explorer cannot report; "no
//     progress for N s"); a stopped process (SIGSTOP) gets SIGCONT before
//     the SIGQUIT, which it would only keep pending, and what it writes
//     once continued is not taken (the streamed trace and findings up to
//     the silence are);
//   - late: the process still runs -hang plus -grace after its run's time
//     (the explorer is done, the program does not end).
//
// The temporary directory, with each child's stderr, is kept after a
// crash or a hang (and with -keep).
//
// Two ends are neither a finding nor a clean run, and each is said with
// the end of the child's stderr and has its own exit status (-keep-going
// goes on no further then, and settles what it found before): the
// explorer failed (explore.Run returned an error, a getter that raised
// while it listed the widgets, say: package app then exits 1 and says
// "error" on DUET_EXPLORE_TRACE's end line, with no report), and the
// program did not start: it exited (not of a signal) before package app
// set up the explorer (no line on DUET_EXPLORE_TRACE: its options or its
// flags refused, a setup that failed), it ended without ever starting
// the explorer (the application never activated: "not started" on the
// end line), or it never ran one (no trace and no report: a program that
// does not run app.Main or App.Run). Such a program is not a crash: there
// is no action to replay.
//
// # Confirming and shrinking
//
// The first finding's trace (each one's, with -keep-going) is replayed in
// a fresh process (DUET_EXPLORE=replay=FILE, FILE quoted as a Go string
// when it has a comma or a quote, as a TMPDIR may: each recorded action done
// again on the widget at its recorded address, with its recorded input,
// at the same pace and with the same forced collections). When the replay meets the same kind
// of finding at the same place (explore.Finding.Same), the trace is shrunk:
// first to its shortest ending that still meets it (its last 1, 2, 4, ...
// actions: a long trace's trouble is mostly in its last ones), then by
// delta debugging (ddmin: chunks of it are removed as long as the rest,
// replayed, still meets it), within -shrink-time and -max-replays. The
// shrunk trace is printed in words and written as a replay file (-o, by
// default a new duetexplore-KIND-*.jsonl in the temporary directory of
// os.TempDir). -replay FILE replays a file once and says whether its
// finding came back (with the explorer's options of the flags: give it the
// -stall, -hang and -leak-* the run had). It refuses, before it builds
// anything, a file that is not a whole replay file: an empty one, one cut
// short (a replay file ends with its summary line, which counts the
// actions and findings before it: a file without it, or whose counts do
// not match, lost lines), a DUET_EXPLORE_TRACE stream, a line that is not
// JSON. The action a crash interrupted
// is recorded before it was done, with its input (chosen before the action
// runs), so a crash in a typed text or a set value replays too.
//
// # The plot
//
// With -plot FILE, the exploring run (with -replay, the replay) is drawn
// as SVG into FILE (explore.Report.WritePlot: the actions so far, the live
// Go callbacks and the RSS on one timeline, each finding a red mark
// labelled with its kind, under a title with the seed, the duration, the
// actions per second and the coverage), from the samples in the program's
// report. A program that died before its report (a crash, a hang) has no
// samples: its plot has the actions of the trace it streamed, and the
// crash or hang at its last action. Without -plot, no plot is drawn.
// With -keep-going, each child's run is drawn into a file of its own,
// FILE with -N before its extension (run.svg: run-1.svg, run-2.svg, ...,
// N counting the children from 1): each child is a process of its own,
// with its own seed, clock and memory, whose timelines would not join.
//
// # Every finding of a run
//
// With -keep-going the run goes on after a finding to the end of
// -duration: the child is told keep-going (so are the replays, so that a
// finding met after another is met again), and after a crash or a hang
// of the child (or a program that ended by itself before the time was
// up), a fresh child takes the next seed for the time left (none for less
// than 1 s; none either once two children in a row ended by themselves
// without an action). What a child found before it died is known from
// its streamed findings. Each distinct finding (explore.Finding.Distinct:
// the same kind, place and message, numbers and addresses in it aside,
// and for a stall or a hang the same action running; the same trouble
// again counts as a repeat; the looser explore.Finding.Same, which would
// take any two stalls for one, is only what a replay must meet again) is
// then confirmed, shrunk and
// written (-o names a directory then: duetexplore-KIND-N.jsonl in it),
// with -test as a regression test each, and a summary lists them all:
// the shrunk trace in words, when it was first met and with which seed,
// the files. make explore runs it on every example.
//
// # Regression tests
//
// With -test, a confirmed and shrunk finding is written into the explored
// package's directory (-test=DIR: into DIR) as two files to commit:
// testdata/duetexplore-KIND-HASH.jsonl, the shrunk trace as a replay
// file, and duetexplore_KIND_HASH_test.go, a test in the package (its
// name read from the directory's Go files) that uses the standard library
// only. It builds the package, runs it on that file (under xvfb-run -a
// when there is no display; skipped when there is neither), with the
// explorer's options the trace was recorded with and the app arguments
// the exploration was given (a relative path is the test's, in the
// package's directory), and fails while the same kind of finding at the
// same place comes back (with the finding's words), or the program meets
// other trouble, crashes or does not end; it fails too, saying "the UI
// changed: recorded action N (its words) not found" and that the trace is
// to be recorded again, on a replay error; it passes when the replay runs
// clean. Its replay is strict (DUET_EXPLORE's strict,
// explore.Options.ReplayStrict): a recorded address not found is a replay
// error, where confirming, shrinking and -replay take the one widget with
// the recorded structural key instead (a label that counts its clicks).
// After a change of the UI that key may name another widget (a button put
// before the recorded one): the test would click it, miss the bug, and
// pass. Each kind: a crash is the replayed
// program dying of a signal (or a status other than 0 and 3) again; a
// hang is the program killed (the explorer reported the hang, or it made
// no progress for -hang plus 3 s, as above, or it still ran long after
// its replay's time); the others (a panic, an exception, a log message, a
// stall, a leak) are the finding in the replay's report. HASH is the
// start of the trace file's SHA-256.
//
// # Flags
//
//	-seed N         the run's seed (default: from the clock)
//	-duration D     how long to explore (30s)
//	-pace D         pause between two actions (5ms)
//	-gc D|off       how often both collectors are forced (50ms)
//	-stall D        a stall's threshold (1s); -hang D a hang's (10s)
//	-grace D        the margin after the run's time before a hang (30s)
//	-actions N      bound on the actions (0: none)
//	-no-leak        no leak check; -leak-every N, -leak-rounds N the leak check's census
//	                period and rounds (the explorer's defaults: 20, 5)
//	-keep-going     every finding of the run, not just the first
//	-shrink-time D  bound on shrinking (2m); -max-replays N (200)
//	-o FILE         where the shrunk trace goes (with -keep-going: a directory)
//	-plot FILE      draw the run as SVG into FILE
//	-replay FILE    replay FILE once
//	-test[=DIR]     write the finding as a regression test into the package's directory (or DIR)
//	-exe PROGRAM    explore a program already built
//	-v              copy the program's stderr; -keep keeps the temporary directory
//
// A count of 0 is its default or no bound; a negative count, or a
// duration that is not positive, is a usage error.
//
// # Exit status
//
// 0 when nothing was found, 3 when something was (with -keep-going: any
// of the run's findings, confirmed or not), 2 for a usage or build
// error (or an X server that would not start), 1 when -replay could not replay its file (an address not found)
// and found nothing, 4 when the explorer failed, 5 when the program did
// not start (see Findings), 6 when -replay's file is not a whole replay
// file, and 128 plus the signal's number after SIGINT, SIGTERM or SIGHUP.
package main
