package widgets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
)

// Module is Python widget code loaded into the embedded interpreter.
type Module struct {
	*pygi.Object // the module object
	Name         string
}

// LoadFile loads a Python source file as a module. Like every loader, UI
// thread only: widget code may make widgets as it is imported.
func LoadFile(file string) (*Module, error) {
	if err := eventloop.RequireMain("widgets.LoadFile"); err != nil {
		return nil, err
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	name := moduleName(file)
	m, err := load(name, string(src), file)
	if err == nil {
		reload.LoadedFile(name, file, string(src))
	}
	return m, err
}

// LoadFS loads a Python source file from a file system, for example one
// embedded in the Go binary with go:embed.
func LoadFS(fsys fs.FS, file string) (*Module, error) {
	if err := eventloop.RequireMain("widgets.LoadFS"); err != nil {
		return nil, err
	}
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	name := moduleName(file)
	m, err := load(name, string(src), file)
	if err == nil {
		// Where the files of an fs.FS are on disk is the reload watcher's
		// guess; the directory of the code that loads them is a good one
		// (go:embed's files are next to the code that embeds them).
		var dir string
		if _, caller, _, ok := runtime.Caller(1); ok && filepath.IsAbs(caller) {
			dir = filepath.Dir(caller)
		}
		reload.LoadedFS(name, fsys, file, string(src), dir)
	}
	return m, err
}

// LoadSource loads Python source text as a module called name.
func LoadSource(name, src string) (*Module, error) {
	if err := eventloop.RequireMain("widgets.LoadSource"); err != nil {
		return nil, err
	}
	m, err := load(name, src, "<"+name+">")
	if err == nil {
		reload.Unloaded(name)
	}
	return m, err
}

func moduleName(file string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(file, "\\", "/")), ".py")
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, base)
}

// load runs src as module name; the module goes into sys.modules so that
// other Python code can import it. A Python exception (a syntax error too)
// is returned as a *pygi.Error carrying the traceback. UI thread (its
// callers check).
func load(name, src, filename string) (*Module, error) {
	if name == "" {
		return nil, errors.New("widgets: empty module name")
	}
	if err := requireGtk(); err != nil {
		return nil, err
	}
	if name != teardownModule {
		if err := hookConnect(); err != nil {
			return nil, err
		}
	}
	m, err := pygi.ExecModule(name, src, filename)
	if err != nil {
		return nil, fmt.Errorf("widgets: loading %s: %w", filename, err)
	}
	return &Module{Object: m, Name: name}, nil
}

// requireGtk pins GTK 4 before widget code imports Gtk.
func requireGtk() error { return pygi.RequireVersion("Gtk", "4.0") }

// New instantiates the module's class with keyword arguments (GObject
// properties, for GObject classes: those that name a property are checked
// against it as SetProp checks them). A Python exception in the
// constructor is returned with its traceback.
func (m *Module) New(class string, kw pygi.Kw) (*Widget, error) {
	if err := eventloop.RequireMain("widgets.Module.New"); err != nil {
		return nil, err
	}
	cls, err := m.Attr(class)
	if err != nil {
		return nil, fmt.Errorf("widgets: module %s has no class %s: %w", m.Name, class, err)
	}
	defer cls.Close()
	_, build, err := propertyFuncs()
	if err != nil {
		return nil, err
	}
	// The constructor's property values are checked as SetProp checks
	// them: GLib would construct with the default and a warning.
	o, err := build.Call(cls, kw)
	if err != nil {
		return nil, fmt.Errorf("widgets: %s.%s(): %w", m.Name, class, err)
	}
	return &Widget{o}, nil
}

// Widget is a GObject seen from Python (PyGObject), with the operations Go
// code needs most, each checked for GTK's thread rule: they are UI thread
// only and return an error wrapping eventloop.ErrNotMain elsewhere (Close
// and PyObject excepted). Object is the PyGObject object itself, for the
// rest of what pygi offers; its methods are not checked, so GTK's rule is
// then the caller's to keep.
type Widget struct {
	Object *pygi.Object
}

// Wrap makes a Widget of a PyGObject object; the Widget owns o (Close
// closes it).
func Wrap(o *pygi.Object) *Widget { return &Widget{Object: o} }

// obj is the object, nil for a nil Widget (pygi then says ErrNilObject).
func (w *Widget) obj() *pygi.Object {
	if w == nil {
		return nil
	}
	return w.Object
}

// Close releases the Widget's reference (pygi.Object.Close). Any goroutine.
func (w *Widget) Close() error { return w.obj().Close() }

// PyObject makes a Widget passed to Python (a call argument, a property
// value, an item) its PyGObject object: pygi.Converter.
func (w *Widget) PyObject() (*pygi.Object, error) {
	if o := w.obj(); o != nil {
		return o, nil
	}
	return nil, pygi.ErrNilObject
}

