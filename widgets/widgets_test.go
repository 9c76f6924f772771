package widgets_test

import (
	"embed"
	"os"
	"path/filepath"
	"testing"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func TestMain(m *testing.M) {
	if name := os.Getenv("WIDGETS_CHILD"); name != "" {
		os.Exit(childMain(name))
	}
	looptest.Main(m)
}

//go:embed testdata/*.py
var testdata embed.FS

// Gtk returns the Gtk namespace (on the loop).
func Gtk(t testing.TB) *pygi.Object {
	t.Helper()
	require.NoError(t, pygi.RequireVersion("Gtk", "4.0"))
	g, err := pygi.Import("gi.repository.Gtk")
	require.NoError(t, err)
	return g
}

func TestBridgeIdentityAndTypes(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	looptest.Do(t, func(t testing.TB) {
		G := Gtk(t)
		pyButton, err := G.CallMethod("Button", pygi.Kw{"label": "from Python"})
		require.NoError(t, err)

		button, err := widgets.Cast[*gtk.Button](pyButton)
		require.NoError(t, err)
		assert.Equal(t, "from Python", button.Label(), "gotk4 sees the same GObject")
		button.SetLabel("set from Go")
		l, err := pyButton.CallMethod("get_label")
		require.NoError(t, err)
		s, _ := pygi.As[string](l)
		assert.Equal(t, "set from Go", s, "and Python sees Go's change")

		back, err := widgets.ToPython(button)
		require.NoError(t, err)
		same, err := back.Is(pyButton)
		require.NoError(t, err)
		assert.True(t, same, "the same GObject maps to the same Python wrapper")

		p1, err := widgets.Pointer(pyButton)
		require.NoError(t, err)
		assert.NotZero(t, p1)

		goLabel := gtk.NewLabel("made in Go")
		widgets.Track(goLabel)
		pyLabel, err := widgets.ToPython(goLabel)
		require.NoError(t, err)
		again, err := widgets.ToPython(goLabel)
		require.NoError(t, err)
		same, err = again.Is(pyLabel)
		require.NoError(t, err)
		assert.True(t, same)
		txt, err := pyLabel.CallMethod("get_text")
		require.NoError(t, err)
		s, _ = pygi.As[string](txt)
		assert.Equal(t, "made in Go", s)

		// Wrong types give errors, not panics.
		_, err = widgets.Cast[*gtk.Label](pyButton)
		assert.ErrorContains(t, err, "GtkButton, not a *gtk.Label")
		notGObject, err := pygi.New(42)
		require.NoError(t, err)
		_, err = widgets.ToGo(notGObject)
		assert.ErrorIs(t, err, widgets.ErrNotGObject)
		assert.ErrorContains(t, err, "'int' object is not a GObject")
		closed, err := G.CallMethod("Label")
		require.NoError(t, err)
		closed.Close()
		_, err = widgets.ToGo(closed)
		assert.ErrorIs(t, err, pygi.ErrClosed)
		_, err = widgets.ToPython(nil)
		assert.Error(t, err)

		// Packing a Python widget into a gotk4 container through Python.
		box := gtk.NewBox(gtk.OrientationVertical, 0)
		widgets.Track(box)
		r, err := widgets.CallMethod(box, "append", pyButton)
		require.NoError(t, err)
		r.Close()
		assert.NotNil(t, box.FirstChild())
	})
}

func TestLoadPythonWidgets(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "from_disk.py")
	src, err := testdata.ReadFile("testdata/greeter.py")
	require.NoError(t, err)
	require.NoError(t, writeFile(file, src))

	looptest.Do(t, func(t testing.TB) {
		for _, load := range []func() (*widgets.Module, error){
			func() (*widgets.Module, error) { return widgets.LoadFile(file) },
			func() (*widgets.Module, error) { return widgets.LoadFS(testdata, "testdata/greeter.py") },
			func() (*widgets.Module, error) { return widgets.LoadSource("greeter_src", string(src)) },
		} {
			m, err := load()
			require.NoError(t, err)
			w, err := m.New("Greeter", pygi.Kw{"name": "gopher"})
			require.NoError(t, err)

			name, err := w.Prop("name")
			require.NoError(t, err)
			s, _ := pygi.As[string](name)
			assert.Equal(t, "gopher", s)

			var got []string
			_, err = w.Connect("greeted", func(self *pygi.Object, text string) { got = append(got, text) })
			require.NoError(t, err)
			require.NoError(t, w.SetProp("name", "duet"))
			r, err := w.CallMethod("greet")
			require.NoError(t, err)
			s, _ = pygi.As[string](r)
			assert.Equal(t, "Hello, duet!", s)
			assert.Equal(t, []string{"Hello, duet!"}, got)

			// A Python subclass with instance data: gotk4 must not wrap it
			// (ErrToggleTrap), but a gotk4 container can hold it.
			_, err = widgets.Cast[*gtk.Box](w.Object)
			assert.ErrorIs(t, err, widgets.ErrToggleTrap)
			box := gtk.NewBox(gtk.OrientationVertical, 0)
			widgets.Track(box)
			r, err = widgets.CallMethod(box, "append", w.Object)
			require.NoError(t, err)
			r.Close()
			assert.NotNil(t, box.FirstChild())
		}
		_, err := widgets.LoadFile(filepath.Join(dir, "missing.py"))
		assert.Error(t, err)
	})
}

