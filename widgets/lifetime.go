package widgets

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"
	"github.com/diamondburned/gotk4/pkg/core/intern"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// # Releasing what gotk4 v0.2.2 keeps
//
// gotk4 adds a toggle reference to every GObject it wraps. When the last Go
// wrapper of an object is collected, gotk4 v0.2.2 forgets the object (its
// weak map's finalizer runs first) and its own finalizer then finds nothing
// and never removes the toggle reference: the object is never finalised,
// even after GTK and Python let go of it.
//
// duet releases those references for the objects it tracks (those crossing
// Cast and ToPython, those given to Track, and destroyed windows and the
// widgets in them), and the release is synchronised
// with gotk4's own lifecycle, because gotk4 can still reach for the object:
// its finalizer (finalizeBox) runs on a separate object (the box's "dummy")
// one GC cycle after the box, finds boxes by address, and, if a box for that
// address exists again by then, queues a removal of a toggle reference on
// the main loop. A release that ignored this would free an object gotk4
// then removes a reference from (a crash the stress harness found), or,
// once an address is reused, remove the reference of another object.
//
// So an object is released only when all of this holds, on the UI thread
// (where duet makes every gotk4 wrapper it makes: Cast, ToPython and Track are
// UI-thread only, so no wrap can interleave with a release):
//
//  1. gotk4 has no box for it (intern.TryGet is nil),
//  2. continuously for three finalizer epochs: an epoch is one run of a
//     chain of SetFinalizer sentinels, and finalizers run in LIFO batches
//     on one goroutine, so after three epochs every finalizer queued while
//     a box for the object existed (its dummy's included) has run,
//  3. in an idle attached after that: any removal gotk4 queued with
//     g_main_context_invoke (a default-priority idle, attached earlier) has
//     been dispatched first, GLib keeping attachment order within a
//     priority,
//
// and then gotk4's signal closures on the object, whose Go functions went
// with the box, are disconnected (its dispose would call them), and exactly
// the gotk4 toggle references the object carries are removed, counted from
// GLib's own record (not from what duet believes), in one C call attached
// to Python (internal/capi/gobject.c says why nobody can change the record
// in between).
//
// That record is private to GLib. At start-up duet checks, on an object of
// its own, that it is laid out as expected; if not, it says so once, loudly,
// and releases nothing (forensics.Stats.GObjects.Unreleased counts what it
// had to leave).

// cptr turns a GObject address from gotk4 (which hands them out as uintptr)
// back into a pointer. GObjects are C memory: the Go GC neither moves nor
// frees them, so the round trip is sound (vet cannot know that, hence the
// reinterpretation through memory instead of a conversion).
func cptr(u uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&u)) }

type tracked struct {
	deadSince int64 // finalizer epoch since which gotk4 has had no box, or -1
}

// A watcher is told when its GObject is finalised.
type watcher struct {
	obj   unsafe.Pointer
	track bool   // untrack the object
	fn    func() // or nil
	quiet bool   // internal: not counted in forensics.Stats
}

var track struct {
	mu       sync.Mutex
	objs     map[unsafe.Pointer]*tracked
	watchers map[uintptr]watcher // finalisation-watch handle -> watcher
	ready    []unsafe.Pointer    // objects waiting for the release idle
	// connWatched: the objects whose finalisation forgets their connection
	// records (watched once each; see watchConnections).
	connWatched map[unsafe.Pointer]bool

	nextWatch           atomic.Uintptr
	released, finalized atomic.Int64
	epoch               atomic.Int64
	scanQueued, idleSet atomic.Bool
	layoutUnknown       atomic.Bool
	unreleased          atomic.Int64
}

func init() {
	track.objs = map[unsafe.Pointer]*tracked{}
	track.watchers = map[uintptr]watcher{}
	capi.SetFinalizedHandler(onFinalized)
	capi.SetIdleAfterHandler(releaseReady)
	newSentinel()
	checkToggleLayout(capi.ToggleLayoutKnown())
	diag.GObjectCensus.Set(gobjectCensus)
	hooks.Reap = reap
}

