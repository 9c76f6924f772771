package callbacks

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func idleStarters() int {
	starters.mu.Lock()
	defer starters.mu.Unlock()
	return len(starters.idle)
}

// waitIdle waits until at least n starters are parked (each parks on its
// own once its call has returned; a call another test left running may
// add one).
func waitIdle(t *testing.T, n int) {
	t.Helper()
	for i := 0; idleStarters() < n; i++ {
		if i > 10_000_000 {
			t.Fatalf("%d starters parked, want %d", idleStarters(), n)
		}
		runtime.Gosched()
	}
}

// A call handed to a parked starter starts no goroutine.
func TestAsyncCallsReuseParkedStarters(t *testing.T) {
	done := make(chan struct{})
	goAsync(func() { close(done) })
	<-done
	waitIdle(t, 1)
	made := starters.made.Load()
	for i := range 100 {
		ran := make(chan int, 1)
		goAsync(func() { ran <- i })
		assert.Equal(t, i, <-ran)
		waitIdle(t, 1)
	}
	assert.Equal(t, made, starters.made.Load(), "every call after the first went to a parked starter")
}

// Calls that block do not hold up the ones after them: a call that finds
// no starter parked gets a goroutine of its own, and once they have all
// returned, maxIdleStarters stay parked and the rest have ended.
func TestAsyncCallsNeverWaitForEachOther(t *testing.T) {
	const n = 8
	var running, returned sync.WaitGroup
	running.Add(n)
	returned.Add(n)
	release := make(chan struct{})
	for range n {
		goAsync(func() {
			defer returned.Done()
			running.Done()
			<-release // returns only once all n run at the same time
		})
	}
	running.Wait()
	close(release)
	returned.Wait()
	waitIdle(t, maxIdleStarters)
}
