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
// Run blocks on the main thread in g_application_run, which is the event
// loop (eventloop.Drive): Invoke, timers and the release of Python references
// work through it, and SIGINT or SIGTERM quits gracefully. When it returns,
// shutdown follows the order that keeps two garbage collectors from
// crashing each other at exit: timers cancelled; remaining windows destroyed
// and their disposal run while Python is alive; Go's references to Python
// released and drained; Py_FinalizeEx on the main thread, after waiting
// (bounded) for Python calls still in flight on other goroutines. After
// that, Python calls from any goroutine return pygi.ErrFinalized, and the
// process exits normally.
//
//	a, err := app.New(app.Options{ID: "org.example.Hello"})
//	...
//	a.OnActivate(func() {
//		win := gtk.NewApplicationWindow(a.Gtk())
//		win.Present()
//	})
//	os.Exit(a.Run(os.Args))
package app
