package explore_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
)

// A run samples itself from its start to its end: time, actions and
// findings only grow, the last sample agrees with the report, and each
// finding has the time it was seen, after the action that led to it.
func TestSamples(t *testing.T) {
	clicks := 0
	window(t, "samples", `a = Gtk.Button(label="A"); a.connect("clicked", on_a); box.append(a)
def on_b(button):
    on_b.n = getattr(on_b, "n", 0) + 1
    if on_b.n % 7 == 0:
        raise KeyError("B %d" % on_b.n)
b = Gtk.Button(label="B"); b.connect("clicked", on_b); box.append(b)`,
		pygi.Kw{"on_a": func(*pygi.Object) { clicks++ }})
	rep := run(t, explore.Options{Seed: 5, Actions: 80, KeepGoing: true, LeakRounds: -1})
	require.Len(t, rep.Trace, 80)
	require.NotEmpty(t, rep.Findings, "B raises at each 7th click: %s", rep)
	require.GreaterOrEqual(t, len(rep.Samples), 2, "a sample at the start and one at the end")

	for i, s := range rep.Samples {
		assert.Positive(t, s.RSS, "sample %d: RSS", i)
		assert.Positive(t, s.Callbacks, "sample %d: the handler on_a is a live Go callback", i)
		if i == 0 {
			continue
		}
		prev := rep.Samples[i-1]
		assert.GreaterOrEqual(t, s.At, prev.At, "sample %d: time", i)
		assert.GreaterOrEqual(t, s.Actions, prev.Actions, "sample %d: actions", i)
		assert.GreaterOrEqual(t, s.Findings, prev.Findings, "sample %d: findings", i)
	}
	last := rep.Samples[len(rep.Samples)-1]
	assert.Equal(t, len(rep.Trace), last.Actions)
	assert.Equal(t, len(rep.Findings), last.Findings)
	assert.LessOrEqual(t, last.At, rep.Elapsed)

	for i, f := range rep.Findings {
		require.NotEmpty(t, f.Trace, "finding %d", i)
		assert.Positive(t, f.At, "finding %d", i)
		assert.LessOrEqual(t, f.At, rep.Elapsed, "finding %d", i)
		assert.GreaterOrEqual(t, f.At, f.Trace[len(f.Trace)-1].At, "finding %d: seen after its last action began", i)
		if i > 0 {
			assert.GreaterOrEqual(t, f.At, rep.Findings[i-1].At, "findings in the order seen")
		}
	}

	var b bytes.Buffer
	require.NoError(t, rep.WritePlot(&b))
	labels, marks, lines := svgMarks(t, b.Bytes())
	assert.Equal(t, len(rep.Findings), marks)
	assert.Len(t, labels, len(rep.Findings))
	assert.Equal(t, 3, lines)
}

// WriteJSON writes the samples and the findings' times, and the summary's
// rate and coverage; ReadReport reads them back, and reads a file written
// before samples were.
func TestJSONRoundTrip(t *testing.T) {
	rep := plotted()
	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	back, err := explore.ReadReport(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, rep.Samples, back.Samples)
	assert.Equal(t, rep.Findings, back.Findings, "times included")
	assert.Equal(t, rep.Trace, back.Trace)
	assert.Equal(t, rep.Elapsed, back.Elapsed)
	assert.Equal(t, rep.String(), back.String())

	var sampleLines int
	var summary map[string]any
	for line := range strings.Lines(b.String()) {
		var l struct {
			Sample  json.RawMessage
			Summary map[string]any
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		if l.Sample != nil {
			sampleLines++
		}
		if l.Summary != nil {
			summary = l.Summary
		}
	}
	assert.Equal(t, len(rep.Samples), sampleLines)
	require.NotNil(t, summary)
	assert.EqualValues(t, 60, summary["actions_per_s"], "1200 actions in 20 s")
	assert.EqualValues(t, 0.775, summary["coverage"], "31 of 40")
	assert.EqualValues(t, 31, summary["reached"])
	assert.EqualValues(t, 40, summary["seen"])
	assert.Contains(t, rep.String(), "(60.0/s)", "the words give the same rate")

	old := `{"action":{"verb":"click","address":"window 'w' > GtkButton#0 'A'","label":"A","at_ns":1000}}
{"finding":{"kind":"panic","message":"boom","where":"main.go:3","trace":[{"verb":"click","address":"window 'w' > GtkButton#0 'A'","label":"A","at_ns":1000}]}}
{"summary":{"seed":7,"elapsed_ns":2000000000,"seen":1,"reached":1,"actions":1,"findings":1}}
`
	prev, err := explore.ReadReport(strings.NewReader(old))
	require.NoError(t, err)
	assert.Empty(t, prev.Samples)
	require.Len(t, prev.Findings, 1)
	assert.Zero(t, prev.Findings[0].At)
	assert.Len(t, prev.Trace, 1)
	assert.EqualValues(t, 7, prev.Seed)
}

// The same trouble met again is the same finding even where its message
// names an object by address, as GTK's warnings do: a replay or a shrunk
// trace meets it at another address.
func TestSameIgnoresAddresses(t *testing.T) {
	at := func(addr string) *explore.Finding {
		return &explore.Finding{Kind: explore.KindLog, Message: "Gtk-WARNING: Trying to snapshot GtkGizmo " + addr + " without a current allocation"}
	}
	assert.True(t, at("0x40409640").Same(at("0x7f3a2c01d0e0")))
	assert.False(t, at("0x40409640").Same(&explore.Finding{Kind: explore.KindLog, Message: "Gtk-WARNING: something else 0x40409640"}))
	other := at("0x40409640")
	other.Kind = explore.KindException
	assert.False(t, at("0x40409640").Same(other))
}
