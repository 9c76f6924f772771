package widgets_test

import (
	"fmt"
	"testing"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// finalized reports whether every watch has fired once both collectors and
// duet's reaper have settled.
func finalized(t testing.TB, ws ...*widgets.Watch) bool {
	t.Helper()
	looptest.Settle(t)
	for _, w := range ws {
		if !w.Finalized() {
			return false
		}
	}
	return true
}

// The measurement behind widgets.Track: gotk4 v0.2.2 alone never finalises
// an object it wrapped, even one nobody else holds.
func TestGotk4AloneLeaksWithoutTrack(t *testing.T) {
	var w *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		b := gtk.NewButtonWithLabel("untracked")
		w = watch(t, b)
	})
	assert.False(t, finalized(t, w), "if this fails, gotk4 no longer leaks: Track may be unnecessary")
}

func TestGoWidgetTrackedIsFinalized(t *testing.T) {
	var w *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		b := gtk.NewButtonWithLabel("tracked")
		widgets.Track(b)
		w = watch(t, b)
	})
	assert.True(t, finalized(t, w))
}

func TestGoWidgetHandedToPythonIsFinalized(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("kept = []\n", g))
	var w *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		b := gtk.NewButtonWithLabel("from Go")
		widgets.Track(b)
		w = watch(t, b)
		py, err := widgets.ToPython(b)
		require.NoError(t, err)
		kept, err := g.Item("kept")
		require.NoError(t, err)
		_, err = kept.CallMethod("append", py)
		require.NoError(t, err)
		py.Close()
	})
	assert.False(t, finalized(t, w), "Python still holds it")
	require.NoError(t, pygi.Exec("kept.clear()", g))
	assert.True(t, finalized(t, w), "dropped by both sides")
}

func TestPythonWidgetWrappedForGoIsFinalized(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var m *widgets.Module
	looptest.Do(t, func(t testing.TB) { // loaders are UI-thread only
		var err error
		m, err = widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
	})
	var plain, sub, subLabel *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		G := Gtk(t)
		// A plain PyGObject widget, seen by gotk4 too.
		l, err := G.CallMethod("Label", pygi.Kw{"label": "plain"})
		require.NoError(t, err)
		gl, err := widgets.Cast[*gtk.Label](l)
		require.NoError(t, err)
		gl.SetText("seen from Go")
		plain, err = widgets.WatchFinalize(l)
		require.NoError(t, err)
		l.Close()

		// An instance of a Python subclass with instance attributes, held
		// by Go through its Python side and packed into a gotk4 box.
		g, err := m.New("Greeter", pygi.Kw{"name": "sub"})
		require.NoError(t, err)
		require.NoError(t, g.Object.SetAttr("extra", []int{1, 2, 3}))
		_, err = widgets.Cast[*gtk.Box](g.Object)
		require.ErrorIs(t, err, widgets.ErrToggleTrap)
		box := gtk.NewBox(gtk.OrientationVertical, 0)
		widgets.Track(box)
		r, err := widgets.CallMethod(box, "append", g.Object)
		require.NoError(t, err)
		r.Close()
		sub, err = widgets.WatchFinalize(g.Object)
		require.NoError(t, err)
		lbl, err := g.Object.Attr("label")
		require.NoError(t, err)
		subLabel, err = widgets.WatchFinalize(lbl)
		require.NoError(t, err)
		lbl.Close()
		g.Close()
	})
	assert.True(t, finalized(t, plain), "plain widget")
	assert.True(t, finalized(t, sub, subLabel), "Python subclass with instance data, and its child")
}

// The measurement behind ErrToggleTrap: a gotk4 wrapper (made here behind
// the bridge's back) on an object whose Python wrapper holds a toggle
// reference keeps it alive for good, even after Go, Python and the reaper
// are done with it.
func TestToggleTrapMeasured(t *testing.T) {
	var m *widgets.Module
	looptest.Do(t, func(t testing.TB) { // loaders are UI-thread only
		var err error
		m, err = widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
	})
	var w *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		g, err := m.New("Greeter", pygi.Kw{"name": "trapped"})
		require.NoError(t, err)
		p, err := widgets.Pointer(g.Object)
		require.NoError(t, err)
		// Deliberately behind the bridge's back (the address is C memory).
		trapped := coreglib.Take(*(*unsafe.Pointer)(unsafe.Pointer(&p)))
		_ = trapped
		w, err = widgets.WatchFinalize(g.Object)
		require.NoError(t, err)
		g.Close()
	})
	assert.False(t, finalized(t, w), "two toggle references: nobody is ever notified")
}

