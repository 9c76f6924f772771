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
			_, err := g.ConnectAfter("greeted", func(_ *pygi.Object, _ string, n int) { g.CallMethod("set_name", "x") }, 7)
			require.NoError(t, err)
		}},
		{"callbacks.Connect", func(t testing.TB, g *widgets.Widget) {
			_, err := callbacks.Connect(g.Object, "greeted", func() { g.CallMethod("set_name", "x") })
			require.NoError(t, err)
		}},
		{"callbacks.ConnectAfter with data", func(t testing.TB, g *widgets.Widget) {
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
			base := liveCallbacks(t)
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
				watch, err = widgets.WatchFinalizePy(g.Object)
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
			assert.Equal(t, base, liveCallbacks(t), "the handler is freed")
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
