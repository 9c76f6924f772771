// Package scroll is what make bench's scrolling programs share: the
// scroll, frame by frame, and the line of figures each prints. The three
// programs (duet, bench.py's scroll mode, gotk4) build the same window: a
// 400×600 Gtk.ApplicationWindow holding a Gtk.ScrolledWindow with a
// Gtk.ListView over a Gtk.StringList of n strings ("item 0", ...) through
// a Gtk.NoSelection, with a Gtk.SignalListItemFactory whose handlers are
// what is compared, each side's own:
//
//	setup:  item.set_child(Gtk.Label())
//	bind:   item.get_child().set_label(item.get_item().get_string())
//	unbind: item.get_child().set_label("")
//
// (the tick callback and the frame clock's handlers are each side's own
// too: a few calls a frame).
//
// Half a second after the window is mapped, a tick callback on the list
// view moves its vertical adjustment by Pages pages each frame, from the
// top to the bottom; the view rebinds its rows inside that set_value (it
// keeps about 200 rows around the visible ones, more than a step's, so
// every row is bound once, 150 a frame with 20-pixel rows). A frame's time
// is measured on the frame clock's signals: from its before-paint to its
// after-paint (the update phase, where the tick scrolls and the rows are
// bound, then layout and paint), as wall time and as the UI thread's CPU
// time. Each program prints one line (see Recorder.Line) and exits after
// the last frame.
package scroll

import (
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Pages is how far the list moves each frame, in pages (viewport heights).
const Pages = 5

// Width and Height are the window's fixed size.
const Width, Height = 400, 600

// Settle is how long the window stays still after it is mapped.
const Settle = 500 * time.Millisecond

// A Recorder follows one run. Its methods are called on the UI thread:
// BeforePaint and AfterPaint from the frame clock's signals, Tick from
// the tick callback, Handler around each factory handler.
type Recorder struct {
	armed, moving, last bool
	began, frameStart   time.Time
	cpuStart            time.Duration
	lastPaint           time.Time
	work, cpu, gaps     []time.Duration
	binds, setups       int
	inHandlers          time.Duration
}

// Arm starts the scroll at the next tick.
func (r *Recorder) Arm() { r.armed = true }

// BeforePaint marks the start of a frame.
func (r *Recorder) BeforePaint() { r.frameStart, r.cpuStart = time.Now(), threadCPU() }

// threadCPU is the CPU time this thread has run for.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Tick returns where the adjustment goes this frame and whether to set
// it (false before the scroll is armed and after it reached the bottom).
func (r *Recorder) Tick(value, upper, page float64) (float64, bool) {
	if !r.armed || r.last {
		return 0, false
	}
	if !r.moving {
		r.moving, r.began = true, r.frameStart
	}
	end := upper - page
	next := min(value+Pages*page, end)
	r.last = next >= end
	return next, true
}

// AfterPaint ends a frame; it reports true after the scroll's last frame.
func (r *Recorder) AfterPaint() bool {
	now, cpu := time.Now(), threadCPU()
	if r.moving {
		r.work = append(r.work, now.Sub(r.frameStart))
		r.cpu = append(r.cpu, cpu-r.cpuStart)
		if len(r.work) > 1 {
			r.gaps = append(r.gaps, now.Sub(r.lastPaint))
		}
	}
	r.lastPaint = now
	return r.last
}

// Handler adds the time since t to the handlers' time; bind says the
// handler was a bind, setup a setup. Use it as
// defer r.Handler(time.Now(), true, false).
func (r *Recorder) Handler(t time.Time, bind, setup bool) {
	r.inHandlers += time.Since(t)
	if bind {
		r.binds++
	}
	if setup {
		r.setups++
	}
}

// Line is the run's figures, space-separated:
//
//	frames, total ms (first scrolling frame's before-paint to the last
//	frame's after-paint), frame time p50 ms, p99 ms, frames over 16 ms,
//	the UI thread's CPU time per frame p50 ms, p99 ms (the same span,
//	without the time the thread waited or was preempted), frames whose
//	CPU time alone was over 16 ms, interval between frames (after-paint
//	to after-paint) p50 ms, p99 ms, longest ms, binds, setups, ns in the
//	factory's handlers per bind
func (r *Recorder) Line() string {
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	over, overCPU := 0, 0
	for i, w := range r.work {
		if w > 16*time.Millisecond {
			over++
		}
		if r.cpu[i] > 16*time.Millisecond {
			overCPU++
		}
	}
	return fmt.Sprintf("%d %.3f %.3f %.3f %d %.3f %.3f %d %.3f %.3f %.3f %d %d %.1f",
		len(r.work), ms(r.lastPaint.Sub(r.began)), ms(pct(r.work, 50)), ms(pct(r.work, 99)), over,
		ms(pct(r.cpu, 50)), ms(pct(r.cpu, 99)), overCPU, ms(pct(r.gaps, 50)), ms(pct(r.gaps, 99)), ms(pct(r.gaps, 100)),
		r.binds, r.setups, float64(r.inHandlers.Nanoseconds())/float64(max(r.binds, 1)))
}

// pct is the p-th percentile, the bench's way (the element at len*p/100
// of the sorted values, the largest for 100).
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)*p/100, len(s)-1)]
}
