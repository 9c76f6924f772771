// Package app is what a duet program's main is written with: one GTK
// application shared by Go and Python, run on the main thread, shut down in
// order.
//
// The application is created through PyGObject (a Gtk.Application, or an
// Adw.Application when asked for) and is reachable from both sides: Python
// gets the PyGObject object, Go gets gotk4's view of the same GObject, so
// windows made in Go (gtk.NewApplicationWindow(a.Gtk())) and in Python
// (Gtk.ApplicationWindow(application=a.Python())) belong to the same app.
// Handlers (activate, startup, shutdown, command-line) are Go funcs that
// become callbacks owned by Python through the signal connection.
//
// [App.Run] blocks on the main thread in g_application_run, which is the
// event loop (eventloop.Drive): Invoke, timers and the release of Python
// references work through it, and SIGINT or SIGTERM quits gracefully (the
// exit status is then 130 or 143, as a shell reports). When it returns,
// shutdown follows the order that keeps two garbage collectors from
// crashing each other at exit: timers cancelled; every remaining toplevel
// window destroyed and its disposal run while Python is alive; duet's own
// handlers on objects that outlive Python disconnected; Go's references to
// Python released and drained; Py_FinalizeEx on the main thread, after
// waiting, at most Options.FinalizeTimeout, for Python calls still in
// flight on other goroutines and for Python threads that are not daemons.
// After that, Python calls from any goroutine return pygi.ErrFinalized,
// GTK can still be used from Go (an error dialog after the app, say), and
// the process exits normally. If Python cannot be finalised in time, Run
// says why on stderr (which calls, which threads) and returns 1, and
// Python stays (goroutines see it open); if its final flush failed, Run
// returns 120, as python3 exits.
//
// # Signals and the process
//
// The program owns the process: Run owns SIGINT and SIGTERM only while it
// runs (Options.HostSignals declines even that, for a program with its own
// handling, which can end Run through Run's context), and never
// calls os.Exit. A UI thread that does not come back within the grace
// (see package eventloop), or a second signal, hands the signal back to
// the process: it then does what it does in the program without duet.
//
// # Exploring
//
// DUET_EXPLORE=seed=N,duration=30s,gc=20ms (the options of
// explore.ParseOptions) makes Run, and so Main, start package explore's
// explorer after the first activation, on any program and without a
// rebuild: it acts on the program's windows and actions as a user would,
// with both collectors forced between the actions, until its time is up or
// it finds something (a Go panic, a Python exception, a GLib/GTK warning
// or critical, a stall, a leak). Then it quits the application, prints its
// report on stderr (each finding with the actions that led to it), writes
// it as JSON lines to the file DUET_EXPLORE_OUT names, if set, and Run
// returns 3 when it found something. DUET_EXPLORE_TRACE, if set, names a
// file that gets each action as JSON lines as it goes (before it is done
// and once done), each finding when it is made, a heartbeat every second
// ({"beat": n}, from a goroutine of its own: it stops only when the whole
// process does) and, last, {"end": "done"} once the report is written or
// {"end": "hang"} after a hang the explorer reported (the program may
// never end), for a parent that must know what a crashed or stuck process
// was doing (cmd/duetexplore). DUET_EXPLORE=replay=FILE replays a recorded
// trace instead. Unset, DUET_EXPLORE costs one lookup of the environment.
//
// # API
//
//   - Making it: [Main] (the whole main function of a typical app), or
//     [New] with [Options], then [App.Run]; the [App].
//   - Both views: [App.Python] (the PyGObject object), [App.Gtk] (gotk4's).
//   - Handlers: [App.OnActivate], [App.OnStartup], [App.OnShutdown],
//     [App.OnCommandLine].
//   - Running: [App.Run], [App.Quit], [App.Hold], [App.Release],
//     [App.Windows].
//   - Actions: [App.AddAction] (app.<name>, with accelerators).
//   - Forensics: Options.CrashReport (crash reports, see package
//     forensics) and Options.Census (the census window on Ctrl+Shift+C;
//     DUET_CENSUS=1 without a rebuild).
//
// Threads: Main, New and Run run on the main thread; Hold and Release on
// the UI thread (elsewhere they return an error wrapping
// eventloop.ErrNotMain). Quit, Python, Gtk, Windows and the On* handlers
// are safe from any goroutine (Windows, AddAction and On* hop to the loop
// when it runs).
//
//	func main() {
//		os.Exit(app.Main(app.Options{ID: "org.example.Hello"}, func(a *app.App) error {
//			win := gtk.NewApplicationWindow(a.Gtk())
//			win.SetTitle("Hello")
//			win.Present()
//			return nil
//		}))
//	}
package app