// gobjectCensus counts the GObjects duet sees (tracked gotk4 wrappers and
// watched objects, each once) by type name. The lock is what keeps each
// object alive while its type is read: finalisation notices take it too.
func gobjectCensus() map[string]int {
	track.mu.Lock()
	defer track.mu.Unlock()
	seen := make(map[unsafe.Pointer]bool, len(track.objs)+len(track.watchers))
	out := map[string]int{}
	count := func(p unsafe.Pointer) {
		if !seen[p] {
			seen[p] = true
			out[capi.GObjectTypeName(uintptr(p))]++
		}
	}
	for p := range track.objs {
		count(p)
	}
	for _, w := range track.watchers {
		if !w.quiet {
			count(w.obj)
		}
	}
	return out
}

// warnOut is where the start-up warning goes (tests swap it).
var warnOut io.Writer = os.Stderr

// checkToggleLayout records whether GLib's toggle record is readable, and
// warns once when it is not.
func checkToggleLayout(known bool) {
	track.layoutUnknown.Store(!known)
	if !known {
		fmt.Fprintln(warnOut, "duet: widgets: WARNING: this GLib keeps toggle references or watched closures in a record duet cannot read; "+
			"gotk4's references will not be released, so GObjects wrapped by gotk4 will never be finalised "+
			"(forensics.ReadStats().GObjects.Unreleased counts them)")
	}
}

// newSentinel continues the finalizer-epoch chain.
func newSentinel() {
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) {
		track.epoch.Add(1)
		newSentinel()
		track.mu.Lock()
		n := len(track.objs)
		track.mu.Unlock()
		if n > 0 && eventloop.Running() && !track.scanQueued.Swap(true) {
			// From a goroutine of its own: this is the finalizer
			// goroutine, which every other finalizer of the process
			// waits behind, and an Invoke may wait on a flood.
			go eventloop.Invoke(func() {
				track.scanQueued.Store(false)
				reap() // on the loop: cannot fail
			})
		}
	})
}

// noteWrap tracks p (gotk4 is about to wrap it, or has).
func noteWrap(p unsafe.Pointer) {
	track.mu.Lock()
	t, ok := track.objs[p]
	if !ok {
		t = &tracked{}
		track.objs[p] = t
		watchLocked(p, watcher{obj: p, track: true})
	}
	t.deadSince = -1
	track.mu.Unlock()
}

// Track puts a gotk4 object (typically made with a gotk4 constructor) under
// duet's lifetime management, so that it can be finalised once Go, GTK and
// Python have all let go of it. Objects crossing Cast or ToPython are
// tracked already, and so are a destroyed window and the widgets in it.
// UI thread only.
func Track(obj coreglib.Objector) error {
	if err := eventloop.RequireMain("widgets.Track"); err != nil {
		return err
	}
	base, err := baseObject(obj)
	if err != nil {
		return err
	}
	noteWrap(cptr(base.Native()))
	runtime.KeepAlive(obj)
	return nil
}

// takeTracked wraps a GObject pointer for gotk4, tracked.
func takeTracked(p unsafe.Pointer) *coreglib.Object {
	noteWrap(p)
	return coreglib.Take(p)
}

// reap looks for tracked objects gotk4 has let go of (see above) and
// schedules their release in a fresh idle on the loop. It runs on the UI
// thread, after every finalizer epoch while the loop runs; with no loop
// running, app and the stress harness call it (hooks.Reap) and then
// iterate the main context. It returns how many objects it scheduled. UI
// thread only.
func reap() (int, error) {
	if err := lifetime.RequireMain("reaping gotk4's objects"); err != nil {
		return 0, err
	}
	epoch := track.epoch.Load()
	track.mu.Lock()
	n := 0
	for p, t := range track.objs {
		switch {
		case intern.TryGet(p) != nil: // p is alive: tracked objects are untracked when finalised
			t.deadSince = -1
		case t.deadSince < 0:
			t.deadSince = epoch
		case epoch >= t.deadSince+3:
			track.ready = append(track.ready, p)
			t.deadSince = epoch // not again before three more epochs
			n++
		}
	}
	schedule := len(track.ready) > 0 && !track.idleSet.Swap(true)
	track.mu.Unlock()
	if schedule {
		capi.ScheduleIdleAfter()
	}
	return n, nil
}

