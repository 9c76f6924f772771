package widgets_test

import (
	"testing"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

func gobjects(c *forensics.Census, typ string) int {
	for _, g := range c.GObjects {
		if g.Name == typ {
			return g.N
		}
	}
	return 0
}

// The census's GObjects table counts what widgets tracks and watches, by
// GType, each object once, and forgets what was finalised.
func TestCensusCountsTrackedAndWatchedGObjects(t *testing.T) {
	const n = 7
	var before, during *forensics.Census
	var labels []*gtk.Label
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		var err error
		before, err = forensics.TakeCensus()
		require.NoError(t, err)
		for range n {
			l := gtk.NewLabel("counted")
			widgets.Track(l)
			watch(t, l) // tracked and watched: still one object
			labels = append(labels, l)
		}
		b := gtk.NewButton()
		widgets.Track(b)
		during, err = forensics.TakeCensus()
		require.NoError(t, err)
	})
	assert.Equal(t, n, gobjects(during, "GtkLabel")-gobjects(before, "GtkLabel"))
	assert.Equal(t, 1, gobjects(during, "GtkButton")-gobjects(before, "GtkButton"))
	grew := during.Grew(before)
	found := false
	for _, g := range grew {
		if g.Table == "gobjects" && g.Name == "GtkLabel" {
			found = true
			assert.Equal(t, n, g.To-g.From)
		}
	}
	assert.True(t, found, "Grew names GtkLabel: %+v", grew)

	labels = nil
	var after *forensics.Census
	looptest.Settle(t)
	looptest.Do(t, func(t testing.TB) {
		var err error
		after, err = forensics.TakeCensus()
		require.NoError(t, err)
	})
	assert.LessOrEqual(t, gobjects(after, "GtkLabel"), gobjects(before, "GtkLabel"), "finalised labels leave the census: %d before, %d after", gobjects(before, "GtkLabel"), gobjects(after, "GtkLabel"))
}

func censusRow(t testing.TB, w *widgets.Widget, table, name string) (n, delta int, ok bool) {
	t.Helper()
	var b pygi.Block
	rows := pygi.BlockAs[[][]any](&b, b.CallMethod(b.Attr(w.Object, "rows"), "get", table))
	require.NoError(t, b.Err())
	for _, r := range rows { // one row per creation site
		if r[0] == name {
			n += int(r[2].(int64))
			delta += int(r[3].(int64))
			ok = true
		}
	}
	return n, delta, ok
}

// The census window shows what lives, and what changed since its mark;
// closed, it lets go of everything it held.
func TestCensusWindow(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	base := looptest.Settle(t)
	var keep []*pygi.Object
	var win *widgets.Widget
	var watch *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		for range 3 {
			cb, err := callbacks.New(func() {}, callbacks.Name("census_probe"))
			require.NoError(t, err)
			keep = append(keep, cb)
		}
		var err error
		win, err = kit.ShowCensus(nil)
		require.NoError(t, err)
		again, err := kit.ShowCensus(nil)
		require.NoError(t, err)
		same, err := again.Object.Is(win.Object)
		require.NoError(t, err)
		assert.True(t, same, "one census window, raised again")
		again.Close()
		watch, err = widgets.WatchFinalize(win.Object)
		require.NoError(t, err)

		n, _, ok := censusRow(t, win, "callbacks", "census_probe")
		require.True(t, ok, "the probe callbacks have a row")
		assert.Equal(t, 3, n)
		_, err = win.CallMethod("set_mark")
		require.NoError(t, err)
		for range 2 {
			cb, err := callbacks.New(func() {}, callbacks.Name("census_probe"))
			require.NoError(t, err)
			keep = append(keep, cb)
		}
		_, err = win.CallMethod("refresh")
		require.NoError(t, err)
		n, delta, _ := censusRow(t, win, "callbacks", "census_probe")
		assert.Equal(t, 5, n)
		assert.Equal(t, 2, delta, "two more since the mark")
	})
	// The window refreshes itself on a timer while open.
	var before int64
	looptest.Do(t, func(t testing.TB) {
		r, err := win.Object.Attr("refreshes")
		require.NoError(t, err)
		before, _ = pygi.As[int64](r)
	})
	time.Sleep(2200 * time.Millisecond)
	looptest.Do(t, func(t testing.TB) {
		r, err := win.Object.Attr("refreshes")
		require.NoError(t, err)
		now, _ := pygi.As[int64](r)
		assert.Greater(t, now, before, "refreshed by its timer")
		_, err = win.CallMethod("close")
		require.NoError(t, err)
		win.Close()
		win = nil
		for _, k := range keep {
			k.Close()
		}
	})
	assert.True(t, finalized(t, watch), "the closed window is finalised")
	assert.Equal(t, base, looptest.Settle(t), "the census source and the probes are freed")
}
