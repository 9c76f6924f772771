package widgets_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// SetProp on the paths apps use most: a GTK property (C), a Python
// widget's integer property, and a string one.
func BenchmarkSetProp(b *testing.B) {
	var label, chart *widgets.Widget
	looptest.Do(b, func(t testing.TB) {
		l, err := Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		label = widgets.Wrap(l)
		c, err := kit.NewLineChart("t", "u", 5)
		require.NoError(t, err)
		chart = c.Widget
	})
	for _, c := range []struct {
		name  string
		w     **widgets.Widget
		prop  string
		value any
	}{
		{"gtk-int", &label, "width-chars", 12},
		{"python-int", &chart, "capacity", 50},
		{"python-str", &chart, "title", "a title"},
	} {
		b.Run(c.name, func(b *testing.B) {
			looptest.Do(b, func(t testing.TB) {
				for b.Loop() {
					if err := (*c.w).SetProp(c.prop, c.value); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
