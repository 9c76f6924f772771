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
// for the callbacks its workload made to be freed) and reports once more.
//
// The parent shows progress (one live line on a terminal, plain lines
// otherwise), runs a watchdog, and judges: no crash, live callbacks back to
// the baseline, RSS slope under a bound, progress made. With the broken
// ownership mode the expected outcome is a crash, which the parent reports
// with its signal, iteration and last operations. WriteReport writes
// report.json and an SVG plot of RSS and live callbacks over time.
//
//	func main() { os.Exit(harness.Main(os.Args[1:], []harness.Scenario{myScenario})) }
package harness
