// Package widgets is where Go and Python meet in the widget tree.
//
// # One object, two views
//
// A GObject can be seen from gotk4 (typed Go) and from PyGObject at once,
// through the same pointer: ToGo and Cast give gotk4's view of a PyGObject
// object (read from the wrapper), ToPython gives PyGObject's wrapper of a
// gotk4 object (PyGObject's C API, which keeps identity: one wrapper per
// object while it lives). Call invokes a Python method on a gotk4 object,
// which is how Python widgets are packed into gotk4 containers.
//
// # Python widget code
//
// LoadFile, LoadFS (go:embed) and LoadSource load Python modules; a Module
// instantiates classes with keyword arguments, and a Widget reads and
// writes GObject properties (a value the property's spec does not allow,
// which GLib would drop with a warning, is an error), connects signals to
// Go funcs and calls methods. Python exceptions come back as *pygi.Error with the traceback.
// DefineClass makes a GObject class from Go: a subclass of a GTK or Python
// class whose methods and do_* virtual functions are Go funcs, with its own
// signals and properties. Library holds duet's ready-made Python widgets:
// LineChart (a live chart drawn with cairo, fed from any goroutine) and
// LogView.
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
//     could let go. ToGo and Cast refuse it with ErrToggleTrap; use its
//     Python side and Call.
//   - Go handlers connected with Widget.Connect are disconnected when their
//     window is destroyed, which breaks the loop "window holds widget holds
//     handler holds window" that no collector can see (teardown.go).
//
// WatchFinalize and WatchFinalizePy observe finalisation; ReadStats counts.
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
//   - When it must reach another object, it captures a WeakRef (Weak),
//     which does not keep the object alive and reports it gone. Weakly
//     writes such a handler in one step: Weakly(label, func(label
//     *gtk.Label, ...) {...}) is a handler that receives the live label
//     first and is skipped once it is gone.
//
// Handlers connected any way (Widget.Connect, or PyGObject's connect,
// connect_after, connect_object and connect_object_after) are also
// disconnected when their window is destroyed, which frees what they
// captured; a widget removed from a window that lives on is freed only if
// its handlers follow the idioms above. go run ./cmd/duetvet ./... reports
// handlers that capture the object they are connected to.
//
// # API
//
//	The bridge        ToGo, Cast[T], ToPython, Call, Pointer, ErrToggleTrap,
//	                  ErrNotGObject
//	Python code       LoadFile, LoadFS, LoadSource, Module.New, Library
//	                  (shared: Close on it does nothing)
//	Widgets           Widget (Wrap): Prop, SetProp, Connect, Disconnect, Emit;
//	                  Weak (WeakRef.Get) and Weakly for weak captures
//	Classes from Go   DefineClass, ClassSpec, Signal, Property
//	UI files          LoadUI, LoadUIFS, UI.Object: GtkBuilder interfaces
//	                  (Python widget classes welcome) whose handlers are Go
//	                  funcs, checked by name when loaded
//	Ready-made        NewLineChart (Push, and generated: PushMany, Points,
//	                  Series, Clear, Title, ...), NewLogView (Log, Printf, and
//	                  generated: Text, LineCount, MaxLines, ...)
//	Typed wrappers    go run ../cmd/duetgen (go generate) writes a Go type for
//	                  a Python widget class: typed properties, Connect<Signal>
//	                  and methods, checked by the compiler; Generated and
//	                  ErrStaleWrapper: the wrapper checks the class as loaded
//	                  against the one it was generated from
//	Lifetime          Track, Reap, WatchFinalize, WatchFinalizePy, Watch,
//	                  ReadStats
//	Census window     ShowCensus, CloseCensus: package forensics' live census
//	                  as a window (app.Options.Census puts it on Ctrl+Shift+C);
//	                  the GObjects table counts what Track and the watches see
//
// Threads: everything that touches GTK is UI-thread only and returns an
// error wrapping eventloop.ErrNotMain elsewhere: ToGo, Cast, ToPython,
// Call, the loaders, Module.New, Library, the Widget methods, DefineClass,
// LoadUI, LoadUIFS, UI.Object, Generated.Check,
// NewLineChart, NewLogView, Points, Text, Track, Reap, InitGTK,
// ShowCensus and CloseCensus. Safe from
// any goroutine: Pointer, WatchFinalize, WatchFinalizePy, ReadStats, Weak,
// Weakly and LineChart.Push, LogView.Log and Printf (batched onto the loop).
package widgets
