package eventloop

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// Timer is a GLib timeout source running a Go func on the loop, in the
// spirit of setTimeout (After) and setInterval (Every).
type Timer struct {
	mu        sync.Mutex     // held while fn runs and while cancelling
	src       unsafe.Pointer // GSource* (C memory): our own reference, dropped by releaseLocked; nil after
	handle    uintptr
	fn        func()
	repeat    bool
	cancelled atomic.Bool
	running   atomic.Bool // fn is running on the loop right now
	fired     atomic.Int64
}

var timers struct {
	m    sync.Map // handle -> *Timer
	next atomic.Uintptr
}

// After runs fn once on the loop after d, never sooner: GLib's timeouts
// count whole milliseconds, so d is rounded up to one (d <= 0: at the
// loop's next turn). Cancel stops it.
func After(d time.Duration, fn func()) *Timer { return newTimer(d, fn, false) }

// Every runs fn on the loop every d until Cancel. GLib schedules the next
// run d after the previous one was due, so a slow fn delays, never stacks,
// the following ones. d is rounded up to whole milliseconds, and is at
// least one: a shorter interval would be due on every turn of the loop,
// and at the default priority it would keep redraws and idle work from
// ever running.
func Every(d time.Duration, fn func()) *Timer { return newTimer(d, fn, true) }

// timeoutMs is d in GLib's whole milliseconds, rounded up (a 900 µs After
// fired at once, a 1.9 ms Every ran every millisecond), at least 1 for a
// repeating timer.
func timeoutMs(d time.Duration, repeat bool) int64 {
	ms := int64(0)
	if d > 0 {
		ms = int64(d / time.Millisecond)
		if d%time.Millisecond != 0 {
			ms++
		}
	}
	if repeat && ms < 1 {
		ms = 1
	}
	return ms
}

func newTimer(d time.Duration, fn func(), repeat bool) *Timer {
	ms := timeoutMs(d, repeat)
	t := &Timer{fn: fn, repeat: repeat}
	t.handle = timers.next.Add(1)
	timers.m.Store(t.handle, t)
	capi.LoopSetup()
	t.mu.Lock()
	t.src = capi.NewTimer(t.handle, uint64(ms))
	t.mu.Unlock()
	return t
}

// Cancel stops the timer; safe from any goroutine and idempotent. When it
// returns, fn is not running and will not run again, except when Cancel is
// called from fn itself, which then finishes normally.
func (t *Timer) Cancel() {
	if t.cancelled.Swap(true) {
		return
	}
	if IsMain() && t.running.Load() {
		return // called from fn: fireTimer removes the source when fn returns
	}
	t.mu.Lock() // waits for a run in progress on the loop
	t.releaseLocked()
	t.mu.Unlock()
}

// Fired returns how many times fn has run.
func (t *Timer) Fired() int64 { return t.fired.Load() }

func (t *Timer) releaseLocked() {
	if t.src != nil {
		capi.ReleaseTimer(t.src)
		t.src = nil
		timers.m.Delete(t.handle)
	}
}

// fireTimer runs on the loop at each expiry and says whether to repeat.
func fireTimer(h uintptr) bool {
	v, ok := timers.m.Load(h)
	if !ok {
		return false
	}
	t := v.(*Timer)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancelled.Load() {
		t.releaseLocked()
		return false
	}
	t.running.Store(true)
	loopStats.timerRuns.Add(1)
	err := runGuarded("eventloop timer", func() error { t.fn(); return nil })
	t.running.Store(false)
	t.fired.Add(1)
	if err != nil {
		var pe *pygi.PanicError
		if errors.As(err, &pe) {
			reportError("", err)
		}
	}
	if t.repeat && !t.cancelled.Load() {
		return true
	}
	t.cancelled.Store(true)
	t.releaseLocked()
	return false
}

func init() { lifetime.SetTimerCanceller(cancelTimers) }

// cancelTimers cancels every timer still scheduled; app has it run during
// shutdown, before Python goes away.
func cancelTimers() {
	timers.m.Range(func(_, v any) bool {
		v.(*Timer).Cancel()
		return true
	})
}
