package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/duet-gtk/duet/explore"
)

// writePlot draws the run o is as SVG into -plot's file (nothing without
// -plot): the explorer's report with its samples, or, for a child that
// died before writing it, the trace it streamed and the crash or hang the
// driver saw.
func (d *driver) writePlot(o *outcome) {
	if d.plot == "" {
		return
	}
	rep := plotReport(d.seed, o)
	f, err := os.Create(d.plot)
	if err == nil {
		err = errors.Join(rep.WritePlot(f), f.Close())
	}
	if err != nil {
		fmt.Fprintln(d.log, "duetexplore: writing the plot:", err)
		return
	}
	fmt.Fprintf(d.out, "duetexplore: plot of the run written to %s\n", d.plot)
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
