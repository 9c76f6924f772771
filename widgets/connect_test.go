package widgets_test

import (
	"testing"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// Every way of connecting a Go handler goes through one mechanism that
// records the connection: each handler below captures the widget it is
// connected to (the cycle no collector sees), Cycles names it once it ran,
// and destroying the widget's window frees the handler and the widget.
func TestEveryConnectPathIsRecorded(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	warmUpTeardown(t)
	var m *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		var err error
		m, err = widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
	})
	// Each connect captures g (a strong Go reference, used when it runs).
	paths := []struct {
		name    string
		connect func(t testing.TB, g *widgets.Widget)
	}{
		{"Widget.Connect", func(t testing.TB, g *widgets.Widget) {
			//duet:cycle-ok on purpose: the test counts that it is freed
			_, err := g.Connect("greeted", func() { g.CallMethod("set_name", "x") })
			require.NoError(t, err)
		}},
		{"Widget.ConnectAfter with data", func(t testing.TB, g *widgets.Widget) {
			//duet:cycle-ok on purpose: the test counts that it is freed
			_, err := g.ConnectAfter("greeted", func(_ *pygi.Object, _ string, n int) { g.CallMethod("set_name", "x") }, 7)
			require.NoError(t, err)
		}},
		{"callbacks.Connect", func(t testing.TB, g *widgets.Widget) {
			//duet:cycle-ok on purpose: the test counts that it is freed
			_, err := callbacks.Connect(g.Object, "greeted", func() { g.CallMethod("set_name", "x") })
			require.NoError(t, err)
		}},
		{"callbacks.ConnectAfter with data", func(t testing.TB, g *widgets.Widget) {
			//duet:cycle-ok on purpose: the test counts that it is freed
			_, err := callbacks.ConnectAfter(g.Object, "greeted", func(_ *pygi.Object, _ string, s string) { g.CallMethod("set_name", s) }, "x")
			require.NoError(t, err)
		}},
		{"callbacks.Connect of a named callback", func(t testing.TB, g *widgets.Widget) {
			cb, err := callbacks.New(func() { g.CallMethod("set_name", "x") }, callbacks.Name("on_greeted"))
			require.NoError(t, err)
			defer cb.Close()
			_, err = callbacks.Connect(g.Object, "greeted", cb)
			require.NoError(t, err)
		}},
		{"PyGObject connect through CallMethod", func(t testing.TB, g *widgets.Widget) {
			//duet:cycle-ok on purpose: the test counts that it is freed
			r, err := g.CallMethod("connect", "greeted", func() { g.CallMethod("set_name", "x") })
			require.NoError(t, err)
			r.Close()
		}},
		{"PyGObject connect_after with data through a Block", func(t testing.TB, g *widgets.Widget) {
			var b pygi.Block
			//duet:cycle-ok on purpose: the test counts that it is freed
			b.CallMethod(g.Object, "connect_after", "greeted", func(_, _, _ *pygi.Object) { g.CallMethod("set_name", "x") }, 1)
			require.NoError(t, b.Err())
		}},
		{"PyGObject connect_object", func(t testing.TB, g *widgets.Widget) {
			other, err := Gtk(t).CallMethod("Label")
			require.NoError(t, err)
			defer other.Close()
			//duet:cycle-ok on purpose: the test counts that it is freed
			r, err := g.CallMethod("connect_object", "greeted", func(_, _ *pygi.Object) { g.CallMethod("set_name", "x") }, other)
			require.NoError(t, err)
			r.Close()
		}},
		{"PyGObject connect from Python code", func(t testing.TB, g *widgets.Widget) {
			var b pygi.Block
			b.Exec("g.connect('greeted', fn)", b.Globals(pygi.Kw{"g": g.Object, "fn": func() { g.CallMethod("set_name", "x") }}))
			require.NoError(t, b.Err())
		}},
		{"generated Connect<Signal>", func(t testing.TB, g *widgets.Widget) {
			typed := &Greeter{g}
			_, err := typed.ConnectGreeted(func(*Greeter, string) { g.CallMethod("set_name", "x") })
			require.NoError(t, err)
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			base := looptest.Settle(t)
			var watch *widgets.Watch
			var addr uintptr
			looptest.Do(t, func(t testing.TB) {
				g, err := m.New("Greeter", nil)
				require.NoError(t, err)
				win, err := Gtk(t).CallMethod("Window", pygi.Kw{"child": g.Object})
				require.NoError(t, err)
				//duet:cycle-ok the cycle this test makes on purpose, on each path
				p.connect(t, g)
				_, err = g.CallMethod("greet") // the handler runs: it uses g
				require.NoError(t, err)
				watch, err = widgets.WatchFinalize(g.Object)
				require.NoError(t, err)
				addr, err = widgets.Pointer(g.Object)
				require.NoError(t, err)

				cycles, err := callbacks.Cycles()
				require.NoError(t, err)
				assert.True(t, hasCycle(cycles, addr), "Cycles sees the handler: %v", cycles)

				_, err = win.CallMethod("destroy") // the window takes its Go handlers with it
				require.NoError(t, err)
				win.Close()
			})
			assert.True(t, finalized(t, watch), "the widget is finalised with its window")
			assert.Equal(t, base, looptest.Settle(t), "the handler is freed")
			cycles, err := callbacks.Cycles()
			require.NoError(t, err)
			assert.False(t, hasCycle(cycles, addr), "no cycle left: %v", cycles)
		})
	}
}

