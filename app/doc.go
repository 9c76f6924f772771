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
// it as JSON lines to the file DUET_EXPLORE_OUT names, if set, draws the
// run as SVG (actions, live callbacks, RSS and findings on one timeline:
// explore.Report.WritePlot) to the file DUET_EXPLORE_PLOT names, if set,
// and Run returns 3 when it found something (1, with the error on stderr,
// when the explorer failed: it could not list or act on the widgets, say).
// DUET_EXPLORE_TRACE, if set, names a
// file that gets each action as JSON lines as it goes (before it is done
// and once done), each finding when it is made, a heartbeat every second
// ({"beat": n}, from a goroutine of its own: it stops only when the whole
// process does) and, last, {"end": "done"} once the report is written,
// {"end": "hang"} after a hang the explorer reported (the program may
// never end), {"end": "error", "error": why} when the explorer failed
// (no report) or {"end": "not started"} when it never started (the
// application was never activated), for a parent that must know what a crashed or stuck process
// was doing (cmd/duetexplore). DUET_EXPLORE=replay=FILE replays a recorded
// trace instead. Unset, DUET_EXPLORE costs one lookup of the environment.
//
// # Reloading
//
// Options.Reload, or DUET_RELOAD=1 without a rebuild, is a development
// mode: while Run runs, duet watches the Python files the app loaded
// (widgets.LoadFile's, and widgets.LoadFS's on disk: in Options.ReloadDir,
// else found next to the code that called LoadFS or Main, which is where
// go:embed took them from under go run) with the OS's file notifications
// (fsnotify; no polling), and applies each save to the running app, on the
// UI thread between two events:
//
//   - The module runs again, in its own namespace. Functions keep their
//     identity and take the new code (fn.__code__), so what holds them, a
//     signal connection, a bound method, a Go-connected widget's handler,
//     runs the new code at its next call. Other module values are rebound,
//     as importlib.reload does (state meant to survive a reload reads
//     itself back: cache = globals().get("cache", {})); module-level code
//     runs again, side effects included (a signal it connects is connected
//     once more).
//   - A class the module has already, GObject subclasses included, stays
//     the same class (its GType stays registered, its instances stay what
//     they are): its methods, do_* virtual functions (GTK calls them
//     through closures PyGObject made when the class was registered),
//     static and class methods, property getters and Gtk.Template
//     callbacks take the new code; new plain methods are added, removed
//     ones deleted, class attributes set; its decorators do not run again.
//     The widgets in windows whose class the module defines are then
//     queued to be measured and drawn again: GTK keeps each widget's last
//     drawing until asked, so a changed do_snapshot would not show.
//   - What a running process cannot take is said in the same line as
//     needing a restart, and left as it is: a property or signal added,
//     removed or changed, __gtype_name__ or the bases changed, a virtual
//     function added or removed, __init__ changed while instances exist
//     (they keep what the old one did).
//   - A save that does not compile or raises while the module runs
//     changes nothing of the module: the old code keeps running, and the
//     error is said with its traceback; the next good save applies. (What
//     its code did to other objects before it raised stays done, and a
//     Python thread running meanwhile may see the module half-way.)
//
// Each reload says one line on stderr ("duet reload: feed.py: applied (1
// function, 2 methods)", "...: kept the old code: SyntaxError: ...
// (traceback follows)", "...: restart needed: FeedRow: property 'count'
// added") and logs it with slog.Default() (unless that is Go's default
// logger writing to stderr: the line is there already). Off, reloading
// costs nothing: no watcher, no goroutine, no wakeup (the loaders keep a
// small record per file either way). widgets.LoadSource's modules have no
// file and are not watched, nor are widgets.LoadUI's interfaces (XML
// text); rebuilding Python widgets made before a change is not done.
//
// A .ui file loaded with widgets.LoadUIFS is watched the same way (found
// on disk as LoadFS's files are): a save builds it again with the same Go
// handlers, checked as at load (a handler name with no Go func, or a Go
// func it no longer names, keeps the old interface), and each of its
// top-level objects that is placed (a widget with a parent, a window
// shown) is replaced by the new one where it is: a shown window stays and
// takes the new window's child; UI.Object then gives the new objects,
// while a *widgets.Widget the app kept is the old one, out of the window
// (see widgets.LoadUIFS). The line says "applied (2 objects rebuilt)".
//
// While the last reload of some file failed, each visible window shows a
// small red banner over the top of its content with the error line (one
// per failing file), until the file is fixed. It is a Gtk.Overlay put
// between the window and its child only while the banner shows: meanwhile
// window.get_child() is that overlay (widget name "duet-reload-banner"),
// whose child is the app's, and the app's child is put back when the
// banner goes (moved twice, it loses the keyboard focus). The banner takes
// no clicks: what is under it can be used. A window made and shown while
// the failure stands gets the banner too (once the callback that made it
// returns; one made then and shown later, at the next reload).
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
//   - Development: Options.Reload and Options.ReloadDir (Python files
//     applied to the running app as they are saved; DUET_RELOAD=1 without
//     a rebuild; see Reloading).
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
