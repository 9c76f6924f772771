package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/duet-gtk/duet/explore"
)

// writePlot draws the run o is (with seed) as SVG into path (nothing for
// ""): the explorer's report with its samples, or, for a child that died
// before writing it, the trace it streamed and the crash or hang the
// driver saw.
func (d *driver) writePlot(path string, seed uint64, o *outcome) {
	if path == "" {
		return
	}
	rep := plotReport(seed, o)
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(rep.WritePlot(f), f.Close())
	}
	if err != nil {
		fmt.Fprintln(d.log, "duetexplore: writing the plot:", err)
		return
	}
	fmt.Fprintf(d.out, "duetexplore: plot of the run written to %s\n", path)
}

// childPlot is where -keep-going draws its n-th child's run (from 1):
// -plot's file with -n before its extension (run.svg: run-1.svg, run-2.svg).
// One plot a child, not one for all: each child is a process of its own,
// with its own seed, clock and memory, whose timelines do not join.
func childPlot(plot string, n int) string {
	if plot == "" {
		return ""
	}
	ext := filepath.Ext(plot)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(plot, ext), n, ext)
}

// plotReport is the report to draw for o: the child's own, with the
// finding only the driver saw (a crash, a hang) added.
func plotReport(seed uint64, o *outcome) *explore.Report {
	rep := &explore.Report{Seed: seed, Trace: o.trace}
	if o.rep != nil {
		cp := *o.rep
		rep = &cp
	}
	if o.finding != nil && !slices.Contains(rep.Findings, o.finding) {
		rep.Findings = append(slices.Clone(rep.Findings), o.finding)
	}
	if n := len(rep.Trace); rep.Elapsed == 0 && n > 0 {
		rep.Elapsed = rep.Trace[n-1].At // as far as is known
	}
	return rep
}
