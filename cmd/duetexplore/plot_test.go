package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/explore"
)

// plotMarks reads an SVG plot to its end (failing the test on bad XML) and
// returns the labels of its finding marks and how many lines it draws.
func plotMarks(t *testing.T, path string) (labels []string, lines int) {
	t.Helper()
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(svg))
	inLabel := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the plot is well-formed XML")
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "polyline" {
				lines++
			}
			for _, a := range el.Attr {
				if el.Name.Local == "text" && a.Name.Local == "class" && a.Value == "finding-label" {
					inLabel = true
					labels = append(labels, "")
				}
			}
		case xml.CharData:
			if inLabel {
				labels[len(labels)-1] += string(el)
			}
		case xml.EndElement:
			inLabel = false
		}
	}
	return labels, lines
}

// -plot draws the exploring run from the child's report: its samples'
// three lines and a mark for the panic it found.
func TestPlotFlag(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "run.svg")
	status, stdout := drive(t, "panic", "-seed", "11", "-duration", "10s", "-exe", plantedExe,
		"-o", filepath.Join(dir, "panic.jsonl"), "-max-replays", "1", "-plot", plot)
	require.Equal(t, exitFound, status)
	assert.Contains(t, stdout, "duetexplore: plot of the run written to "+plot)
	labels, lines := plotMarks(t, plot)
	assert.Equal(t, []string{"1 panic"}, labels)
	assert.Equal(t, 3, lines, "actions, live callbacks, RSS")
}

// A child that died before its report: the plot has the actions it
// streamed and the crash, at its last action.
func TestPlotOfAChildThatDied(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "crash.svg")
	var out, log bytes.Buffer
	d := &driver{seed: 5, plot: plot, out: &out, log: &log}
	trace := []explore.Action{{Verb: "click", Label: "A", At: 10 * time.Millisecond}, {Verb: "click", Label: "crash", At: 30 * time.Millisecond}}
	d.writePlot(d.plot, d.seed, &outcome{trace: trace, finding: &explore.Finding{Kind: explore.KindCrash, Message: "SIGSEGV: segmentation violation", Trace: trace}})
	require.Empty(t, log.String())
	assert.Contains(t, out.String(), "plot of the run written to "+plot)
	labels, lines := plotMarks(t, plot)
	assert.Equal(t, []string{"1 crash"}, labels)
	assert.Equal(t, 1, lines, "the actions alone: no samples")
}

// Without -plot, nothing is drawn.
func TestNoPlotWithoutTheFlag(t *testing.T) {
	var out, log bytes.Buffer
	d := &driver{out: &out, log: &log}
	d.writePlot(d.plot, d.seed, &outcome{})
	assert.Empty(t, out.String())
	assert.Empty(t, log.String())
}

// -plot with -keep-going draws each child's run into a file of its own,
// -plot's name with -N (from 1): here a crash, then a fresh child.
func TestPlotWithKeepGoing(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "run.svg")
	status, stdout := driveWindows(t, "crash", "-seed", "5", "-duration", "4s", "-keep-going", "-exe", plantedExe,
		"-o", filepath.Join(dir, "found"), "-max-replays", "1", "-plot", plot)
	require.Equal(t, exitFound, status)
	assert.NoFileExists(t, plot, "one plot a child, none for all")
	first := filepath.Join(dir, "run-1.svg")
	assert.Contains(t, stdout, "duetexplore: plot of the run written to "+first)
	labels, _ := plotMarks(t, first)
	assert.Equal(t, []string{"1 crash"}, labels, "the first child crashed")
	assert.FileExists(t, filepath.Join(dir, "run-2.svg"), "a fresh child after the crash, its own plot")
}

func TestChildPlot(t *testing.T) {
	for _, tc := range []struct{ plot, want string }{
		{"run.svg", "run-3.svg"}, {"/a/b.c/run", "/a/b.c/run-3"}, {"", ""},
	} {
		assert.Equal(t, tc.want, childPlot(tc.plot, 3), tc.plot)
	}
}
