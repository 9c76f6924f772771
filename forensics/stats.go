package forensics

import "github.com/duet-gtk/duet/internal/diag"

// Stats are duet's running counts since start-up, one group per package
// that counts: cheap to read (a few short locks, no Python),
// for tests, dashboards and the stress harness. TakeCensus says what lives
// by name and site; Stats says how much was made and released. A group
// whose package the program does not link reads as zero.
type Stats struct {
	// Objects counts pygi.Objects (Go's references to Python objects).
	Objects struct {
		Created   int64 // Objects made
		Closed    int64 // references released by Close
		Collected int64 // Objects collected by Go's GC without having been closed
		Drained   int64 // references released by the queue (see pygi.Drain)
		Pending   int64 // references waiting in the queue
		// Live counts the Objects made for callers, holding a reference and
		// still reachable from Go; TakeCensus's python table also counts
		// duet's own references for the process (None, its helper modules).
		Live int64
	}
	// Callbacks counts Go funcs made callable from Python (package callbacks).
	Callbacks struct {
		Created int64 // callables made
		Freed   int64 // freed by Python (capsule destructor)
		// FreedByGoGC counts broken-mode callbacks whose native state
		// Go's GC freed (whatever Python still held).
		FreedByGoGC int64
		Live        int64 // Created - Freed - FreedByGoGC
	}
	// Loop counts what duet's own sources did on the event loop: an idle
	// app sees none of them move.
	Loop struct {
		Dispatches  int64 // turns of the Invoke source (each runs a batch)
		TimerRuns   int64 // runs of After/Every functions
		Collections int64 // Python cycle collections the loop ran when due
		Queued      int64 // Invokes waiting for the loop now
		Paced       int64 // Invokes held back while a flood's backlog was over eventloop.PaceAbove
	}
	// GObjects counts package widgets' lifetime management.
	GObjects struct {
		Tracked   int   // GObjects under duet's lifetime management now
		Released  int64 // gotk4 toggle references duet released
		Watching  int   // finalisation watches still pending
		Finalized int64 // watched GObjects finalised
		// Unreleased counts objects whose gotk4 references duet had to
		// leave because GLib's toggle record could not be read (see the
		// warning at start-up); always 0 on the GLib duet was built for.
		Unreleased int64
	}
}

// ReadStats returns the counts now. Safe from any goroutine.
func ReadStats() Stats {
	var s Stats
	s.Objects = diag.ObjectCounts.Read()
	s.Callbacks = diag.CallbackCounts.Read()
	s.Loop = diag.LoopCounts.Read()
	s.GObjects = diag.GObjectCounts.Read()
	return s
}
