package callbacks_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// A boxed signal argument (a Gdk.RGBA) lends the emission's memory, which
// GLib frees when the emission ends: a handler that keeps it, however it
// keeps it, must keep a copy, as a Python handler connected by PyGObject
// does. Each emission's colour differs, and Python allocates between and
// after them, so memory reused after a free reads as another colour.
func TestBoxedArgumentsKeptPastTheEmission(t *testing.T) {
	const src = `
import gi
gi.require_version('Gtk', '4.0'); gi.require_version('Gdk', '4.0')
from gi.repository import Gtk, Gdk
w = Gtk.ColorChooserWidget()
kept = []
def emit(i):
    c = Gdk.RGBA()
    c.red, c.green, c.blue, c.alpha = i / 10, 0.5, 0.75, 1.0
    w.emit("color-activated", c)
    junk = [bytearray(16) for _ in range(200)]
`
	want := []string{"rgb(0,128,191)", "rgb(26,128,191)", "rgb(51,128,191)", "rgb(77,128,191)", "rgb(102,128,191)"}
	emitAll := func(t *testing.T, g *pygi.Object) {
		for i := range want {
			require.NoError(t, pygi.Exec(fmt.Sprintf("emit(%d)", i), g))
		}
		require.NoError(t, pygi.Exec("junk = [bytearray(16) for _ in range(2000)]", g))
	}
	// What Python kept, read by Python.
	keptByPython := func(t *testing.T, g *pygi.Object) []string {
		got, err := pygi.As[[]string](eval(t, g, "[k.to_string() for k in kept]"))
		require.NoError(t, err)
		return got
	}
	t.Run("Go handler clones it", func(t *testing.T) {
		g := ns(t, src)
		w := eval(t, g, "w")
		var kept []*pygi.Object
		_, err := callbacks.Connect(w, "color-activated", func(_, c *pygi.Object) error {
			k, err := c.Clone()
			kept = append(kept, k)
			return err
		})
		require.NoError(t, err)
		emitAll(t, g)
		var got []string
		for _, k := range kept {
			s, err := k.CallMethod("to_string")
			require.NoError(t, err)
			got = append(got, s.String())
		}
		assert.Equal(t, want, got)
	})
	t.Run("Go handler hands it to Python", func(t *testing.T) {
		g := ns(t, src)
		w, kept := eval(t, g, "w"), eval(t, g, "kept")
		_, err := callbacks.Connect(w, "color-activated", func(d *pygi.Block, _, c *pygi.Object) {
			d.CallMethod(kept, "append", c)
		})
		require.NoError(t, err)
		emitAll(t, g)
		assert.Equal(t, want, keptByPython(t, g))
	})
	t.Run("Go func connected by PyGObject's connect from Python", func(t *testing.T) {
		g := ns(t, src)
		kept := eval(t, g, "kept")
		require.NoError(t, g.SetItem("go_keep", func(_, c *pygi.Object) error {
			_, err := kept.CallMethod("append", c)
			return err
		}))
		require.NoError(t, pygi.Exec("w.connect('color-activated', go_keep)", g))
		emitAll(t, g)
		assert.Equal(t, want, keptByPython(t, g))
	})
	t.Run("a handler that does not keep it reads it", func(t *testing.T) {
		g := ns(t, src)
		w := eval(t, g, "w")
		var seen []string
		_, err := callbacks.Connect(w, "color-activated", func(_, c *pygi.Object) error {
			s, err := c.CallMethod("to_string")
			if err == nil {
				seen = append(seen, s.String())
			}
			return err
		})
		require.NoError(t, err)
		emitAll(t, g)
		assert.Equal(t, want, seen)
	})
}
