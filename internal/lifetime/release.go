package lifetime

import (
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
)

// releases holds the references of objects Go has let go of (rule 5).
var releases struct {
	mu    sync.Mutex
	refs  []capi.Ref
	dirty *atomic.Bool // C memory (see init)
	// forUI: after the loop, the references that only the UI thread may
	// release (the last ones to GObjects' wrappers), set aside by
	// drainOffUI; uiDirty says some wait.
	forUI   []capi.Ref
	uiDirty *atomic.Bool

	drained atomic.Int64
}

// Queue queues r for release. It never touches Python, so Go's GC cleanups
// may call it; once Python is finalised it does nothing (the reference died
// with the interpreter).
func Queue(r capi.Ref) {
	if Current() == Finalized {
		return
	}
	releases.mu.Lock()
	releases.refs = append(releases.refs, r)
	first := !releases.dirty.Swap(true)
	releases.mu.Unlock()
	if first {
		if h := ui.onDirty.Load(); h != nil {
			(*h)()
		}
	}
}

// Release releases r now when this thread may (no loop runs, or this is the
// UI thread), else queues it for the loop. It must run inside an entry.
func Release(r capi.Ref) {
	if ui.confined.Load() {
		if capi.CloseOnUI(r) {
			return
		}
		if !ui.running.Load() {
			// After the loop: released here unless it is the last
			// reference to a GObject's wrapper (that waits for the UI
			// thread: GTK finalises its objects there only).
			if kept := capi.DrainOffUI([]capi.Ref{r}); len(kept) == 0 {
				return
			}
		}
		Queue(r)
		return
	}
	capi.Close(r)
}

// drain releases what is queued, when this thread may (rule 4). It must run
// inside an entry, or during finalisation.
func drain() {
	if ui.confined.Load() && !capi.OnUIThread() {
		if !ui.running.Load() {
			drainOffUI() // after the loop: all but what must wait for the UI thread
		}
		return
	}
	if capi.ReapPending() {
		capi.ReapThreads() // threads that ended: their Python states, here
	}
	releases.mu.Lock()
	s := releases.refs
	releases.refs = nil
	releases.dirty.Store(false)
	if len(releases.forUI) > 0 {
		s = append(s, releases.forUI...)
		releases.forUI = nil
	}
	releases.uiDirty.Store(false)
	releases.mu.Unlock()
	if len(s) > 0 {
		releases.drained.Add(capi.Drain(s))
	}
}

// drainOffUI releases, off the UI thread after the loop, what cannot
// finalise a GTK object, and queues the rest again for the UI thread.
func drainOffUI() {
	releases.mu.Lock()
	s := releases.refs
	releases.refs = nil
	releases.dirty.Store(false)
	releases.mu.Unlock()
	if len(s) == 0 {
		return
	}
	kept := capi.DrainOffUI(s)
	releases.drained.Add(int64(len(s) - len(kept)))
	if len(kept) > 0 {
		releases.mu.Lock()
		releases.forUI = append(releases.forUI, kept...)
		releases.mu.Unlock()
		releases.uiDirty.Store(true)
	}
}

// Drain releases every queued reference: here when no loop runs or on the
// UI thread, otherwise on the UI thread (waiting for it).
func Drain() error {
	return OnUI(func() error {
		if err := Enter(); err != nil {
			return err
		}
		defer Exit()
		drain()
		return nil
	})
}

// Pending returns how many references wait in the queue.
func Pending() int64 {
	releases.mu.Lock()
	defer releases.mu.Unlock()
	return int64(len(releases.refs))
}

// Drained returns how many references the queue has released.
func Drained() int64 { return releases.drained.Load() }

// ResetDrained zeroes that count (tests).
func ResetDrained() { releases.drained.Store(0) }