func hasCycle(cs []callbacks.Cycle, addr uintptr) bool {
	for _, c := range cs {
		if c.Address == addr {
			return true
		}
	}
	return false
}

// LoadUI's handlers go through the same mechanism: plain, with the
// element's object, and swapped (GtkBuilder's default with an object).
func TestLoadUIConnectionsAreRecorded(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	warmUpTeardown(t)
	const xml = `<interface>
  <object class="GtkWindow" id="win">
    <child>
      <object class="GtkBox">
        <child>
          <object class="GtkButton" id="button">
            <signal name="clicked" handler="on_plain"/>
            <signal name="clicked" handler="on_object" object="label" swapped="no"/>
            <signal name="clicked" handler="on_swapped" object="label" after="yes"/>
          </object>
        </child>
        <child><object class="GtkLabel" id="label"/></child>
      </object>
    </child>
  </object>
</interface>`
	base := looptest.Settle(t)
	var watch *widgets.Watch
	var addr uintptr
	got := map[string]string{}
	looptest.Do(t, func(t testing.TB) {
		// Each handler captures a reference of its own to the button it is
		// connected to: the cycle, on purpose (Cycles names the last
		// callback that used a reference).
		var button, b1, b2, b3 *pygi.Object
		u, err := widgets.LoadUI(xml, map[string]any{
			"on_plain": func(self *pygi.Object) {
				b1.CallMethod("set_name", "x")
				got["on_plain"] = typeName(self)
			},
			"on_object": func(self, label *pygi.Object) {
				b2.CallMethod("set_name", "x")
				got["on_object"] = typeName(self) + "," + typeName(label)
			},
			"on_swapped": func(label, self *pygi.Object) {
				b3.CallMethod("set_name", "x")
				got["on_swapped"] = typeName(label) + "," + typeName(self)
			},
		})
		require.NoError(t, err)
		b, err := u.Object("button")
		require.NoError(t, err)
		button = b.Object
		for _, c := range []**pygi.Object{&b1, &b2, &b3} {
			*c, err = button.Clone()
			require.NoError(t, err)
		}
		win, err := u.Object("win")
		require.NoError(t, err)
		_, err = button.CallMethod("emit", "clicked")
		require.NoError(t, err)
		watch, err = widgets.WatchFinalize(button)
		require.NoError(t, err)
		addr, err = widgets.Pointer(button)
		require.NoError(t, err)
		cycles, err := callbacks.Cycles()
		require.NoError(t, err)
		n := 0
		for _, c := range cycles {
			if c.Address == addr {
				n++
			}
		}
		assert.Equal(t, 3, n, "Cycles sees the three handlers: %v", cycles)
		_, err = win.CallMethod("destroy")
		require.NoError(t, err)
		win.Close()
		u.Builder.Close()
	})
	assert.Equal(t, map[string]string{
		"on_plain":   "Button",
		"on_object":  "Button,Label",
		"on_swapped": "Label,Button",
	}, got)
	assert.True(t, finalized(t, watch), "the button is finalised with its window")
	assert.Equal(t, base, looptest.Settle(t), "the handlers are freed")
}

func typeName(o *pygi.Object) string {
	n, _ := o.TypeName()
	return n
}

// PyGObject's connect_data is a connect path too: recorded, seen by
// Cycles, taken by a destroyed window.
func TestConnectDataIsRecorded(t *testing.T) {
	warmUpTeardown(t)
	base := looptest.Settle(t)
	var w *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		b, err := Gtk(t).CallMethod("Button")
		require.NoError(t, err)
		win, err := Gtk(t).CallMethod("Window", pygi.Kw{"child": b})
		require.NoError(t, err)
		captured, err := b.Clone()
		require.NoError(t, err)
		before := widgets.Connections()
		_, err = b.CallMethod("connect_data", "clicked", func(*pygi.Object) { captured.CallMethod("set_label", "x") }) //duet:cycle-ok: the test measures the cycle
		require.NoError(t, err)
		assert.Equal(t, before+1, widgets.Connections(), "connect_data recorded")
		_, err = b.CallMethod("emit", "clicked")
		require.NoError(t, err)
		addr, err := widgets.Pointer(b)
		require.NoError(t, err)
		cs, err := callbacks.Cycles()
		require.NoError(t, err)
		assert.True(t, hasCycle(cs, addr), "Cycles sees it: %v", cs)
		w = watch(t, b)
		b.Close()
		_, err = win.CallMethod("destroy")
		require.NoError(t, err)
		win.Close()
	})
	assert.Equal(t, base, looptest.Settle(t), "the handler went with the window")
	assert.True(t, w.Finalized(), "and so did the button")
}

