// Package looptest runs tests against duet's event loop: the loop runs on
// the main OS thread (as GTK requires) while the tests run on goroutines and
// post work to it. For app authors as much as for duet itself:
//
//	func TestMain(m *testing.M) { looptest.Main(m) }
//
//	func TestButton(t *testing.T) {
//		looptest.FailOnPythonExceptions(t)
//		base := looptest.Settle(t)
//		looptest.Do(t, func(t testing.TB) {
//			... GTK work on the UI thread; require.* is fine on this t ...
//		})
//		assert.Equal(t, base, looptest.Settle(t), "every handler was freed")
//	}
//
// With no display, Main re-runs the test binary under xvfb-run (when it is
// installed), so GTK tests work headless with plain `go test`.
//
// GLib and GTK criticals (a g_return_if_fail that fails: a bad argument to
// GTK, a widget used after it was destroyed) abort the test binary, as
// G_DEBUG=fatal-criticals does for PyGObject's own test suite, with a crash
// report naming the crossing that caused it; processes the tests start
// inherit G_DEBUG. DUET_ALLOW_CRITICALS=1 turns that off. An app run by
// hand gets the same with G_DEBUG=fatal-criticals in its environment.
//
// Main finalises Python after its loop has returned, never during it.
//
// # API
//
//   - Running: [Main] (from TestMain).
//   - On the loop: [Do] (work on the loop, with a testing.TB whose
//     FailNow is safe there), [Turn] (a barrier: what was posted before it
//     has run); [Timeout] bounds both, and Settle.
//   - Lifetimes: [Settle] (both collectors and duet's reaping until nothing
//     changes; the live callbacks then).
//   - Python exceptions: [FailOnPythonExceptions], [CatchPythonExceptions]
//     and its [Exceptions] ([Exceptions.All]).
package looptest