func TestWindowWithHandlerCapturingItsWidgetsIsFinalized(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	warmUpTeardown(t)
	base := looptest.Settle(t)
	var ws []*widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		G := Gtk(t)
		win, err := G.CallMethod("Window", pygi.Kw{"title": "cycle"})
		require.NoError(t, err)
		label, err := G.CallMethod("Label", pygi.Kw{"label": "0"})
		require.NoError(t, err)
		goBox := gtk.NewBox(gtk.OrientationVertical, 0)
		widgets.Track(goBox)
		button := gtk.NewButtonWithLabel("count")
		widgets.Track(button)
		goBox.Append(button)
		r, err := widgets.CallMethod(goBox, "append", label)
		require.NoError(t, err)
		r.Close()
		pyBox, err := widgets.ToPython(goBox)
		require.NoError(t, err)
		_, err = win.CallMethod("set_child", pyBox)
		require.NoError(t, err)
		pyButton, err := widgets.ToPython(button)
		require.NoError(t, err)
		// The handler captures the window's own widgets, from both sides.
		n := 0
		_, err = widgets.Wrap(pyButton).Connect("clicked", func(*pygi.Object) {
			n++
			label.CallMethod("set_label", fmt.Sprint(n))
			button.SetLabel(fmt.Sprintf("clicked %d", n))
			win.CallMethod("set_title", "clicked")
		})
		require.NoError(t, err)
		_, err = pyButton.CallMethod("emit", "clicked")
		require.NoError(t, err)
		txt, _ := label.CallMethod("get_label")
		s, _ := pygi.As[string](txt)
		assert.Equal(t, "1", s)
		for _, o := range []*pygi.Object{win, label, pyBox, pyButton} {
			w, err := widgets.WatchFinalize(o)
			require.NoError(t, err)
			ws = append(ws, w)
		}
		_, err = win.CallMethod("present")
		require.NoError(t, err)
		_, err = win.CallMethod("destroy")
		require.NoError(t, err)
	})
	assert.True(t, finalized(t, ws...), "window, its children and the captured widgets")
	assert.Equal(t, base, looptest.Settle(t), "the handler was freed with its signal")
}

// TestMixedWindowCycles creates, shows and destroys a window mixing both
// sides 1000 times; every GObject and callback must go away.
func TestMixedWindowCycles(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const cycles = 1000
	warmUpTeardown(t)
	baseCallbacks := looptest.Settle(t)
	baseStats := forensics.ReadStats().GObjects
	var ws []*widgets.Watch
	var lib *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		var err error
		lib, err = kit.Library()
		require.NoError(t, err)
	})
	for i := range cycles {
		looptest.Do(t, func(t testing.TB) {
			G := Gtk(t)
			// Window made in Python, box made in Go, chart (a Python
			// subclass) and a toggle with a Go handler.
			win, err := G.CallMethod("Window", pygi.Kw{"title": fmt.Sprint("cycle ", i)})
			require.NoError(t, err)
			box := gtk.NewBox(gtk.OrientationVertical, 4)
			widgets.Track(box)
			chart, err := lib.New("LineChart", pygi.Kw{"title": "c"})
			require.NoError(t, err)
			_, err = chart.CallMethod("push", "s", float64(i))
			require.NoError(t, err)
			toggle, err := G.CallMethod("ToggleButton", pygi.Kw{"label": "OFF"})
			require.NoError(t, err)
			_, err = widgets.Wrap(toggle).Connect("clicked", func(b *pygi.Object) { b.CallMethod("set_label", "ON") })
			require.NoError(t, err)
			for _, c := range []*pygi.Object{chart.Object, toggle} {
				r, err := widgets.CallMethod(box, "append", c)
				require.NoError(t, err)
				r.Close()
			}
			pyBox, err := widgets.ToPython(box)
			require.NoError(t, err)
			_, err = win.CallMethod("set_child", pyBox)
			require.NoError(t, err)
			_, err = win.CallMethod("present")
			require.NoError(t, err)
			_, err = toggle.CallMethod("emit", "clicked")
			require.NoError(t, err)
			if i%100 == 0 {
				for _, o := range []*pygi.Object{win, pyBox, chart.Object, toggle} {
					w, err := widgets.WatchFinalize(o)
					require.NoError(t, err)
					ws = append(ws, w)
				}
			}
			_, err = win.CallMethod("destroy")
			require.NoError(t, err)
			for _, o := range []*pygi.Object{win, pyBox, chart.Object, toggle} {
				o.Close()
			}
		})
		if i%100 == 99 {
			looptest.Settle(t) // keeps what waits for release bounded
		}
	}
	if !assert.True(t, finalized(t, ws...), "sampled windows and their widgets were finalised") {
		for _, w := range ws {
			if !w.Finalized() {
				t.Log("still alive:", w.Type)
			}
		}
	}
	assert.Equal(t, baseCallbacks, looptest.Settle(t), "live callbacks back to the baseline")
	s := forensics.ReadStats().GObjects
	t.Logf("after %d cycles: %+v (before: %+v)", cycles, s, baseStats)
	assert.Equal(t, baseStats.Watching, s.Watching, "every GObject watched here was finalised")
	assert.LessOrEqual(t, s.Tracked, baseStats.Tracked+2, "tracked GObjects back to the baseline")
}

