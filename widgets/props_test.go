package widgets_test

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

const gaugeSource = `
from gi.repository import GObject, Gtk

class Gauge(Gtk.Widget):
    level = GObject.Property(type=int, default=5, minimum=0, maximum=100)
    ratio = GObject.Property(type=float, default=0.5, minimum=0.0, maximum=1.0)
    count = GObject.Property(type=GObject.TYPE_UINT64, default=0)
    wide = GObject.Property(type=GObject.TYPE_INT64, default=0)
    small = GObject.Property(type=GObject.TYPE_FLOAT, default=0)
    label = GObject.Property(type=str, default="")
    on = GObject.Property(type=bool, default=False)
    way = GObject.Property(type=Gtk.Orientation, default=Gtk.Orientation.HORIZONTAL)
    seed = GObject.Property(type=int, default=1, flags=GObject.ParamFlags.READWRITE | GObject.ParamFlags.CONSTRUCT_ONLY)
    frozen = GObject.Property(type=int, default=1, flags=GObject.ParamFlags.READABLE)
`

// The GLib warnings a test caused (PyGObject turns GLib-GObject's into
// Python warnings; RouteLogs brings both to Go).
func routeWarnings(t *testing.T) *capture {
	c := &capture{}
	stop, err := eventloop.RouteLogs(c)
	require.NoError(t, err)
	t.Cleanup(stop)
	return c
}

func (c *capture) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.msgs, "\n")
}

// A write the property's spec does not allow is an error that says what
// the spec allows, and nothing is written; GLib would warn and drop it
// while SetProp returned nil.
func TestSetPropRefusesWhatTheSpecDoesNotAllow(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	logs := routeWarnings(t)
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	looptest.Do(t, func(t testing.TB) {
		m, err := widgets.LoadSource("gauge_props", gaugeSource)
		require.NoError(t, err)
		g, err := m.New("Gauge", nil)
		require.NoError(t, err)
		box, err := Gtk(t).CallMethod("Box")
		require.NoError(t, err)
		label, err := Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		gauge, gtkBox, gtkLabel := widgets.Wrap(g.Object), widgets.Wrap(box), widgets.Wrap(label)
		for _, c := range []struct {
			w     *widgets.Widget
			prop  string
			value any
			want  string // "" for a write that is done
		}{
			{gauge, "level", 150, "property 'level' of gauge_props+Gauge: 150 is out of range (it takes 0 to 100)"},
			{gauge, "level", -1, "-1 is out of range (it takes 0 to 100)"},
			{gauge, "level", 1 << 40, "1099511627776 is out of range (it takes 0 to 100)"},
			{gauge, "level", uint64(math.MaxUint64), "18446744073709551615 is out of range"},
			{gauge, "level", huge, "123456789012345678901234567890 is out of range"},
			{gauge, "level", 50.7, "50.7 is not a whole number (it takes 0 to 100)"},
			{gauge, "level", math.NaN(), "nan is not a whole number"},
			{gauge, "level", math.Inf(1), "inf is not a whole number"},
			{gauge, "level", 100, ""},
			{gauge, "level", 40.0, ""},
			{gauge, "level", true, ""},
			{gauge, "ratio", math.NaN(), "property 'ratio' of gauge_props+Gauge: nan is not a number (it takes 0.0 to 1.0)"},
			{gauge, "ratio", math.Inf(-1), "-inf is out of range (it takes 0.0 to 1.0)"},
			{gauge, "ratio", 2, "2 is out of range (it takes 0.0 to 1.0)"},
			{gauge, "ratio", huge, "is out of range (it takes 0.0 to 1.0)"},
			{gauge, "ratio", 0.25, ""},
			{gauge, "count", -1, "-1 is out of range (it takes 0 to 18446744073709551615)"},
			{gauge, "count", uint64(math.MaxUint64), ""},
			{gauge, "wide", int64(math.MinInt64), ""},
			{gauge, "wide", uint64(math.MaxUint64), "18446744073709551615 is out of range (it takes -9223372036854775808 to 9223372036854775807)"},
			{gauge, "small", 1e300, "1e+300 is out of range (it takes -3.4028234663852886e+38 to 3.4028234663852886e+38)"},
			{gauge, "small", 1.5, ""},
			{gauge, "way", 7, "property 'way' of gauge_props+Gauge: 7 is not a value of GtkOrientation"},
			{gauge, "way", 1, ""},
			{gauge, "on", 5, ""},
			{gauge, "label", "text", ""},
			{gtkBox, "spacing", -5, "property 'spacing' of GtkBox: -5 is out of range (it takes 0 to 2147483647)"},
			{gtkBox, "orientation", 9, "9 is not a value of GtkOrientation"},
			{gtkLabel, "xalign", math.NaN(), "property 'xalign' of GtkLabel: nan is not a number"},
			{gtkLabel, "width-chars", 12, ""},
			{gtkLabel, "width_chars", 13, ""},
		} {
			before, err := c.w.Prop(c.prop)
			require.NoError(t, err)
			err = c.w.SetProp(c.prop, c.value)
			if c.want == "" {
				assert.NoError(t, err, "%s = %v", c.prop, c.value)
				continue
			}
			var pe *pygi.Error
			if assert.True(t, errors.As(err, &pe), "%s = %v: want a ValueError, got %v", c.prop, c.value, err) {
				assert.True(t, pe.Matches("ValueError"), "%v", err)
				assert.Contains(t, pe.Message, c.want)
			}
			after, err := c.w.Prop(c.prop)
			require.NoError(t, err)
			assert.Equal(t, before.String(), after.String(), "%s = %v: nothing written", c.prop, c.value)
		}
		// What the spec cannot judge stays PyGObject's error.
		for prop, want := range map[string]string{"seed": "can only be set in constructor", "frozen": "not writable", "nosuch": "does not have property"} {
			err := gauge.SetProp(prop, 3)
			var pe *pygi.Error
			if assert.True(t, errors.As(err, &pe), "%s: %v", prop, err) {
				assert.True(t, pe.Matches("TypeError"), "%v", err)
				assert.Contains(t, pe.Message, want)
			}
		}
		// A name GLib would read as another one is not checked as that one.
		err = gauge.SetProp("level\x00junk", 150)
		assert.ErrorContains(t, err, "null character")
		assert.NotContains(t, err.Error(), "out of range")

		// Converting the value runs Python code (str() of an object for a
		// string property), which may call Go, which writes again: each
		// write is checked on its own.
		reentered := 0
		g2, err := pygi.NewGlobals()
		require.NoError(t, err)
		require.NoError(t, g2.SetItem("again", func() string {
			reentered++
			if reentered == 1 {
				assert.ErrorContains(t, gauge.SetProp("level", 101), "out of range")
				assert.NoError(t, gauge.SetProp("level", 42))
			}
			return "from Go"
		}))
		odd, err := pygi.Eval("type('Odd', (), {'__str__': lambda self: again()})()", g2)
		require.NoError(t, err)
		_ = gauge.SetProp("label", odd) // PyGObject's own conversion decides
		assert.GreaterOrEqual(t, reentered, 1)
		lv, err := gauge.Prop("level")
		require.NoError(t, err)
		n, _ := pygi.As[int64](lv)
		assert.Equal(t, int64(42), n)

		err = gauge.SetProp("level", "3")
		assert.ErrorContains(t, err, "TypeError", "a value of the wrong type")
		assert.ErrorContains(t, widgets.Wrap(pygi.None()).SetProp("level", 3), "AttributeError", "not a GObject: Python's own error")
	})
	assert.NotContains(t, logs.all(), "out of range", "no write reached GLib's validation")
}

