package eventloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uiThreadRuns tells a loop that computes from one that waits: pacing at
// PaceCap keeps senders waiting on the first and lets them go from the
// second (which may be waiting for them).
func TestUIThreadRunsTellsComputingFromWaiting(t *testing.T) {
	require.True(t, state.running.Load(), "the tests run inside the loop")
	sample := func(hold func()) (runs, of int) {
		started := make(chan struct{})
		done := make(chan struct{})
		Invoke(func() {
			close(started)
			hold()
			close(done)
		})
		<-started
		for {
			select {
			case <-done:
				return runs, of
			case <-time.After(2 * time.Millisecond):
				of++
				if uiThreadRuns() {
					runs++
				}
			}
		}
	}
	busyRuns, busyOf := sample(func() {
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		}
	})
	waitRuns, waitOf := sample(func() { time.Sleep(200 * time.Millisecond) })
	blocked := make(chan struct{})
	time.AfterFunc(200*time.Millisecond, func() { close(blocked) })
	lockRuns, lockOf := sample(func() { <-blocked })
	t.Logf("running in: computing %d of %d samples, sleeping %d of %d, blocked on a channel %d of %d",
		busyRuns, busyOf, waitRuns, waitOf, lockRuns, lockOf)
	require.NotZero(t, busyOf)
	// A loaded machine may deschedule the loop (still "ready to run") or
	// the sampler: most samples, not all, are what the thread did.
	assert.Greater(t, busyRuns, busyOf/2, "a computing loop thread runs")
	assert.Less(t, waitRuns, waitOf/2, "a sleeping loop thread waits")
	assert.Less(t, lockRuns, lockOf/2, "a loop thread blocked on a channel waits")
}