// Connecting and disconnecting in a loop leaves nothing behind: no record
// for a handler that is gone (its callback kept alive by Go or not), and
// one finalisation watch per object, not one per connection.
func TestConnectDisconnectLeavesNoRecords(t *testing.T) {
	warmUpTeardown(t)
	looptest.Do(t, func(t testing.TB) {
		store, err := pygi.Eval("__import__('gi.repository.Gio', fromlist=['Gio']).ListStore()", nil)
		require.NoError(t, err)
		defer store.Close()
		kept, err := callbacks.New(func(*pygi.Object, int, int, int) {}, callbacks.Name("kept"))
		require.NoError(t, err)
		defer kept.Close()
		records, watchers := widgets.Connections(), widgets.Watchers()
		for i := range 500 {
			var fn any = func(*pygi.Object, int, int, int) {}
			if i%2 == 0 {
				fn = kept // the same callback, alive between connections
			}
			id, err := callbacks.Connect(store, "items-changed", fn)
			require.NoError(t, err)
			require.NoError(t, callbacks.Disconnect(store, id))
		}
		assert.Equal(t, records, widgets.Connections(), "records of disconnected handlers")
		assert.LessOrEqual(t, widgets.Watchers(), watchers+1, "one watch for the store")
	})
}

// A nil Widget, or one with no object, is an error in every method, never
// a crash; so are typed nils of gotk4 and generated types.
func TestNilsAreErrors(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		for _, w := range []*widgets.Widget{nil, {}} {
			assert.ErrorIs(t, w.SetProp("label", "x"), pygi.ErrNilObject)
			_, err := w.Connect("clicked", func() {})
			assert.ErrorIs(t, err, pygi.ErrNilObject)
			_, err = w.ConnectAfter("clicked", func() {})
			assert.ErrorIs(t, err, pygi.ErrNilObject)
			assert.ErrorIs(t, w.Disconnect(1), pygi.ErrNilObject)
			_, err = w.Prop("label")
			assert.ErrorIs(t, err, pygi.ErrNilObject)
			_, err = w.Emit("clicked")
			assert.ErrorIs(t, err, pygi.ErrNilObject)
			_, err = w.CallMethod("get_label")
			assert.ErrorIs(t, err, pygi.ErrNilObject)
			assert.NoError(t, w.Close())
		}
		var label *gtk.Label
		var chart *kit.LineChart
		_, err := widgets.WatchFinalize(chart)
		assert.ErrorIs(t, err, widgets.ErrNotGObject)
		_, err = pygi.New(chart)
		assert.ErrorIs(t, err, pygi.ErrConversion)
		_, err = pygi.New([]any{chart})
		assert.ErrorIs(t, err, pygi.ErrConversion)
		_, err = widgets.ToPython(label)
		assert.ErrorIs(t, err, widgets.ErrNotGObject)
		_, err = widgets.CallMethod(label, "get_text")
		assert.ErrorIs(t, err, widgets.ErrNotGObject)
		assert.ErrorIs(t, widgets.Track(label), widgets.ErrNotGObject)
	})
}

// A Go handler on an event controller of a window's widget (GTK 4's input
// idiom) goes with the window, as a handler on the widget would.
func TestControllerHandlersGoWithTheirWindow(t *testing.T) {
	warmUpTeardown(t)
	base := looptest.Settle(t)
	var ww, gw *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		G := Gtk(t)
		b, err := G.CallMethod("Button")
		require.NoError(t, err)
		win, err := G.CallMethod("Window", pygi.Kw{"child": b})
		require.NoError(t, err)
		click, err := G.CallMethod("GestureClick")
		require.NoError(t, err)
		_, err = b.CallMethod("add_controller", click)
		require.NoError(t, err)
		captured, err := win.Clone()
		require.NoError(t, err)
		_, err = widgets.Wrap(click).Connect("pressed", func(_ *pygi.Object, n int, x, y float64) { captured.CallMethod("set_title", "pressed") }) //duet:cycle-ok: the test measures the cycle
		require.NoError(t, err)
		// And a gotk4-made controller on a gotk4-made window.
		gwin := gtk.NewWindow()
		keys := gtk.NewEventControllerKey()
		gwin.AddController(keys)
		gwin.Present()
		ww, gw = watch(t, win), watch(t, keys)
		b.Close()
		_, err = win.CallMethod("destroy")
		require.NoError(t, err)
		win.Close()
		click.Close()
		gwin.Destroy()
	})
	assert.Equal(t, base, looptest.Settle(t), "the controller's handler was freed")
	assert.True(t, ww.Finalized(), "the window it captured was finalised")
	assert.True(t, gw.Finalized(), "the gotk4 controller was finalised")
}