func TestPythonErrorsCarryTracebacks(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		_, err := widgets.LoadSource("bad_syntax", "from gi.repository import Gtk\nclass X(Gtk.Box:\n    pass\n")
		var pe *pygi.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "SyntaxError", pe.Type)
		assert.Contains(t, pe.Traceback, "<bad_syntax>")

		_, err = widgets.LoadSource("bad_import", "import no_such_module_anywhere\n")
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "ModuleNotFoundError", pe.Type)

		m, err := widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
		_, err = m.New("Broken", nil)
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "RuntimeError", pe.Type)
		assert.Contains(t, pe.Traceback, `testdata/greeter.py", line 31, in __init__`)
		_, err = m.New("NoSuchClass", nil)
		assert.ErrorContains(t, err, "has no class NoSuchClass")
		_, err = m.New("Greeter", pygi.Kw{"no_such_property": 1})
		assert.Error(t, err)
	})
}

func TestDefineClassFromGo(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	looptest.Do(t, func(t testing.TB) {
		G := Gtk(t)
		// Gtk.Widget: it has no layout manager, so its measure vfunc is used.
		base, err := G.Attr("Widget")
		require.NoError(t, err)
		var inits []string
		cls, err := widgets.DefineClass(widgets.ClassSpec{
			Name: "GoCounter",
			Base: base,
			Methods: map[string]any{
				"bump": func(self *pygi.Object, by int) (int, error) {
					n, err := self.CallMethod("get_property", "count")
					if err != nil {
						return 0, err
					}
					v, _ := pygi.As[int64](n)
					v += int64(by)
					if _, err := self.CallMethod("set_property", "count", v); err != nil {
						return 0, err
					}
					_, err = self.CallMethod("emit", "bumped", v)
					return int(v), err
				},
			},
			Overrides: map[string]any{
				// A virtual function of GtkWidget, implemented in Go.
				"do_measure": func(self *pygi.Object, orientation *pygi.Object, forSize int) pygi.Tuple {
					return pygi.Tuple{123, 456, -1, -1}
				},
			},
			Init: func(self *pygi.Object, kw pygi.Kw) error {
				inits = append(inits, "init")
				if start, ok := kw["start"].(int64); ok {
					_, err := self.CallMethod("set_property", "count", start)
					return err
				}
				return nil
			},
			Signals:    map[string]widgets.Signal{"bumped": {Params: []string{"int"}}},
			Properties: []widgets.Property{{Name: "count", Type: "int", Default: 0}},
		})
		require.NoError(t, err)

		// From Python, like any class.
		g, err := pygi.NewGlobals()
		require.NoError(t, err)
		require.NoError(t, g.SetItem("GoCounter", cls))
		require.NoError(t, pygi.Exec(`
from gi.repository import Gtk
seen = []
c = GoCounter(start=10, tooltip_text="tip")
c.connect("bumped", lambda obj, n: seen.append(n))
c.bump(5)
c.bump(1)
measured = c.measure(Gtk.Orientation.HORIZONTAL, -1)
`, g))
		r, err := pygi.Eval("(c.props.count, c.get_tooltip_text(), seen, list(measured)[:2], isinstance(c, Gtk.Widget), type(c).__gtype__.name)", g)
		require.NoError(t, err)
		v, err := pygi.As[any](r)
		require.NoError(t, err)
		assert.Equal(t, []any{int64(16), "tip", []any{int64(15), int64(16)}, []any{int64(123), int64(456)}, true, "duet+go+GoCounter"}, v)
		assert.Equal(t, []string{"init"}, inits)

		// From Go: instantiate, use, and put it in a gotk4 container, whose
		// own measurement goes through the Go override.
		obj, err := cls.Call(pygi.Kw{"start": 1})
		require.NoError(t, err)
		w := widgets.Wrap(obj)
		require.NoError(t, w.SetProp("tooltip-text", "from Go"))
		n, err := obj.CallMethod("bump", 2)
		require.NoError(t, err)
		nv, _ := pygi.As[int64](n)
		assert.Equal(t, int64(3), nv)
		tip, err := w.Prop("tooltip-text")
		require.NoError(t, err)
		tipv, _ := pygi.As[string](tip)
		assert.Equal(t, "from Go", tipv)
		_, err = widgets.Cast[*gtk.Widget](obj)
		assert.ErrorIs(t, err, widgets.ErrToggleTrap, "it carries Python instance data")
		box := gtk.NewBox(gtk.OrientationHorizontal, 0)
		widgets.Track(box)
		r, err = widgets.CallMethod(box, "append", obj)
		require.NoError(t, err)
		r.Close()
		minW, _, _, _ := box.Measure(gtk.OrientationHorizontal, -1)
		assert.Equal(t, 123, minW, "the Go override answers gotk4's call too")

		_, err = widgets.DefineClass(widgets.ClassSpec{Name: "Bad", Base: base, Properties: []widgets.Property{{Name: "x", Type: "complex"}}})
		assert.ErrorContains(t, err, "unknown type 'complex'")
		_, err = widgets.DefineClass(widgets.ClassSpec{Name: "NoBase"})
		assert.Error(t, err)
	})
}

