package harness

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/forensics"
)

func TestSlope(t *testing.T) {
	var s []Sample
	for i := range 100 {
		// 1 MB per minute: 1/60 MB per second, sampled every second.
		s = append(s, Sample{T: float64(i), RSS: int64(100<<20 + float64(i)/60*(1<<20))})
	}
	assert.InDelta(t, 1.0, slope(s), 0.01)
	assert.Zero(t, slope(s[:4]), "too few samples")
}

func TestBlackBoxSurvivesTheWriter(t *testing.T) {
	path, err := newBlackBoxFile()
	require.NoError(t, err)
	defer os.Remove(path)
	b, err := openBlackBox(path)
	require.NoError(t, err)
	for i := range 40 {
		b.op(strings.Repeat("x", i%5) + "op")
		b.addIter(1)
	}
	b.op(strings.Repeat("long", 100)) // clipped to the slot
	iter, ops := readBlackBox(path)
	assert.Equal(t, int64(40), iter)
	require.Len(t, ops, boxSlots)
	assert.Equal(t, "xxxxop", ops[len(ops)-2])
	assert.Len(t, ops[len(ops)-1], boxSlotSize-2)
}

func TestJudge(t *testing.T) {
	sc := Scenario{Name: "x", CanCrashBroken: true}
	ok := &Sample{Final: true}
	cases := []struct {
		name string
		rep  Report
		own  string
		fin  *Sample
		ok   bool
		want string
	}{
		{"clean", Report{Iterations: 5}, "capsule", ok, true, "ok"},
		{"leak", Report{Iterations: 5, CbLiveEnd: 3, CbBaseline: 1}, "capsule", ok, false, "3 callbacks live"},
		{"cycle", Report{Iterations: 5, Cycles: []string{"callback on_click (main.go:12) holds the GtkButton 0x1 it is connected to"}}, "capsule", ok, false, "on_click (main.go:12)"},
		{"crash", Report{Iterations: 5, Crash: &Crash{Signal: "SIGSEGV"}}, "capsule", ok, false, "crashed: SIGSEGV"},
		{"no progress", Report{}, "capsule", ok, false, "no progress"},
		{"rss", Report{Iterations: 5, RSS: RSS{SlopeMBPerMin: 50}, Samples: []Sample{{T: 0}, {T: 30}, {T: 60}}}, "capsule", ok, false, "RSS grows"},
		{"rss noise in a short run", Report{Iterations: 5, RSS: RSS{SlopeMBPerMin: 12}, Samples: []Sample{{T: 0}, {T: 5}, {T: 10}}}, "capsule", ok, true, "ok"},
		{"no final", Report{Iterations: 5}, "capsule", nil, false, "without a final report"},
		{"broken crashed", Report{Crash: &Crash{Signal: "SIGSEGV"}}, "go", nil, true, "crash reproduced"},
		{"broken survived", Report{Iterations: 5}, "go", ok, false, "did not crash"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rep
			judge(&r, sc, Options{Ownership: tc.own, MaxRSSSlope: 8, MinRSSGrowth: 2}, tc.fin)
			assert.Equal(t, tc.ok, r.OK, r.Verdict)
			assert.Contains(t, r.Verdict, tc.want)
		})
	}
}

func TestPlotAndReport(t *testing.T) {
	dir := t.TempDir()
	r := &Report{Scenario: "s", Ownership: "capsule", Verdict: "ok <fine>", Iterations: 3}
	for i := range 10 {
		r.Samples = append(r.Samples, Sample{T: float64(i), RSS: int64(100+i) << 20, CbLive: int64(i % 3)})
	}
	js, svg, err := WriteReport(dir, Summary{Verdict: "ok", OK: true, Runs: []*Report{r, {Scenario: "empty"}}})
	require.NoError(t, err)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "polyline")
	assert.Contains(t, string(b), "ok &lt;fine&gt;", "text is escaped")
	assert.Contains(t, string(b), "no samples")
	_, err = os.Stat(js)
	assert.NoError(t, err)
}

// The plot names what the census saw grow; the crash part of a child's
// stderr is read into the report.
func TestPlotMarksGrowthAndCrashPartsAreRead(t *testing.T) {
	grew := &Report{Scenario: "leaky", Samples: []Sample{{T: 0, RSS: 1 << 20}, {T: 1, RSS: 2 << 20}},
		Census: CensusSpan{Start: &forensics.Census{}, End: &forensics.Census{},
			Grew: []forensics.Change{{Table: "gobjects", Name: "GtkLabel", From: 1, To: 13}}}}
	clean := &Report{Scenario: "clean", Samples: grew.Samples,
		Census: CensusSpan{Start: &forensics.Census{}, End: &forensics.Census{}}}
	svg := Plot([]*Report{grew, clean})
	assert.Contains(t, svg, "census grew: gobjects GtkLabel +12")
	assert.Contains(t, svg, "census: nothing grew from start to end")

	stderr := "noise\nduet: use after free: callback on_click (x.go:3), freed by Python at 1.00 s, called from Python\n\n" +
		"=== duet crash report ===\nlast boundary crossings, oldest first (#, thread, kind, what):\n" +
		"  #1 thread 7 (main)  call  list sort\n  #2 thread 7 (main)  Python calls Go  on_click\n" +
		"Python threads (most recent call first):\n  File \"app.py\", line 3 in main\n" +
		"the whole report is in /tmp/r.txt\n=== end of duet's part; ...\nSIGABRT: abort\n"
	var c Crash
	readDuetPart(&c, stderr)
	assert.Equal(t, "callback on_click (x.go:3), freed by Python at 1.00 s, called from Python", c.Diagnosis)
	assert.Equal(t, []string{"#1 thread 7 (main)  call  list sort", "#2 thread 7 (main)  Python calls Go  on_click"}, c.LastCrossings)
	assert.Equal(t, `File "app.py", line 3 in main`, c.Python)
	assert.True(t, strings.HasPrefix(crashText(stderr), "duet: use after free:"), "the crash text starts at duet's first line")
}
