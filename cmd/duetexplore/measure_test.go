package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/explore"
)

// TestMeasurePlanted measures, for each planted kind, how long seeded
// exploration takes to meet it (a child run from its start to its end,
// for seeds 1 to DUETEXPLORE_SEEDS, default 5), the trace a full run
// (plantedKinds' seed and flags) shrinks it to next to the shortest, and
// how many of DUETEXPLORE_MEASURE replays of the shrunk trace meet it
// again. It is a measurement, not a test: it runs only with
// DUETEXPLORE_MEASURE set, and writes its table to the log (and to
// DUETEXPLORE_MEASURE_OUT, if set):
//
//	DUETEXPLORE_MEASURE=10 xvfb-run -a go test -run TestMeasurePlanted -v -timeout 30m ./cmd/duetexplore/
func TestMeasurePlanted(t *testing.T) {
	replays, _ := strconv.Atoi(os.Getenv("DUETEXPLORE_MEASURE"))
	if replays <= 0 {
		t.Skip("a measurement: DUETEXPLORE_MEASURE=N (replays of each shrunk trace) runs it")
	}
	seeds := 5
	if n, err := strconv.Atoi(os.Getenv("DUETEXPLORE_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	kinds := append([]struct {
		kind    explore.Kind
		seed    string
		flags   []string
		message string
		shrunk  []string
	}{{kind: explore.KindPanic, seed: "11", shrunk: []string{"click 'A' in 'panic'", "click 'B' in 'panic'"}}}, plantedKinds...)
	var table strings.Builder
	fmt.Fprintf(&table, "| kind | first finding, %d seeds: median (min–max) | met by | shrunk (shortest) | replays that reproduce |\n|---|---|---|---|---|\n", seeds)
	t.Setenv("PLANTED", "")
	for _, tc := range kinds {
		mode := string(tc.kind)
		d := measureDriver(t, tc.flags)
		d.appArgs = []string{"-planted=" + mode}
		var times []time.Duration
		met := 0
		for s := 1; s <= seeds; s++ {
			d.seed = uint64(s)
			spec := fmt.Sprintf("seed=%d,duration=60s,%s", s, d.options())
			began := time.Now()
			o, err := d.child(context.Background(), spec, time.Minute)
			require.NoError(t, err)
			if o.finding != nil && (o.finding.Kind == tc.kind || tc.kind == "wedge" && o.finding.Kind == explore.KindHang) {
				times = append(times, time.Since(began))
				met++
			} else {
				t.Logf("%s, seed %d: met %v", mode, s, o.finding)
			}
		}
		slices.Sort(times)
		first := "never"
		if len(times) > 0 {
			first = fmt.Sprintf("%.1f s (%.1f–%.1f s)", times[len(times)/2].Seconds(), times[0].Seconds(), times[len(times)-1].Seconds())
		}

		out := filepath.Join(t.TempDir(), mode+".jsonl")
		args := append([]string{"-seed", tc.seed, "-duration", "60s", "-exe", plantedExe, "-o", out}, tc.flags...)
		status, _ := driveWindows(t, mode, args...)
		shrunk, again := "not found", "-"
		if status == exitFound {
			rep := readFile(t, out)
			shrunk = fmt.Sprintf("%d (%d)", len(rep.Trace), len(tc.shrunk))
			n := 0
			for range replays {
				o, err := d.replay(context.Background(), rep.Trace, rep.Findings[0])
				require.NoError(t, err)
				if o.met(rep.Findings[0]) != nil {
					n++
				}
			}
			again = fmt.Sprintf("%d/%d", n, replays)
		}
		fmt.Fprintf(&table, "| %s | %s | %d/%d seeds | %s | %s |\n", mode, first, met, seeds, shrunk, again)
	}
	t.Logf("\n%s", table.String())
	if path := os.Getenv("DUETEXPLORE_MEASURE_OUT"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(table.String()), 0o666))
	}
}

// measureDriver is a driver with the default flags and flags on top.
func measureDriver(t *testing.T, flags []string) *driver {
	t.Helper()
	d := &driver{exe: plantedExe, tmp: t.TempDir(), log: os.Stderr, pace: 5 * time.Millisecond, gc: 50 * time.Millisecond,
		stall: time.Second, hang: 10 * time.Second, grace: 30 * time.Second, shrinkTime: 2 * time.Minute, maxReplays: 200}
	for i := 0; i+1 < len(flags); i += 2 {
		switch flags[i] {
		case "-stall":
			d.stall, _ = time.ParseDuration(flags[i+1])
		case "-hang":
			d.hang, _ = time.ParseDuration(flags[i+1])
		case "-leak-every":
			d.leakEvery, _ = strconv.Atoi(flags[i+1])
		case "-leak-rounds":
			d.leakRounds, _ = strconv.Atoi(flags[i+1])
		default:
			t.Fatalf("measureDriver: flag %s", flags[i])
		}
	}
	return d
}