func writeFile(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }

// A Widget is what Python sees it as: passed to a Python call it is its
// object; a nil Widget is an error, never a crash.
func TestWidgetCrossesAsItsObject(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		g := Gtk(t)
		box, err := g.CallMethod("Box")
		require.NoError(t, err)
		defer box.Close()
		label, err := g.CallMethod("Label", pygi.Kw{"label": "child"})
		require.NoError(t, err)
		w := widgets.Wrap(label)
		_, err = box.CallMethod("append", w)
		require.NoError(t, err)
		child, err := box.CallMethod("get_first_child")
		require.NoError(t, err)
		same, err := child.Is(w.Object)
		require.NoError(t, err)
		assert.True(t, same)
		r, err := w.CallMethod("get_label")
		require.NoError(t, err)
		s, _ := pygi.As[string](r)
		assert.Equal(t, "child", s)
		require.NoError(t, w.Close())
		assert.True(t, label.Closed(), "the Widget owns its object")

		var nilWidget *widgets.Widget
		assert.NoError(t, nilWidget.Close())
		_, err = nilWidget.CallMethod("get_label")
		assert.ErrorIs(t, err, pygi.ErrNilObject)
		_, err = box.CallMethod("append", nilWidget)
		assert.ErrorIs(t, err, pygi.ErrConversion, "a nil *Widget is no object to pass")
	})
	// Off the UI thread the Widget's own methods refuse; Close does not.
	w := widgets.Wrap(pygi.None())
	_, err := w.CallMethod("get_label")
	assert.ErrorIs(t, err, eventloop.ErrNotMain)
	assert.NoError(t, w.Close())
}
