package widgets_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// Every function GTK allows only on the UI thread, called from a goroutine:
// an error wrapping eventloop.ErrNotMain that names it; no crash, no GTK
// criticals, and the objects involved are still fine afterwards.
func TestUIThreadOnlyFromAGoroutine(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var (
		py    *widgets.Widget
		box   *gtk.Box
		mod   *widgets.Module
		chart *kit.LineChart
		logv  *kit.LogView
		base  *pygi.Object
	)
	looptest.Do(t, func(t testing.TB) {
		G := Gtk(t)
		b, err := G.CallMethod("Button", pygi.Kw{"label": "x"})
		require.NoError(t, err)
		py = widgets.Wrap(b)
		box = gtk.NewBox(gtk.OrientationVertical, 0)
		require.NoError(t, widgets.Track(box))
		mod, err = widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
		chart, err = kit.NewLineChart("t", "u", 10)
		require.NoError(t, err)
		logv, err = kit.NewLogView(10)
		require.NoError(t, err)
		base, err = G.Attr("Box")
		require.NoError(t, err)
	})
	file := filepath.Join("testdata", "greeter.py")
	calls := map[string]func() error{
		"widgets.Cast":                func() error { _, err := widgets.Cast[*gtk.Button](py.Object); return err },
		"widgets.ToPython":            func() error { _, err := widgets.ToPython(box); return err },
		"widgets.CallMethod":          func() error { _, err := widgets.CallMethod(box, "append", py.Object); return err },
		"widgets.Track":               func() error { return widgets.Track(box) },
		"widgets.InitGTK":             widgets.InitGTK,
		"widgets.LoadFile":            func() error { _, err := widgets.LoadFile(file); return err },
		"widgets.LoadFS":              func() error { _, err := widgets.LoadFS(testdata, file); return err },
		"widgets.LoadSource":          func() error { _, err := widgets.LoadSource("x_src", "x = 1\n"); return err },
		"kit.Library":                 func() error { _, err := kit.Library(); return err },
		"kit.NewLineChart":            func() error { _, err := kit.NewLineChart("t", "u", 10); return err },
		"kit.NewLogView":              func() error { _, err := kit.NewLogView(10); return err },
		"kit.ShowCensus":              func() error { _, err := kit.ShowCensus(nil); return err },
		"widgets.Module.New":          func() error { _, err := mod.New("Greeter", pygi.Kw{"name": "g"}); return err },
		"kit.LineChart.Points":        func() error { _, err := chart.Points("s"); return err },
		"kit.LogView.Text":            func() error { _, err := logv.Text(); return err },
		"widgets.Widget.Prop":         func() error { _, err := py.Prop("label"); return err },
		"widgets.Widget.SetProp":      func() error { return py.SetProp("label", "y") },
		"widgets.Widget.Connect":      func() error { _, err := py.Connect("clicked", func() {}); return err },
		"widgets.Widget.ConnectAfter": func() error { _, err := py.ConnectAfter("clicked", func() {}); return err },
		"widgets.Widget.Disconnect":   func() error { return py.Disconnect(1) },
		"widgets.Widget.Emit":         func() error { _, err := py.Emit("clicked"); return err },
		"widgets.DefineClass": func() error {
			_, err := widgets.DefineClass(widgets.ClassSpec{Name: "FromGoroutine", Base: base})
			return err
		},
		"eventloop.Run": func() error { return eventloop.Run(t.Context()) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, eventloop.ErrNotMain)
			assert.Contains(t, err.Error(), name)
		})
	}
	// Safe from any goroutine, by design: batched onto the loop.
	chart.Push("s", 1)
	logv.Printf("from a goroutine")
	looptest.Do(t, func(t testing.TB) {
		label, err := py.Prop("label")
		require.NoError(t, err)
		s, _ := pygi.As[string](label)
		assert.Equal(t, "x", s, "nothing reached GTK from the goroutine")
		pts, err := chart.Points("s")
		require.NoError(t, err)
		assert.Equal(t, []float64{1}, pts)
		text, err := logv.Text()
		require.NoError(t, err)
		assert.Contains(t, text, "from a goroutine")
	})
}

// A GLib whose toggle-reference record duet cannot read: one loud warning,
// and nothing released (counted instead).
func TestUnknownToggleLayoutWarns(t *testing.T) {
	var warn bytes.Buffer
	restore := widgets.SimulateUnknownToggleLayout(&warn)
	defer restore()
	assert.Contains(t, warn.String(), "WARNING")
	assert.Contains(t, warn.String(), "will not be released")
	before := forensics.ReadStats().GObjects
	var w *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		l := gtk.NewLabel("tracked")
		require.NoError(t, widgets.Track(l))
		w = watch(t, l)
	})
	looptest.Settle(t)
	after := forensics.ReadStats().GObjects
	assert.Equal(t, before.Released, after.Released, "nothing released")
	assert.Greater(t, after.Unreleased, before.Unreleased, "counted instead")
	assert.False(t, w.Finalized())
}

// The ready-made library is shared by every caller: closing it does nothing.
func TestLibraryIsShared(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		lib, err := kit.Library()
		require.NoError(t, err)
		require.NoError(t, lib.Close())
		again, err := kit.Library()
		require.NoError(t, err)
		assert.Same(t, lib, again)
		c, err := kit.NewLineChart("still", "works", 5)
		require.NoError(t, err)
		c.Close()
	})
}