// The constructor's property values are checked the same way.
func TestConstructorPropertiesAreChecked(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	logs := routeWarnings(t)
	looptest.Do(t, func(t testing.TB) {
		m, err := widgets.LoadSource("gauge_construct", gaugeSource)
		require.NoError(t, err)
		_, err = m.New("Gauge", pygi.Kw{"level": 150})
		assert.ErrorContains(t, err, "ValueError: property 'level' of gauge_construct+Gauge: 150 is out of range (it takes 0 to 100)")
		_, err = m.New("Gauge", pygi.Kw{"frozen": 2})
		assert.ErrorContains(t, err, "TypeError: property 'frozen' of gauge_construct+Gauge is not writable")
		g, err := m.New("Gauge", pygi.Kw{"level": 7, "seed": 9})
		require.NoError(t, err)
		v, err := g.Prop("seed")
		require.NoError(t, err)
		n, _ := pygi.As[int64](v)
		assert.Equal(t, int64(9), n, "construct-only properties are what constructors are for")

		_, err = kit.NewLineChart("t", "u", 1)
		assert.ErrorContains(t, err, "property 'capacity' of DuetLineChart: 1 is out of range (it takes 2 to 1000000)")
		_, err = kit.NewLogView(0)
		assert.ErrorContains(t, err, "property 'max-lines' of DuetLogView: 0 is out of range", "found by its Python spelling, max_lines")
	})
	assert.NotContains(t, logs.all(), "out of range")
}
