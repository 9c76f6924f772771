package widgets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
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
