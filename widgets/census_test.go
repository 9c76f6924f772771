package widgets_test

import (
	"testing"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/widgets"
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
