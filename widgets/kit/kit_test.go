package kit_test

import (
	"testing"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

func TestMain(m *testing.M) { looptest.Main(m) }

// finalized reports whether the watch has fired once both collectors and
// duet's reaping have settled.
func finalized(t testing.TB, w *widgets.Watch) bool {
	t.Helper()
	looptest.Settle(t)
	return w.Finalized()
}

func TestReadyMadeWidgets(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var chart *kit.LineChart
	var logv *kit.LogView
	looptest.Do(t, func(t testing.TB) {
		var err error
		chart, err = kit.NewLineChart("load", "%", 100)
		require.NoError(t, err)
		logv, err = kit.NewLogView(3)
		require.NoError(t, err)
	})
	// Fed from goroutines.
	done := make(chan struct{})
	go func() {
		for i := range 150 {
			chart.Push("cpu", float64(i))
			if i%50 == 0 {
				logv.Printf("step %d", i)
			}
		}
		logv.Log("error", "last line")
		close(done)
	}()
	<-done
	looptest.Turn(t) // the batches have been delivered
	looptest.Do(t, func(t testing.TB) {
		pts, err := chart.Points("cpu")
		require.NoError(t, err)
		require.Len(t, pts, 100, "capacity keeps the newest values")
		assert.Equal(t, 50.0, pts[0])
		assert.Equal(t, 149.0, pts[99])
		text, err := logv.Text()
		require.NoError(t, err)
		assert.Equal(t, "step 50\nstep 100\nlast line\n", text, "max-lines keeps the newest lines")

		// They draw: put them in a window and let GTK render a frame.
		win := gtk.NewWindow()
		widgets.Track(win)
		box := gtk.NewBox(gtk.OrientationVertical, 0)
		widgets.Track(box)
		win.SetChild(box)
		for _, w := range []*pygi.Object{chart.Object, logv.Object} {
			r, err := widgets.CallMethod(box, "append", w)
			require.NoError(t, err)
			r.Close()
		}
		win.Present()
		t.Cleanup(func() { looptest.Do(t, func(testing.TB) { win.Destroy() }) })
	})
	time.Sleep(200 * time.Millisecond)
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

// A census window destroyed without a close request (window.destroy())
// is not raised again: the next ShowCensus opens a new one, and the old
// one's timer stops.
func TestCensusWindowDestroyedIsReplaced(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var old *widgets.Widget
	looptest.Do(t, func(t testing.TB) {
		var err error
		old, err = kit.ShowCensus(nil)
		require.NoError(t, err)
		_, err = old.CallMethod("destroy")
		require.NoError(t, err)
	})
	time.Sleep(2200 * time.Millisecond) // a tick of its timer (whole seconds, coalesced)
	looptest.Do(t, func(t testing.TB) {
		r, err := old.Object.Attr("timer")
		require.NoError(t, err)
		timer, _ := pygi.As[int64](r)
		assert.Zero(t, timer, "the destroyed window's timer stopped")
		again, err := kit.ShowCensus(nil)
		require.NoError(t, err)
		same, err := again.Object.Is(old.Object)
		require.NoError(t, err)
		assert.False(t, same, "a new window, not the destroyed one")
		_, err = again.CallMethod("close")
		require.NoError(t, err)
		again.Close()
		old.Close()
	})
}

// Opened and closed again and again, the census window leaves nothing
// behind: with GTK 4.8 and PyGObject 3.42 a notebook tab label the
// program made is never freed, so the window lets the notebook make its
// own.
func TestCensusWindowReopenedLeavesNothing(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var watches []*widgets.Watch // one per tab label
	for range 4 {
		looptest.Do(t, func(t testing.TB) {
			win, err := kit.ShowCensus(nil)
			require.NoError(t, err)
			nb, err := win.Object.Attr("notebook")
			require.NoError(t, err)
			for i := range 3 {
				page, err := nb.CallMethod("get_nth_page", i)
				require.NoError(t, err)
				tab, err := nb.CallMethod("get_tab_label", page)
				require.NoError(t, err)
				w, err := widgets.WatchFinalize(tab)
				require.NoError(t, err)
				watches = append(watches, w)
				tab.Close()
				page.Close()
			}
			nb.Close()
			_, err = win.CallMethod("close")
			require.NoError(t, err)
			win.Close()
		})
	}
	looptest.Settle(t)
	for i, w := range watches {
		assert.True(t, finalized(t, w), "tab label %d is finalised", i)
	}
}
