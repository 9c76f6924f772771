package diag

import "sync"

// The counters behind forensics.ReadStats (and the census sources, census.go). Each package that counts sets
// its source at init; a source that is not linked reads as zero. The
// field sets are forensics.Stats' groups (assignable to them, so the two
// cannot drift apart without the build failing).

type ObjectStats struct {
	Created, Closed, Collected, Drained, Pending, Live int64
}

type CallbackStats struct {
	Created, Freed, FreedByGoGC, Live int64
}

type LoopStats struct {
	Dispatches, TimerRuns, Collections int64
	Queued, Paced                      int64
}

type GObjectStats struct {
	Tracked    int
	Released   int64
	Watching   int
	Finalized  int64
	Unreleased int64
}

// A Source is one package's counters.
type Source[T any] struct {
	mu sync.Mutex
	f  func() T
}

// Set sets what reads the counters.
func (s *Source[T]) Set(f func() T) {
	s.mu.Lock()
	s.f = f
	s.mu.Unlock()
}

// Read reads them (zero when unset).
func (s *Source[T]) Read() T {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	var v T
	if f != nil {
		v = f()
	}
	return v
}

var (
	ObjectCounts   Source[ObjectStats]   // package pygi
	CallbackCounts Source[CallbackStats] // package callbacks
	LoopCounts     Source[LoopStats]     // package eventloop
	GObjectCounts  Source[GObjectStats]  // package widgets
)
