package looptest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// steadyRounds is how many rounds in a row must change nothing before
// Settle believes it. One is not enough: widgets releases a gotk4 object
// only three finalizer epochs after gotk4 let go of it, in an idle after
// that, and a round can see nothing move while such a release is on its
// way.
const steadyRounds = 4

// Settle runs Go's garbage collector, Python's gc.collect() (on the UI
// thread), the release of what Go dropped and duet's reaping of the gotk4
// objects Go let go of, round after round, until a few rounds in a row
// change nothing: not the live callbacks, the Python objects Go holds, the
// GObjects duet sees nor the releases queued. It returns the number of live
// callbacks then, so that a test compares counts once nothing is pending:
//
//	base := looptest.Settle(t)
//	... make a window, connect handlers, destroy it ...
//	assert.Equal(t, base, looptest.Settle(t), "the handlers were freed")
//
// Settle fails the test when things still change after Timeout. It works
// without a running loop too (package tests that only Init Python), then
// without the reaping, whose releases only a loop would dispatch. Call it
// from the test, not on the loop, which it has to wait for.
func Settle(t testing.TB) int {
	t.Helper()
	if eventloop.Running() && eventloop.IsMain() {
		t.Fatal("looptest.Settle on the loop: it waits for the loop; call it from the test")
	}
	deadline := time.Now().Add(Timeout)
	var last counts
	steady := -1 // the first round has nothing to compare with
	pause := time.Millisecond
	for {
		now, err := settleRound(deadline)
		if err != nil {
			t.Fatalf("looptest.Settle: %v", err)
		}
		if now == last {
			steady++
		} else {
			last, steady, pause = now, 0, time.Millisecond
		}
		if steady >= steadyRounds {
			return int(now.callbacks)
		}
		if time.Now().After(deadline) {
			t.Fatalf("looptest.Settle: still changing after %v (%s); live callbacks by site:%s", Timeout, now, liveSites())
		}
		// Growing pauses: a verdict of steadiness spans some wall time, in
		// which cleanups and the loop's own sources get to run.
		time.Sleep(pause)
		pause = min(2*pause, 16*time.Millisecond)
	}
}

// counts is what one round of Settle looks at.
type counts struct {
	callbacks int64 // live callbacks
	objects   int64 // Python objects Go holds
	gobjects  int   // GObjects duet sees (tracked or watched; widgets)
	pending   int64 // Python references queued for release
}

func (c counts) String() string {
	return fmt.Sprintf("%d live callbacks, %d Python objects held by Go, %d GObjects seen, %d releases queued",
		c.callbacks, c.objects, c.gobjects, c.pending)
}

// settleRound runs the collectors and the reaper once and reads the counts.
func settleRound(deadline time.Time) (counts, error) {
	// Collect's collections do not wait for the finalizers they queue;
	// these do, so that each round is sure to span finalizer epochs (what
	// widgets' reaper counts), however the goroutines were scheduled.
	for range 2 {
		if err := collectAndFinalize(deadline); err != nil {
			return counts{}, err
		}
	}
	if err := eventloop.Collect(); err != nil {
		return counts{}, err
	}
	if eventloop.Running() && hooks.Reap != nil {
		// Reaping schedules releases in an idle on the loop: with no loop
		// nobody would dispatch it. The hop to the UI thread is a loop
		// turn as well, so work already posted has run when it returns.
		if err := lifetime.OnUI(func() error { _, err := hooks.Reap(); return err }); err != nil {
			return counts{}, err
		}
	}
	n := 0
	for _, c := range diag.GObjectCensus.Read() {
		n += c
	}
	s := forensics.ReadStats()
	return counts{
		callbacks: s.Callbacks.Live,
		objects:   s.Objects.Live,
		gobjects:  n,
		pending:   s.Objects.Pending,
	}, nil
}

// collectAndFinalize runs Go's collector and waits for a finalizer it
// queued. Finalizers run on one goroutine, batch after batch, so once a
// second call has returned every finalizer queued before the first has run.
func collectAndFinalize(deadline time.Time) error {
	ran := make(chan struct{})
	sentinel := new([16]byte) // 16 bytes: too big for the tiny allocator, which would share its block
	runtime.SetFinalizer(sentinel, func(*[16]byte) { close(ran) })
	sentinel = nil
	for {
		runtime.GC()
		select {
		case <-ran:
			return nil
		case <-time.After(10 * time.Millisecond):
			// Still queued, or (rarely) the sentinel survived that
			// collection: collect again.
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Go's finalizers did not run within %v (one of them blocked?)", Timeout)
		}
	}
}

// liveSites lists the most numerous groups of live callbacks, for a
// failure message.
func liveSites() string {
	var b strings.Builder
	for i, l := range diag.CallbackCensus.Read() {
		if i == 5 {
			b.WriteString("\n\t...")
			break
		}
		fmt.Fprintf(&b, "\n\t%d %s at %s", l.Count, l.Name, l.Site)
	}
	return b.String()
}