// releaseReady runs in the idle Reap scheduled.
func releaseReady() {
	track.mu.Lock()
	ready := track.ready
	track.ready = nil
	track.idleSet.Store(false)
	track.mu.Unlock()
	released := 0
	for _, p := range ready {
		track.mu.Lock()
		_, alive := track.objs[p] // a release may have finalised others
		track.mu.Unlock()
		if !alive || intern.TryGet(p) != nil {
			continue // gone, or wrapped again in between
		}
		if track.layoutUnknown.Load() {
			giveUp(p)
			continue
		}
		// May finalise the object, which runs onFinalized (untracking it).
		switch n := capi.Gotk4ReleaseAll(uintptr(p)); {
		case n == -2: // the probe passed but this record differs: stop releasing
			if !track.layoutUnknown.Load() {
				checkToggleLayout(false)
			}
			giveUp(p)
		case n > 0:
			released += n
		}
	}
	track.released.Add(int64(released))
}

// giveUp stops tracking an object whose gotk4 references cannot be
// released, counting it once.
func giveUp(p unsafe.Pointer) {
	track.mu.Lock()
	delete(track.objs, p)
	track.mu.Unlock()
	track.unreleased.Add(1)
}

func watchLocked(p unsafe.Pointer, w watcher) {
	h := track.nextWatch.Add(1)
	track.watchers[h] = w
	capi.WatchGObject(uintptr(p), h)
}

func onFinalized(h uintptr) {
	track.mu.Lock()
	w, ok := track.watchers[h]
	delete(track.watchers, h)
	if ok && w.track {
		delete(track.objs, w.obj)
	}
	track.mu.Unlock()
	if ok && w.fn != nil {
		if !w.quiet {
			track.finalized.Add(1)
		}
		w.fn()
	}
}

// A Watch tells when a GObject is finalised, without keeping it alive.
type Watch struct {
	Type string // the object's type name, for messages
	done chan struct{}
}

// Done is closed when the object has been finalised.
func (w *Watch) Done() <-chan struct{} { return w.done }

// Finalized reports whether the object has been finalised.
func (w *Watch) Finalized() bool {
	select {
	case <-w.done:
		return true
	default:
	}
	return false
}

func watchPtr(p unsafe.Pointer) *Watch {
	w := &Watch{Type: capi.GObjectTypeName(uintptr(p)), done: make(chan struct{})}
	track.mu.Lock()
	watchLocked(p, watcher{obj: p, fn: func() { close(w.done) }})
	track.mu.Unlock()
	return w
}

// WatchFinalize watches the GObject behind obj: a gotk4 object, a
// *pygi.Object that is PyGObject's wrapper of one, or a *Widget (or a
// generated wrapper, which embeds one). Any goroutine. The watch holds
// nothing of obj: it sees the finalisation, it does not delay it.
func WatchFinalize(obj any) (*Watch, error) {
	p, keep, err := gobjectPointer(obj)
	if err != nil {
		return nil, err
	}
	w := watchPtr(p)
	runtime.KeepAlive(keep)
	return w, nil
}

// A widgeter is a *Widget, or a type that embeds one.
type widgeter interface{ widget() *Widget }

func (w *Widget) widget() *Widget { return w }

// gobjectPointer is the GObject behind obj (see WatchFinalize), valid
// while keep is alive.
func gobjectPointer(obj any) (p unsafe.Pointer, keep any, err error) {
	if isNilPointer(obj) {
		return nil, nil, fmt.Errorf("%w: a nil %T", ErrNotGObject, obj)
	}
	if w, ok := obj.(widgeter); ok {
		if w.widget() == nil {
			return nil, nil, fmt.Errorf("%w: a nil %T", ErrNotGObject, obj)
		}
		obj = w.widget().Object
	}
	switch o := obj.(type) {
	case *pygi.Object:
		p, _, err := pointer(o)
		return p, o, err
	case coreglib.Objector:
		b, err := baseObject(o)
		if err != nil {
			return nil, nil, err
		}
		return cptr(b.Native()), o, nil
	}
	return nil, nil, fmt.Errorf("%w: %T", ErrNotGObject, obj)
}

func init() { diag.GObjectCounts.Set(readStats) }

// readStats is widgets' group of forensics.ReadStats.
func readStats() diag.GObjectStats {
	track.mu.Lock()
	defer track.mu.Unlock()
	s := diag.GObjectStats{Tracked: len(track.objs), Released: track.released.Load(), Finalized: track.finalized.Load(),
		Unreleased: track.unreleased.Load()}
	for _, w := range track.watchers {
		if w.fn != nil && !w.quiet {
			s.Watching++
		}
	}
	return s
}
