package widgets

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"
	"github.com/diamondburned/gotk4/pkg/core/intern"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

// # Releasing what gotk4 v0.2.2 keeps
//
// gotk4 adds a toggle reference to every GObject it wraps. When the last Go
// wrapper of an object is collected, gotk4 v0.2.2 forgets the object (its
// weak map's finalizer runs first) but its own finalizer then finds nothing
// and never removes the toggle reference: the object is never finalised,
// even when GTK and Python let go of it. Worse, while that reference stays,
// a PyGObject wrapper that also holds a toggle reference (Python subclasses,
// wrappers with attributes) can never let go either, since GLib notifies no
// toggle reference while two exist.
//
// duet tracks the objects it hands to gotk4 (ToGo, As, Track) with the
// number of gotk4 "boxes" (wrapper generations, one toggle reference each)
// it has seen created for them. After Go's garbage collector runs, the
// reaper, on the UI thread, looks at each tracked object: when gotk4 no
// longer knows it (intern.TryGet is nil), the Go side is truly gone, and
// duet removes the toggle references of the generations it counted. gotk4
// never removes those itself in v0.2.2 (its removal path only runs for a
// box it can still find), so this is the one release, not a second one. A
// generation duet did not see is left alone: a leak, never a double
// release. Objects duet never saw keep gotk4's behaviour; call Track for
// widgets made with gotk4 constructors that are created and destroyed
// repeatedly.

// cptr turns a GObject address from gotk4 (which hands them out as uintptr)
// back into a pointer. GObjects are C memory: the Go GC neither moves nor
// frees them, so the round trip is sound (vet cannot know that, hence the
// reinterpretation through memory instead of a conversion).
func cptr(u uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&u)) }

type tracked struct {
	boxes int // gotk4 generations counted and not yet released
}

// A watcher is told when its GObject is finalised (a GLib weak reference).
type watcher struct {
	obj   unsafe.Pointer
	track bool   // untrack the object
	fn    func() // or nil
	quiet bool   // internal: not counted in Stats
}

var track struct {
	mu       sync.Mutex
	objs     map[unsafe.Pointer]*tracked
	watchers map[uintptr]watcher // GLib weak-ref handle -> watcher

	nextWatch           atomic.Uintptr
	released, finalized atomic.Int64
	reapQueued          atomic.Bool
}

func init() {
	track.objs = map[unsafe.Pointer]*tracked{}
	track.watchers = map[uintptr]watcher{}
	capi.SetFinalizedHandler(onFinalized)
	armGCHook()
}

// armGCHook schedules a reap after every Go GC cycle: a sentinel's cleanup
// runs once per cycle and re-arms itself.
func armGCHook() {
	s := new([16]byte)
	runtime.AddCleanup(s, func(struct{}) {
		armGCHook()
		track.mu.Lock()
		n := len(track.objs)
		track.mu.Unlock()
		if n > 0 && eventloop.Running() && !track.reapQueued.Swap(true) {
			eventloop.Invoke(func() {
				track.reapQueued.Store(false)
				Reap()
			})
		}
	}, struct{}{})
}

// noteWrap records that gotk4 is about to wrap p: call it before
// coreglib.Take, with fresh telling whether gotk4 had no box for p.
func noteWrap(p unsafe.Pointer, fresh bool) {
	track.mu.Lock()
	t, ok := track.objs[p]
	if !ok {
		t = &tracked{}
		track.objs[p] = t
		watchLocked(p, watcher{obj: p, track: true})
	}
	switch {
	case fresh:
		t.boxes++
	case t.boxes == 0:
		t.boxes = 1 // a live box duet had not counted yet
	}
	track.mu.Unlock()
}

// Track puts a gotk4 object (typically made with a gotk4 constructor) under
// duet's lifetime management, so that it can be finalised once Go, GTK and
// Python have all let go of it. Objects crossing ToGo or As are tracked
// already.
func Track(obj coreglib.Objector) {
	base := coreglib.BaseObject(obj)
	if base == nil {
		return
	}
	noteWrap(cptr(base.Native()), false)
	runtime.KeepAlive(obj)
}

// takeTracked wraps a GObject pointer for gotk4, tracked.
func takeTracked(p unsafe.Pointer) *coreglib.Object {
	fresh := intern.TryGet(p) == nil
	noteWrap(p, fresh)
	return coreglib.Take(p)
}

// Reap releases gotk4's references to tracked objects that gotk4 itself has
// forgotten; it runs on the UI thread (after every Go GC while the loop
// runs) and returns how many references it released.
func Reap() int {
	eventloop.MustBeMain("widgets.Reap")
	type item struct {
		p unsafe.Pointer
		n int
	}
	var todo []item
	track.mu.Lock()
	for p, t := range track.objs {
		// p is alive: tracked objects are untracked when finalised.
		if t.boxes > 0 && intern.TryGet(p) == nil {
			todo = append(todo, item{p, t.boxes})
			t.boxes = 0
		}
	}
	track.mu.Unlock()
	n := 0
	for _, it := range todo {
		// May finalise the object, which runs onFinalized (untracking it).
		if capi.Gotk4Release(uintptr(it.p), it.n) {
			n += it.n
		}
	}
	track.released.Add(int64(n))
	return n
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

// WatchFinalize watches the GObject behind a gotk4 object.
func WatchFinalize(obj coreglib.Objector) *Watch {
	w := watchPtr(cptr(coreglib.BaseObject(obj).Native()))
	runtime.KeepAlive(obj)
	return w
}

// WatchFinalizePy watches the GObject behind a PyGObject object.
func WatchFinalizePy(o *pygi.Object) (*Watch, error) {
	p, _, err := pointer(o)
	if err != nil {
		return nil, err
	}
	w := watchPtr(p)
	runtime.KeepAlive(o)
	return w, nil
}

// Stats are lifetime counts for tests and the stress harness.
type Stats struct {
	Tracked   int   // GObjects under duet's lifetime management now
	Released  int64 // gotk4 toggle references duet released
	Watching  int   // finalisation watches still pending
	Finalized int64 // watched GObjects finalised
}

// ReadStats returns the counts.
func ReadStats() Stats {
	track.mu.Lock()
	defer track.mu.Unlock()
	s := Stats{Tracked: len(track.objs), Released: track.released.Load(), Finalized: track.finalized.Load()}
	for _, w := range track.watchers {
		if w.fn != nil && !w.quiet {
			s.Watching++
		}
	}
	return s
}
