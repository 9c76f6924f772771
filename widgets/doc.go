// Package widgets is where Go and Python meet in the widget tree.
//
// # One object, two views
//
// A GObject can be seen from gotk4 (typed Go) and from PyGObject at once,
// through the same pointer: [Cast] gives gotk4's view of a PyGObject
// object (read from the wrapper), [ToPython] gives PyGObject's wrapper of
// a gotk4 object (PyGObject's C API, which keeps identity: one wrapper per
// object while it lives). [CallMethod] calls a Python method on a gotk4
// object, which is how Python widgets are packed into gotk4 containers.
//
// # Python widget code
//
// [LoadFile], [LoadFS] (go:embed) and [LoadSource] load Python modules; a
// [Module] instantiates classes with keyword arguments ([Module.New]), and
// a [Widget] reads and writes GObject properties (a value the property's
// spec does not allow, which GLib would drop with a warning, is an error),
// connects signals to Go funcs and calls methods, each checked for the UI
// thread; its Object field is the PyGObject object itself, for everything
// else pygi offers (unchecked: GTK's thread rule is then the caller's).
// Python exceptions come back as *pygi.Error with the traceback. In
// development (app.Options.Reload, DUET_RELOAD=1), a module loaded with
// LoadFile or LoadFS is applied to the running app whenever its file is
// saved: its classes and functions stay the same objects and take the new
// code (see "Reloading" in package app); an interface loaded with
// LoadUIFS is rebuilt and put back where the app placed it, its Go
// handlers bound again by name (see LoadUIFS).
// [DefineClass] makes a GObject class from Go: a subclass of a GTK or
// Python class whose methods and do_* virtual functions are Go funcs, with
// its own signals and properties. [LoadUI] builds a GtkBuilder file whose
// handlers are Go funcs. Package widgets/kit holds duet's ready-made
// Python widgets.
//
// # Lifetime: freed when both sides let go
//
// Three mechanisms make objects seen from both sides finalisable (each is
// explained next to its code):
//
//   - gotk4 v0.2.2 never releases its toggle reference on an object it
//     wrapped; duet releases it for the objects it tracks, synchronised with
//     gotk4's own finalizers (lifetime.go).
//   - An object whose Python wrapper holds a toggle reference (a Python
//     subclass instance with attributes) must not get a gotk4 wrapper too:
//     GLib notifies no toggle reference while two exist, so neither side
//     could let go. Cast refuses it with [ErrToggleTrap]; use its Python
//     side.
//   - Go handlers, connected any way, are disconnected when their window
//     is destroyed, which breaks the loop "window holds widget holds
//     handler holds window" that no collector can see (teardown.go).
//
// A window made with gotk4 (gtk.NewWindow, gtk.NewApplicationWindow) and
// closed is finalised with no call of yours: when a toplevel is destroyed,
// duet takes the window and every widget in it under its lifetime
// management, so gotk4's references go once nothing else holds them. The
// window is disposed then, not when it is destroyed (GTK 4 disposes a
// window at its last reference; a destroyed window can even be presented
// again), and by then gotk4 has let go of its Go side: gotk4's handlers on
// an object duet releases, win.ConnectDestroy's among them, are
// disconnected before the release and do not run (under gotk4 alone they
// never run either: the window is never disposed). To learn that a window
// closes, connect to close-request (win.ConnectCloseRequest); to learn
// that it is gone, wait on WatchFinalize(win).Done().
// [Track] does the same for a gotk4 object that never was in a window and
// that Python code sees (a model, a widget kept out of any window);
// objects that cross [Cast] or [ToPython] are tracked already.
// [WatchFinalize] observes finalisation; forensics.ReadStats counts.
//
// # Handlers that do not leak
//
// A Go handler that captures the widget it is connected to makes a loop
// neither collector can see: Python holds the handler (the signal
// connection), and the handler's Go closure holds the widget. Python's
// collector frees the same loop made of Python objects; it cannot look
// into a Go closure, and Go's cannot look into Python. So a handler never
// needs to capture a widget:
//
//   - It receives the emitter and the signal's arguments, as a Python
//     handler does: func(button *pygi.Object) { button.CallMethod(...) }.
//   - Anything else it needs is given at connect time, as PyGObject's
//     connect(signal, handler, *data) takes it: Widget.Connect(signal, fn,
//     data...) (or CallMethod("connect", signal, fn, data...)). PyGObject
//     holds the data, on the Python side, where cycles through it are
//     collected exactly as in PyGObject.
//   - When it must reach another object, it holds it weakly: [Weakly]
//     (label, func(label *gtk.Label, ...) {...}) is a handler that receives
//     the live label first and is skipped once it is gone, as gtk-rs'
//     clone!(#[weak] label, ...) writes it; [Weak] makes the [WeakRef]
//     itself, for a struct field say.
//
// Handlers connected any way (see package callbacks: every connection of
// a Go handler is recorded in one place) are also disconnected when their
// window is destroyed, which frees what they
// captured; a widget removed from a window that lives on is freed only if
// its handlers follow the idioms above. go run ./cmd/duetvet ./... reports
// handlers that capture the object they are connected to.
//
// # API
//
//   - GTK: [InitGTK] (app does it).
//   - The bridge: [Cast], [ToPython], [CallMethod]; [ErrToggleTrap],
//     [ErrNotGObject].
//   - Python code: [LoadFile], [LoadFS], [LoadSource], each a [Module]
//     ([Module.New]).
//   - Widgets: [Widget] ([Wrap]) with [Widget.Prop], [Widget.SetProp],
//     [Widget.CallMethod], [Widget.Connect], [Widget.ConnectAfter],
//     [Widget.Disconnect], [Widget.Emit], [Widget.Close] and
//     [Widget.PyObject] (a Widget passed to Python is its object).
//   - Weak captures: [Weakly]; [Weak] and its [WeakRef] ([WeakRef.Get]).
//   - Classes from Go: [DefineClass] with a [ClassSpec], its [Signal] and
//     [Property] values.
//   - UI files: [LoadUI], [LoadUIFS], a [UI] ([UI.Object]): GtkBuilder
//     interfaces (Python widget classes welcome) whose handlers are Go
//     funcs, checked by name when loaded.
//   - Typed wrappers: go run github.com/duet-gtk/duet/cmd/duetgen (from go
//     generate) writes a Go type for a Python widget class: typed
//     properties, Connect<Signal> and methods, checked by the compiler. Its
//     [Generated] checks the class as loaded against the one it was
//     generated from ([Generated.Check], [ErrStaleWrapper]).
//   - Lifetime: [Track], [WatchFinalize] and its [Watch] ([Watch.Done],
//     [Watch.Finalized]).
//
// Threads: everything that touches GTK is UI-thread only and returns an
// error wrapping eventloop.ErrNotMain elsewhere: InitGTK, Cast, ToPython,
// CallMethod, the loaders, Module.New, the Widget methods but Close and
// PyObject, DefineClass, LoadUI, LoadUIFS, UI.Object, Generated.Check and
// Track. Safe from any goroutine: WatchFinalize, Weak, WeakRef.Get, Weakly
// (the handler it makes runs where it is called), Widget.Close and
// Widget.PyObject.
package widgets