// CallMethod calls the Python method name (a dotted path too) with args,
// as pygi.Object.CallMethod does, on the UI thread.
func (w *Widget) CallMethod(name string, args ...any) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.Widget.CallMethod"); err != nil {
		return nil, err
	}
	return w.obj().CallMethod(name, args...)
}

// Prop reads a GObject property.
func (w *Widget) Prop(name string) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.Widget.Prop"); err != nil {
		return nil, err
	}
	return w.CallMethod("get_property", name)
}

// SetProp writes a GObject property. A value the property's spec does not
// allow (out of its range, NaN, a fraction for an integer, not a value of
// its enum, ...) is refused with a Python ValueError that names the
// property, the value and what the spec allows, where GLib would print a
// warning and drop the write; a property that does not exist, is
// read-only or construct-only, or a value of the wrong type is PyGObject's
// TypeError.
func (w *Widget) SetProp(name string, value any) error {
	if err := eventloop.RequireMain("widgets.Widget.SetProp"); err != nil {
		return err
	}
	if w.obj() == nil {
		return pygi.ErrNilObject
	}
	set, _, err := propertyFuncs()
	if err != nil {
		return err
	}
	r, err := set.Call(w.Object, name, value)
	r.Close()
	return err
}

// propFuncs are the checked property writes of internal/capi (set_property
// and construct), made on first use and kept for the interpreter's life.
var propFuncs struct {
	mu         sync.Mutex
	set, build *pygi.Object
}

func propertyFuncs() (set, build *pygi.Object, err error) {
	propFuncs.mu.Lock()
	defer propFuncs.mu.Unlock()
	if propFuncs.set == nil {
		// Through the gate, as every entry into Python: Finalize must see
		// this call in flight.
		if err := lifetime.Enter(); err != nil {
			return nil, nil, err
		}
		ref, st, exc := capi.PropertyFuncs()
		var pair *pygi.Object
		if st == capi.OK {
			pair = pyobj.Owned(ref)
		} else {
			err = pyobj.Error(exc) // inside the entry, as it must be
		}
		lifetime.Exit()
		if err != nil {
			return nil, nil, err
		}
		defer pair.Close()
		var b pygi.Block
		set, build := b.Item(pair, 0), b.Item(pair, 1)
		if err := b.Err(); err != nil {
			return nil, nil, err
		}
		pyobj.Keep(set)
		pyobj.Keep(build)
		propFuncs.set, propFuncs.build = set, build
	}
	return propFuncs.set, propFuncs.build, nil
}

// Connect connects fn (any Go func; see package callbacks for how it is
// adapted) to a signal and returns the handler id: callbacks.Connect on
// the widget, which says what fn receives and who owns it. When the
// window the widget is in is destroyed, duet disconnects it.
func (w *Widget) Connect(signal string, fn any, data ...any) (uint64, error) {
	return w.connect("widgets.Widget.Connect", signal, fn, false, data)
}

// ConnectAfter is Connect after the signal's default handler.
func (w *Widget) ConnectAfter(signal string, fn any, data ...any) (uint64, error) {
	return w.connect("widgets.Widget.ConnectAfter", signal, fn, true, data)
}

func (w *Widget) connect(what, signal string, fn any, after bool, data []any) (uint64, error) {
	if err := eventloop.RequireMain(what); err != nil {
		return 0, err
	}
	if w.obj() == nil {
		return 0, pygi.ErrNilObject
	}
	if err := hookConnect(); err != nil {
		return 0, err
	}
	if _, ok := fn.(*pygi.Object); !ok {
		cb, err := callbacks.New(fn, callbacks.Name(strings.ReplaceAll(signal, "-", "_")+"_handler"))
		if err != nil {
			return 0, err
		}
		defer cb.Close()
		fn = cb
	}
	if after {
		return callbacks.ConnectAfter(w.Object, signal, fn, data...)
	}
	return callbacks.Connect(w.Object, signal, fn, data...)
}

// Disconnect removes a signal handler (any, not only Go's); its callback
// is freed if nothing else holds it. An id that is not connected gives
// callbacks.ErrNotConnected.
func (w *Widget) Disconnect(id uint64) error {
	if err := eventloop.RequireMain("widgets.Widget.Disconnect"); err != nil {
		return err
	}
	return callbacks.Disconnect(w.obj(), id)
}

// Emit emits a signal and returns its result.
func (w *Widget) Emit(signal string, args ...any) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.Widget.Emit"); err != nil {
		return nil, err
	}
	return w.CallMethod("emit", append([]any{signal}, args...)...)
}

// InitGTK makes sure GTK 4 is initialised (by importing PyGObject's Gtk,
// which does it), so that gotk4 constructors can be used. It must run on
// the UI thread; app.New does it for applications.
func InitGTK() error {
	if err := eventloop.RequireMain("widgets.InitGTK"); err != nil {
		return err
	}
	if err := requireGtk(); err != nil {
		return err
	}
	g, err := pygi.Import("gi.repository.Gtk")
	if err != nil {
		return err
	}
	g.Close()
	return hookConnect()
}
