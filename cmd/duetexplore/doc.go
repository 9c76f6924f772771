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
//
// The package is built with go build into a temporary directory (-exe
// takes a program already built). With no DISPLAY and no WAYLAND_DISPLAY,
// duetexplore runs itself again under xvfb-run -a: one X server for the
// exploration and every replay. The program runs with DUET_EXPLORE made
// from the flags, DUET_EXPLORE_OUT (the report's JSON lines) and
// DUET_EXPLORE_TRACE (each action as it starts and once done) in the
// temporary directory, DUET_CRASH_REPORT=1 (unless set: see package
// forensics), DUET_ALLOW_CRITICALS=1 and fatal-criticals taken out of
// G_DEBUG, so that a critical is a finding, not an abort.
//
// # Findings
//
// Those of the explorer (a Go panic, a Python exception, a GLib/GTK
// warning or critical, a stall, a hang, a leak: see package explore), and
// two only a parent sees: a crash (the process died of a signal, or exited
// with a status that is neither 0 nor 3; the message names the runtime's
// "SIGSEGV: segmentation violation" line when there is one, and the crash
// report's path is printed) and a hang (the process still running -hang
// plus -grace after its run's time: it gets SIGQUIT, for the Go runtime's
// goroutine dump in its stderr, then SIGKILL). The temporary directory,
// with each child's stderr, is kept after a crash or a hang (and with
// -keep).
//
// # Confirming and shrinking
//
// The first finding's trace is replayed in a fresh process
// (DUET_EXPLORE=replay=FILE: each recorded action done again on the widget
// at its recorded address, with its recorded input, at the same pace and
// with the same forced collections). When the replay meets the same kind
// of finding at the same place (explore.Finding.Same), the trace is shrunk
// by delta debugging (ddmin: chunks of it are removed as long as the rest,
// replayed, still meets it), within -shrink-time and -max-replays. The
// shrunk trace is printed in words and written as a replay file (-o, by
// default a new duetexplore-KIND-*.jsonl in the temporary directory of
// os.TempDir). -replay FILE replays a file once and says whether its
// finding came back. The action a crash interrupted is recorded before it
// was done, without its input: a crash in a typed text or a set value is
// replayed only as far as the action before.
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
// explorer's options the trace was recorded with, and fails while the
// same kind of finding at the same place comes back (with the finding's
// words), or the program meets other trouble, crashes or does not end; it
// fails too, saying the UI changed and the trace is to be recorded again,
// on a replay error; it passes when the replay runs clean. HASH is the
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
//	-no-leak        no leak check
//	-shrink-time D  bound on shrinking (2m); -max-replays N (200)
//	-o FILE         where the shrunk trace goes
//	-plot FILE      draw the run as SVG into FILE
//	-replay FILE    replay FILE once
//	-test[=DIR]     write the finding as a regression test into the package's directory (or DIR)
//	-exe PROGRAM    explore a program already built
//	-v              copy the program's stderr; -keep keeps the temporary directory
//
// # Exit status
//
// 0 when nothing was found, 3 when something was, 2 for a usage or build
// error, 1 when -replay could not replay its file (an address not found)
// and found nothing.
package main
