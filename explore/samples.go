package explore

import (
	"time"

	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
)

// sampleEvery is how often Run samples the process (between two steps, so
// an action that keeps the UI thread longer delays the next sample).
const sampleEvery = 250 * time.Millisecond

// A Sample is the run's state at one moment: Run takes one at its start,
// about every 250 ms between two steps, and one at its end, from its own
// goroutine and without a visit to the UI thread.
type Sample struct {
	// At is when it was taken, since the exploration started.
	At time.Duration `json:"at_ns"`
	// Actions counts the actions of the trace so far (the one under way
	// included), Findings the findings so far (repeats not counted).
	Actions  int `json:"actions"`
	Findings int `json:"findings"`
	// Callbacks counts the live Go callbacks (forensics.Stats' Callbacks
	// group: made callable from Python and not freed yet).
	Callbacks int64 `json:"callbacks"`
	// RSS is the process's resident set size in bytes (0 where
	// /proc/self/statm cannot be read).
	RSS int64 `json:"rss"`
}

// sample records a Sample when the last one is sampleEvery old, or now
// when force; once Run has returned the report, never.
func (x *explorer) sample(force bool) {
	if !force && x.sampled && time.Since(x.start)-x.lastSample < sampleEvery {
		return
	}
	s := x.measure()
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ended {
		x.add(s)
	}
}

// measure is a Sample now, but for what x.mu guards (see add).
func (x *explorer) measure() Sample {
	now := time.Since(x.start)
	x.sampled, x.lastSample = true, now
	return Sample{At: now, Callbacks: forensics.ReadStats().Callbacks.Live, RSS: diag.ResidentBytes()}
}

// add completes s with the actions and findings so far and records it;
// x.mu is held.
func (x *explorer) add(s Sample) {
	s.Actions, s.Findings = len(x.report.Trace), len(x.report.Findings)
	x.report.Samples = append(x.report.Samples, s)
}
