package explore_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/explore"
)

// svgMarks decodes an SVG to its end (failing the test on bad XML) and
// returns the labels of its finding marks, how many marks (lines of class
// finding) it draws and how many polylines.
func svgMarks(t *testing.T, svg []byte) (labels []string, marks, lines int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	root := true
	inLabel := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		switch el := tok.(type) {
		case xml.StartElement:
			if root {
				require.Equal(t, "svg", el.Name.Local)
				require.Equal(t, "http://www.w3.org/2000/svg", el.Name.Space)
				root = false
			}
			class := ""
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			switch {
			case el.Name.Local == "polyline":
				lines++
			case el.Name.Local == "line" && class == "finding":
				marks++
			case el.Name.Local == "text" && class == "finding-label":
				inLabel = true
				labels = append(labels, "")
			}
		case xml.CharData:
			if inLabel {
				labels[len(labels)-1] += string(el)
			}
		case xml.EndElement:
			inLabel = false
		}
	}
	require.False(t, root, "an svg element")
	return labels, marks, lines
}

// A report as a run writes it: samples, and findings at their times.
func plotted() *explore.Report {
	rep := &explore.Report{Seed: 42, Elapsed: 20 * time.Second, Seen: 40, Reached: 31}
	for i := range 1200 {
		rep.Trace = append(rep.Trace, explore.Action{Verb: "click", Address: "window 'w' > GtkButton#0 'A'", Label: "A", At: time.Duration(i) * 16 * time.Millisecond})
	}
	for i := range 81 {
		at := time.Duration(i) * 250 * time.Millisecond
		rep.Samples = append(rep.Samples, explore.Sample{At: at, Actions: i * 15, Callbacks: 120 + int64(i%7) + int64(i/4),
			RSS: (60 << 20) + int64(i)*(1<<18), Findings: min(i/20, 3)})
	}
	trace := func(n int) []explore.Action { return rep.Trace[:n] }
	rep.Findings = []*explore.Finding{
		{Kind: explore.KindLog, Message: "Gtk-CRITICAL: gtk_box_append: assertion 'gtk_widget_get_parent (child) == NULL' failed", At: 5 * time.Second, Trace: trace(300)},
		{Kind: explore.KindLeak, Message: `live Go callback "on_keep" grew <fast> & "steadily"` + "\x00\x1b[31m", Where: "main.go:12", At: 10*time.Second + 100*time.Millisecond, Trace: trace(630), Repeats: 2},
		{Kind: explore.KindPanic, Message: "assignment to entry in nil map", Where: "main.go:23", At: 10*time.Second + 300*time.Millisecond, Trace: trace(640)},
		// A crash a parent saw: no time of its own, marked at its trace's
		// last action.
		{Kind: explore.KindCrash, Message: "SIGSEGV: segmentation violation", Trace: trace(1200)},
	}
	return rep
}

// The plot is well-formed SVG, with one line per lane and one mark per
// finding, labelled with its number and kind.
func TestWritePlot(t *testing.T) {
	rep := plotted()
	var b bytes.Buffer
	require.NoError(t, rep.WritePlot(&b))
	labels, marks, lines := svgMarks(t, b.Bytes())
	assert.Equal(t, []string{"1 log", "2 leak", "3 panic", "4 crash"}, labels)
	assert.Equal(t, 4, marks)
	assert.Equal(t, 3, lines, "actions, live callbacks, RSS")
	svg := b.String()
	assert.Contains(t, svg, "duet explore, seed 42: 20.0 s, 1200 actions (60.0/s), 78% coverage (31 of 40), 4 findings")
	assert.Contains(t, svg, "RSS (MB)")
	assert.Contains(t, svg, "live Go callbacks")
	assert.Contains(t, svg, "1. log at 5.0 s, after 300 actions: Gtk-CRITICAL")
	assert.Contains(t, svg, "4. crash at 19.2 s, after 1200 actions", "a crash at its trace's last action")
	if dir := os.Getenv("EXPLORE_PLOT_DIR"); dir != "" {
		require.NoError(t, os.WriteFile(dir+"/synthetic.svg", b.Bytes(), 0o644))
	}
}

// Reports with little in them still make a well-formed plot: none at
// all, a trace without samples (a process that died before its report),
// and more findings than the plot lists in words.
func TestWritePlotOfLittle(t *testing.T) {
	many := &explore.Report{Elapsed: time.Second, Samples: []explore.Sample{{}, {At: time.Second, Actions: 3, RSS: 1 << 20}}}
	for i := range 12 {
		many.Findings = append(many.Findings, &explore.Finding{Kind: explore.KindStall, Message: "slow", At: time.Duration(i) * 50 * time.Millisecond})
	}
	for name, tc := range map[string]struct {
		rep   *explore.Report
		marks int
		lines int
		words string
	}{
		"empty": {rep: &explore.Report{}, words: "no actions"},
		"no samples": {rep: &explore.Report{Trace: []explore.Action{{Verb: "click", At: time.Millisecond}, {Verb: "click", At: 2 * time.Millisecond}},
			Findings: []*explore.Finding{{Kind: explore.KindCrash, Message: "SIGSEGV"}}}, marks: 1, lines: 1, words: "no samples"},
		"many findings": {rep: many, marks: 12, lines: 3, words: "and 4 more"},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.rep.WritePlot(&b))
			labels, marks, lines := svgMarks(t, b.Bytes())
			assert.Equal(t, tc.marks, marks)
			assert.Len(t, labels, tc.marks)
			assert.Equal(t, tc.lines, lines)
			assert.True(t, strings.Contains(b.String(), tc.words), "%q in %s", tc.words, b.String())
		})
	}
}
