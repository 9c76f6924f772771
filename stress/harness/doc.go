// Package harness runs stress scenarios against a duet app and judges them:
// the reusable part of the stress command, for users who want to stress
// their own app.
//
// Each scenario runs in a child process (the same binary, with -child), so
// a crash is observed, not suffered. The child forces gc.collect() and
// runtime.GC() at a chosen pace (on the UI thread when a loop runs),
// reports samples as JSON lines (iterations, GC cycles on each side,
// callbacks, Python objects, RSS) and keeps a black box: a memory-mapped
// file holding its iteration count and last operations, which survives a
// crash between two samples. When the run ends the child settles (waits
// for the callbacks its workload made to be freed, and for the GObjects it
// dropped to be finalised) and reports once more. Each child writes a crash
// report (package forensics) unless DUET_CRASH_REPORT is set, and takes a
// census when its scenario starts (at Env.Baseline, after its set-up) and
// when it has settled.
//
// The parent shows progress (one live line on a terminal, plain lines
// otherwise), runs a watchdog, and judges: no crash, live callbacks back to
// the baseline, RSS slope under a bound, progress made. With the broken
// ownership mode the expected outcome is a crash, which the parent reports
// with its signal, iteration and last operations, the last boundary
// crossings and Python tracebacks from the crash report (kept, with
// -report, in the report's directory), and with DUET_DEBUG=callbacks the
// use-after-free diagnosis: which callback, made where, freed by whom,
// called by what. WriteReport writes report.json (with both censuses and
// what grew between them) and an SVG plot of RSS and live callbacks over
// time that names what grew.
//
//	func main() { os.Exit(harness.Main(os.Args[1:], []harness.Scenario{myScenario})) }
package harness
