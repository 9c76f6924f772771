package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/duet-gtk/duet/explore"
)

// minChildRun is the least time left for which -keep-going starts a fresh
// child.
const minChildRun = time.Second

// met is a distinct finding of a -keep-going run: when it was first met,
// with which seed.
type met struct {
	f     *explore.Finding
	seed  uint64
	after time.Duration
}

// seenBefore is the finding of all that is the same trouble as f, or nil.
// Not explore.Finding.Same, which is what a replay must meet again and so
// loose (any message once a place is known; for stalls and hangs, which
// have none, any at all: every stall of the run would be one), but
// explore.Finding.Distinct: kind, place, message (numbers aside) and, for
// a stall or a hang, the action that was running.
func seenBefore(all []*met, f *explore.Finding) *explore.Finding {
	for _, m := range all {
		if !m.f.Distinct(f) {
			return m.f
		}
	}
	return nil
}

// exploreAll is -keep-going: the run goes on after a finding to the end
// of -duration (the child is told keep-going; after a crash or a hang,
// or a program that ended by itself before the run's time, a fresh child
// takes the next seed for the time left), then each distinct finding
// (see seenBefore) is confirmed, shrunk and written, into outDir
// when given, and a summary of all is printed.
func (d *driver) exploreAll(ctx context.Context, outDir string) int {
	if outDir != "" {
		if err := os.MkdirAll(outDir, 0o777); err != nil {
			fmt.Fprintln(d.log, "duetexplore:", err)
			return exitUsage
		}
	}
	began := time.Now()
	deadline := began.Add(d.duration)
	var all []*met
	seed, children, actions, idle := d.seed, 0, 0, 0
	for ctx.Err() == nil {
		left := time.Until(deadline).Round(time.Millisecond)
		if left < minChildRun || d.actions > 0 && actions >= d.actions {
			break
		}
		spec := fmt.Sprintf("seed=%d,duration=%s,%s", seed, left, d.options())
		if d.actions > 0 {
			spec += fmt.Sprintf(",actions=%d", d.actions-actions)
		}
		fmt.Fprintf(d.log, "duetexplore: exploring %s with DUET_EXPLORE=%s\n", filepath.Base(d.exe), spec)
		childBegan := time.Now()
		o, err := d.child(ctx, spec, left)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintln(d.log, "duetexplore:", err)
			return exitUsage
		}
		if o.failed != "" || o.notStarted != "" {
			// Not a finding, and the run cannot go on: with nothing
			// found yet it is the run's outcome; otherwise what was
			// found is still settled.
			status := d.notExplored(o)
			if len(all) == 0 {
				return status
			}
			break
		}
		children++
		d.writePlot(childPlot(d.plot, children), seed, o)
		if o.rep != nil {
			fmt.Fprint(d.out, o.rep)
		} else {
			fmt.Fprintf(d.out, "explore: seed %d: %d actions before the program ended\n", seed, len(o.trace))
		}
		actions += len(o.trace)
		for _, f := range o.findings {
			if m := seenBefore(all, f); m != nil {
				m.Repeats += 1 + f.Repeats
				continue
			}
			// When it was first seen: the child streams each finding with
			// its time in the run (a crash or a hang, which only the parent
			// sees, is at the child's end).
			after := time.Since(began)
			if f.At > 0 {
				after = childBegan.Sub(began) + f.At
			}
			all = append(all, &met{f: f, seed: seed, after: after})
			fmt.Fprintf(d.out, "duetexplore: finding %d, after %.1f s (seed %d), %d actions: %s\n", len(all), after.Seconds(), seed, len(f.Trace), f)
			logDetail(d.out, f)
		}
		// A program that ends by itself at once, twice, has nothing more
		// to show.
		if !o.cut && len(o.trace) == 0 {
			if idle++; idle >= 2 {
				break
			}
		} else {
			idle = 0
		}
		seed++
	}
	if len(all) == 0 {
		fmt.Fprintf(d.out, "duetexplore: nothing found (%d children, %d actions)\n", children, actions)
		return exitClean
	}
	var results []*settled
	for i, m := range all {
		fmt.Fprintf(d.out, "duetexplore: finding %d of %d: %s\n", i+1, len(all), m.f)
		path := ""
		if outDir != "" {
			path = filepath.Join(outDir, fmt.Sprintf("duetexplore-%s-%d.jsonl", m.f.Kind, i+1))
		}
		results = append(results, d.settle(ctx, m.f, m.seed, path))
	}
	fmt.Fprintf(d.out, "duetexplore: %d distinct findings in %.1f s (%d children, %d actions):\n", len(all), time.Since(began).Seconds(), children, actions)
	for i, r := range results {
		m := all[i]
		how := fmt.Sprintf("not confirmed, %d actions", len(r.found.Trace))
		f := r.found
		if r.confirmed {
			f = r.shrunk
			how = fmt.Sprintf("confirmed, shrunk from %d to %d actions", len(r.found.Trace), len(f.Trace))
		}
		fmt.Fprintf(d.out, "  %d. %s [first after %.1f s, seed %d; %s]\n", i+1, f, m.after.Seconds(), m.seed, how)
		if r.file != "" {
			fmt.Fprintf(d.out, "     trace: %s\n", r.file)
		}
		if r.test != "" {
			fmt.Fprintf(d.out, "     test: %s\n", r.test)
		}
	}
	return exitFound
}