// warmUpTeardown starts the window monitor (it holds one callback for the
// life of the process) before a test counts callbacks.
func warmUpTeardown(t testing.TB) {
	looptest.Do(t, func(t testing.TB) {
		l, err := Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		_, err = widgets.Wrap(l).Connect("notify", func(*pygi.Object, *pygi.Object) {})
		require.NoError(t, err)
	})
}

// A window made with gotk4 and closed is finalised with no call of duet's:
// duet learns of it when it is shown (it joins GTK's toplevels) and
// releases gotk4's references to it, and to the gotk4 widgets in it, once
// the window is destroyed and Go has let go.
func TestGoMadeWindowsAreFinalisedWithoutTrack(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	warmUpTeardown(t)
	var watches []*widgets.Watch
	for i := range 12 {
		var win *gtk.Window
		looptest.Do(t, func(t testing.TB) {
			win = gtk.NewWindow()
			box := gtk.NewBox(gtk.OrientationVertical, 0)
			button := gtk.NewButtonWithLabel("from Go")
			box.Append(button)
			label, err := Gtk(t).CallMethod("Label", pygi.Kw{"label": fmt.Sprint("from Python ", i)})
			require.NoError(t, err)
			_, err = widgets.CallMethod(box, "append", label)
			require.NoError(t, err)
			win.SetChild(box)
			win.Present()
			lw, err := widgets.WatchFinalize(label)
			require.NoError(t, err)
			label.Close()
			watches = append(watches, watch(t, win), watch(t, button), lw)
		})
		looptest.Turn(t) // shown; a turn later, closed
		looptest.Do(t, func(t testing.TB) { win.Close() })
	}
	ok := finalized(t, watches...)
	alive := 0
	for _, w := range watches {
		if !w.Finalized() {
			alive++
		}
	}
	assert.True(t, ok, "%d of %d objects (windows, gotk4 buttons, Python labels) never finalised", alive, len(watches))
}

// watch is WatchFinalize for objects a test knows to be GObjects.
func watch(t testing.TB, obj any) *widgets.Watch {
	t.Helper()
	w, err := widgets.WatchFinalize(obj)
	require.NoError(t, err)
	return w
}

// WatchFinalize takes every form a GObject has in duet, and says so of
// anything else instead of crashing on it.
func TestWatchFinalizeRefusesWhatIsNotAGObject(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		notGObject, err := pygi.New([]any{1, 2})
		require.NoError(t, err)
		defer notGObject.Close()
		var nilLabel *gtk.Label
		var nilWidget *widgets.Widget
		for _, obj := range []any{nil, 42, "label", notGObject, (*pygi.Object)(nil), nilLabel, nilWidget, &widgets.Widget{}} {
			w, err := widgets.WatchFinalize(obj)
			assert.Nil(t, w, "%T", obj)
			assert.Error(t, err, "%T", obj)
		}
		// The forms that are GObjects.
		require.NoError(t, widgets.InitGTK())
		l := gtk.NewLabel("x")
		pl, err := widgets.ToPython(l)
		require.NoError(t, err)
		defer pl.Close()
		for _, obj := range []any{l, pl, widgets.Wrap(pl)} {
			w, err := widgets.WatchFinalize(obj)
			require.NoError(t, err, "%T", obj)
			assert.Equal(t, "GtkLabel", w.Type)
			assert.False(t, w.Finalized())
		}
	})
}
