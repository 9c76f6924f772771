package pygi

import (
	"iter"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// Object is a Go reference to a Python object. It owns exactly one strong
// reference, which Close releases at once; otherwise the reference is
// released after the Object becomes unreachable and Go's GC has run (the
// GC never touches Python itself: it queues the reference, and the queue is
// drained by the next Python operation or by the event loop).
//
// An Object may be used from any goroutine. Close may race with other use:
// the GIL orders them, so a concurrent operation either completes or sees
// ErrClosed.
type Object struct {
	// ref designates the reference this Object owns (see
	// internal/capi/duet.h). Once released, by Close, by the release queue
	// or, for a borrowed argument, by the return of the callback, the ref is
	// stale and every operation on it reports ErrClosed.
	ref     capi.Ref
	cleanup runtime.Cleanup
	closed  atomic.Bool
	kind    objectKind
	// lazy: a lazy signal handler's argument (borrowed), whose Python
	// wrapper is made on first use; nil for every other Object.
	lazy *lazyArg
}

type objectKind uint8

const (
	owned     objectKind = iota
	permanent            // None and the helper module: never released
	borrowed             // a callback argument: valid until the callback returns
)

// ownedObject is how wrap allocates an Object: padded into a size class
// whose spans hold 64 objects instead of 170. Registering a cleanup walks
// the span's list of cleanups, kept sorted by address, from its start; an
// Object is usually the newest in its span, so each registration walked
// past every Object allocated before it there and not yet swept: in a
// profile of a list factory's Go handlers, the registration was about 40%
// of their Go side. The padding bounds that walk (`go test -bench
// ResultLeftToGC ./pygi`: about 390 against 540 ns); borrowed and lazy
// Objects register no cleanup and are not padded.
type ownedObject struct {
	Object
	_ [ownedPad]byte
}

// ownedPad brings an Object (48 bytes on 64-bit platforms) to 128 bytes,
// a size class of 64 objects a span (TestOwnedObjectsSizeClass).
const ownedPad = 80

// wrap takes ownership of a ref. Must run inside an operation.
func wrap(r capi.Ref) *Object {
	o := &(&ownedObject{Object: Object{ref: r}}).Object
	o.cleanup = runtime.AddCleanup(o, collect, r)
	stats.created.Add(1)
	return o
}

// keep makes o permanent: shared by every caller, never released (Close
// does nothing), for objects cached for the interpreter's life.
func keep(o *Object) *Object {
	o.cleanup.Stop()
	o.kind = permanent
	return o
}

// result turns an operation's outcome into an Object or an error.
func result(s capi.Ref, st capi.Status, exc capi.Ref) (*Object, error) {
	switch st {
	case capi.OK:
		return wrap(s), nil
	case capi.None:
		return interp.none, nil
	case capi.True:
		return interp.yes, nil
	case capi.False:
		return interp.no, nil
	}
	return nil, statusErr(st, exc)
}

// collect is the GC cleanup of an Object that was not closed (Close stops
// the cleanup): r is its reference. It only queues r: a cleanup never
// touches Python (internal/lifetime, rule 5).
func collect(r capi.Ref) {
	stats.collected.Add(1)
	lifetime.Queue(r)
}

// Drain releases every reference Go has collected but not yet released,
// without waiting for the next operation; while the event loop runs it
// does so on the UI thread, and waits for it. Once a loop has run, only the
// UI thread releases (a GTK object may be among them): called elsewhere
// with no loop running, Drain leaves the queue to the UI thread and to
// Finalize. Tests call it after runtime.GC().
func Drain() error { return lifetime.Drain() }

// ---- stats ---------------------------------------------------------------

var stats struct {
	created, closed, collected atomic.Int64
}

func init() { diag.ObjectCounts.Set(readStats) }

// readStats is pygi's group of forensics.ReadStats.
func readStats() diag.ObjectStats {
	s := diag.ObjectStats{
		Created:   stats.created.Load(),
		Closed:    stats.closed.Load(),
		Collected: stats.collected.Load(),
		Drained:   lifetime.Drained(),
		Pending:   lifetime.Pending(),
	}
	s.Live = s.Created - s.Closed - s.Collected
	return s
}

// ---- basic methods ------------------------------------------------------------

// Close releases the reference now. It is idempotent and safe to call
// concurrently with other use; after it every operation on o returns
// ErrClosed. Closing None or a nil Object does nothing. While the event
// loop runs, a Close off the UI thread hands the reference to the loop,
// which releases it there; while Finalize is deciding, Close waits for the
// outcome like any operation, so the reference is released either way.
func (o *Object) Close() error {
	if o == nil || o.kind == permanent || o.closed.Swap(true) {
		return nil
	}
	if o.kind == borrowed {
		return nil // the callback's caller owns the reference
	}
	o.cleanup.Stop()
	stats.closed.Add(1)
	if !lifetime.TryEnter() {
		// Not now: Python is being finalised (or is gone) or not started.
		// The queue takes the reference (Finalize drains it; Queue drops
		// it once Python is gone). Entering would wait, and a Close may be
		// inside an operation that Finalize waits for (the temporaries of
		// a call, an error's description): a deadlock.
		lifetime.Queue(o.ref)
		return nil
	}
	defer exit()
	lifetime.Release(o.ref)
	return nil
}

// get returns the ref for an operation, or an error for nil and closed
// Objects. Callers KeepAlive o until the operation is done, so that its
// cleanup cannot release the ref underneath.
func (o *Object) get() (capi.Ref, error) {
	if o == nil {
		return capi.Ref{}, ErrNilObject
	}
	if o.closed.Load() {
		return capi.Ref{}, ErrClosed
	}
	if o.lazy != nil {
		return o.lazy.resolve()
	}
	return o.ref, nil
}

// lazyArg is what a lazy signal handler is given for a GObject the signal
// passes (see capi.RunLazy): the GObject's pointer, borrowed from the
// emission, and its Python wrapper once the handler (or a goroutine it
// handed the Object to) first uses it. The wrapper's reference is the
// argument's: endLazy hands it to the marshal when the handler returns,
// which releases it as the GIL path releases the wrappers it made.
//
// No lock is held while the GIL is taken: the handler may hold the GIL
// (from its first use of Python) while another goroutine makes the
// wrapper, so makers run side by side and the first to finish publishes
// its reference (the others drop theirs). endLazy waits, with the GIL let
// go, for makers already under way: they read the GObject, which the
// emission holds only until the handler returns.
type lazyArg struct {
	made   atomic.Bool // ref is set (read without mu)
	mu     sync.Mutex
	phase  int8          // lazyPending, lazyMade, lazyEnded; under mu
	makers int32         // makers under way; under mu
	idle   chan struct{} // closed by the last maker when endLazy waits; under mu
	gobj   uintptr       // borrowed: the emission holds the GObject until the handler returns
	ref    capi.Ref      // owned once made; endLazy hands it to the marshal
}

const (
	lazyPending int8 = iota
	lazyMade
	lazyEnded
)

// lazyObject allocates the Object and its lazyArg together.
type lazyObject struct {
	o Object
	l lazyArg
}

// wrapLazy makes the Object for a GObject a lazy handler takes; a NULL
// GObject is None, as PyGObject converts it.
func wrapLazy(gobj uintptr) *Object {
	if gobj == 0 {
		return &Object{ref: interp.none.ref, kind: borrowed}
	}
	x := &lazyObject{o: Object{kind: borrowed}, l: lazyArg{gobj: gobj}}
	x.o.lazy = &x.l
	return &x.o
}

// resolve returns the wrapper's reference, making it the first time.
func (l *lazyArg) resolve() (capi.Ref, error) {
	if l.made.Load() {
		return l.ref, nil // set before made, by the maker; o.closed says ended
	}
	// In the gate before counting as a maker: endLazy waits for makers,
	// and a goroutine that waits here for Finalize must not hold up the
	// handler Finalize waits for.
	if err := enter(); err != nil {
		return capi.Ref{}, err
	}
	defer exit()
	l.mu.Lock()
	switch l.phase {
	case lazyMade:
		r := l.ref
		l.mu.Unlock()
		return r, nil
	case lazyEnded:
		l.mu.Unlock()
		return capi.Ref{}, ErrClosed
	}
	l.makers++
	l.mu.Unlock()

	r, st, exc := capi.WrapGObject(l.gobj)

	l.mu.Lock()
	l.makers--
	var res capi.Ref
	var err error
	drop := r
	switch {
	case st != capi.OK:
		drop, err = capi.Ref{}, statusErr(st, exc)
	case l.phase == lazyPending:
		l.ref, l.phase, drop, res = r, lazyMade, capi.Ref{}, r
		l.made.Store(true)
	case l.phase == lazyMade:
		res = l.ref // another maker went first
	default:
		err = ErrClosed // the handler returned meanwhile
	}
	if l.makers == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
	l.mu.Unlock()
	if drop != (capi.Ref{}) {
		lifetime.Release(drop)
	}
	return res, err
}

// endLazy ends a lazy argument's validity when its handler returns (inside
// the handler's entry) and hands back its wrapper's reference, if one was
// made, for the caller to release (the marshal does, in C).
func endLazy(o *Object) (capi.Ref, bool) {
	o.closed.Store(true)
	l := o.lazy
	if l == nil {
		return capi.Ref{}, false
	}
	l.mu.Lock()
	r, made := l.ref, l.phase == lazyMade
	l.phase = lazyEnded
	var idle chan struct{}
	if l.makers > 0 {
		idle = make(chan struct{})
		l.idle = idle
	}
	l.mu.Unlock()
	if idle != nil {
		// A maker under way (on another goroutine) reads the GObject and
		// may need the GIL this handler holds.
		WithoutGIL(func() { <-idle })
	}
	return r, made
}

// Clone returns a new Object with its own reference to the same Python
// object.
func (o *Object) Clone() (*Object, error) {
	s, err := o.get()
	if err != nil {
		return nil, err
	}
	if o.kind == permanent {
		return o, nil // None and friends are shared, never released
	}
	if err := enter(); err != nil {
		return nil, err
	}
	defer exit()
	c, st := capi.Clone(s)
	runtime.KeepAlive(o)
	if st != capi.OK {
		return nil, statusErr(st, capi.Ref{})
	}
	return wrap(c), nil
}

// RefCount returns the Python reference count of the object, including the
// one o holds (like sys.getrefcount, minus getrefcount's own argument).
func (o *Object) RefCount() (int64, error) {
	s, err := o.get()
	if err != nil {
		return 0, err
	}
	if err := enter(); err != nil {
		return 0, err
	}
	defer exit()
	n := capi.Refcount(s)
	runtime.KeepAlive(o)
	if n < 0 {
		return 0, ErrClosed
	}
	return n, nil
}

// Closed reports whether Close was called.
func (o *Object) Closed() bool { return o == nil || o.closed.Load() }

// op runs one operation on o's slot.
func (o *Object) op(f func(s capi.Ref) (*Object, error)) (*Object, error) {
	s, err := o.get()
	if err != nil {
		return nil, err
	}
	if err := enter(); err != nil {
		return nil, err
	}
	defer exit()
	r, err := f(s)
	runtime.KeepAlive(o)
	return r, err
}

// Attr returns o.name. Here and in SetAttr, HasAttr, DelAttr and
// CallMethod, name may be a dotted path ("props.label"), followed one
// attribute at a time as Python code would write it.
func (o *Object) Attr(name string) (*Object, error) {
	return o.op(func(s capi.Ref) (*Object, error) { return result(capi.GetAttr(s, name)) })
}

// SetAttr runs o.name = value (value converted as by New).
func (o *Object) SetAttr(name string, value any) error {
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		e := getEncoder()
		defer e.release()
		if err := e.value(value); err != nil {
			return nil, err
		}
		st, exc := capi.SetAttr(s, name, e.vals, e.arena)
		e.done()
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		return nil, nil
	})
	return err
}

// HasAttr reports hasattr(o, name); errors other than AttributeError are
// returned.
func (o *Object) HasAttr(name string) (bool, error) {
	var ok bool
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		has, st, exc := capi.HasAttr(s, name)
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		ok = has
		return nil, nil
	})
	return ok, err
}

// DelAttr runs del o.name.
func (o *Object) DelAttr(name string) error {
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		if st, exc := capi.DelAttr(s, name); st != capi.OK {
			return nil, statusErr(st, exc)
		}
		return nil, nil
	})
	return err
}

// Call calls o with args, o(args...). Arguments are converted as by New;
// the Kw maps among them (after the positional ones) become keyword
// arguments.
func (o *Object) Call(args ...any) (*Object, error) { return o.call("", args) }

// CallMethod calls o.name(args...), with arguments as for Call.
func (o *Object) CallMethod(name string, args ...any) (*Object, error) {
	if name == "" {
		return nil, &ConversionError{Reason: "empty method name"}
	}
	return o.call(name, args)
}

func (o *Object) call(method string, args []any) (*Object, error) {
	if len(args) == 0 {
		// The commonest call, f(): nothing to encode, no closure, and
		// the gate entered in the same crossing when nothing is in its way.
		s, err := o.get()
		if err != nil {
			return nil, err
		}
		var r, exc capi.Ref
		var st capi.Status
		if method == "" {
			r, st, exc = capi.Call0(s)
		} else {
			r, st, exc = capi.CallMethod0(s, method)
		}
		if st != capi.Slow {
			runtime.KeepAlive(o)
			if st == capi.Err {
				return nil, raised(exc)
			}
			return result(r, st, exc)
		}
		if err := enter(); err != nil {
			return nil, err
		}
		defer exit()
		res, err := result(capi.Call(s, method, nil, nil, 0, 0))
		runtime.KeepAlive(o)
		return res, err
	}
	return o.op(func(s capi.Ref) (*Object, error) {
		e := getEncoder()
		defer e.release()
		nargs, nkw, err := e.args(args)
		if err != nil {
			return nil, err
		}
		r, err := result(capi.Call(s, method, e.vals, e.arena, nargs, nkw))
		e.done()
		return r, err
	})
}

// raised is the error of a call whose entry C has ended (capi.Call0,
// capi.CallMethod0): describing the exception runs Python (its str(), the
// traceback), so it is an entry of its own, or Finalize could begin under
// it. A function of its own, so that call's fast path has no second defer.
//
//go:noinline
func raised(exc capi.Ref) error {
	if err := enter(); err != nil {
		lifetime.Queue(exc)
		return err
	}
	defer exit()
	return statusErr(capi.Err, exc)
}

// Item returns o[key].
func (o *Object) Item(key any) (*Object, error) {
	return o.op(func(s capi.Ref) (*Object, error) {
		e := getEncoder()
		defer e.release()
		if err := e.value(key); err != nil {
			return nil, err
		}
		r, err := result(capi.GetItem(s, e.vals, e.arena))
		e.done()
		return r, err
	})
}

// SetItem runs o[key] = value.
func (o *Object) SetItem(key, value any) error {
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		e := getEncoder()
		defer e.release()
		if err := e.value(key); err != nil {
			return nil, err
		}
		if err := e.value(value); err != nil {
			return nil, err
		}
		st, exc := capi.SetItem(s, e.vals, e.arena)
		e.done()
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		return nil, nil
	})
	return err
}

// DelItem runs del o[key].
func (o *Object) DelItem(key any) error {
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		e := getEncoder()
		defer e.release()
		if err := e.value(key); err != nil {
			return nil, err
		}
		st, exc := capi.DelItem(s, e.vals, e.arena)
		e.done()
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		return nil, nil
	})
	return err
}

// Len returns len(o).
func (o *Object) Len() (int, error) {
	var n int64
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		l, st, exc := capi.Len(s)
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		n = l
		return nil, nil
	})
	return int(n), err
}

func (o *Object) text(repr bool) (string, error) {
	var text string
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		t, st, exc := capi.Str(s, repr)
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		text = t
		return nil, nil
	})
	return text, err
}

// Repr returns repr(o).
func (o *Object) Repr() (string, error) { return o.text(true) }

// String is str(o), for fmt (so it cannot fail: an error that prevented
// str() is described instead). To convert a Python str to a Go string,
// strictly, use As[string]; for the exact text Python would print, Repr.
func (o *Object) String() string {
	s, err := o.text(false)
	if err != nil {
		return "<pygi.Object: " + err.Error() + ">"
	}
	return s
}

// TypeName returns the name of o's type (its tp_name, e.g. "int" or
// "gi.repository.Gtk.Button" for a type defined in C, "Button" for a class
// defined in Python).
func (o *Object) TypeName() (string, error) {
	var name string
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		n, st := capi.TypeName(s)
		if st != capi.OK {
			return nil, statusErr(st, capi.Ref{})
		}
		name = n
		return nil, nil
	})
	return name, err
}

// Truthy returns bool(o).
func (o *Object) Truthy() (bool, error) {
	var t bool
	_, err := o.op(func(s capi.Ref) (*Object, error) {
		v, st, exc := capi.Truth(s)
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		t = v
		return nil, nil
	})
	return t, err
}

// Is reports whether o and other are the same Python object (Python's is).
func (o *Object) Is(other *Object) (bool, error) {
	b, err := other.get()
	if err != nil {
		return false, err
	}
	var same bool
	_, err = o.op(func(s capi.Ref) (*Object, error) {
		v, st := capi.Is(s, b)
		if st != capi.OK {
			return nil, statusErr(st, capi.Ref{})
		}
		same = v
		return nil, nil
	})
	runtime.KeepAlive(other)
	return same, err
}

// IsNone reports whether o is None. A nil or closed Object is not None.
func (o *Object) IsNone() bool {
	if o == interp.none && o != nil {
		return true
	}
	if o == nil || interp.none == nil || o.lazy != nil {
		return false // a lazy handler's argument is a GObject (a NULL one is None, not lazy)
	}
	same, err := o.Is(interp.none)
	return err == nil && same
}

// IsInstance reports isinstance(o, cls).
func (o *Object) IsInstance(cls *Object) (bool, error) {
	c, err := cls.get()
	if err != nil {
		return false, err
	}
	var ok bool
	_, err = o.op(func(s capi.Ref) (*Object, error) {
		v, st, exc := capi.IsInstance(s, c)
		if st != capi.OK {
			return nil, statusErr(st, exc)
		}
		ok = v
		return nil, nil
	})
	runtime.KeepAlive(cls)
	return ok, err
}

// Iter iterates over o as Python's for loop would. The sequence yields
// each item with a nil error, or stops after yielding one non-nil error.
func (o *Object) Iter() iter.Seq2[*Object, error] {
	return func(yield func(*Object, error) bool) {
		it, err := o.op(func(s capi.Ref) (*Object, error) { return result(capi.Iter(s)) })
		if err != nil {
			yield(nil, err)
			return
		}
		defer it.Close()
		for {
			var end bool
			item, err := it.op(func(s capi.Ref) (*Object, error) {
				out, st, exc := capi.Next(s)
				if st == capi.End {
					end = true
					return nil, nil
				}
				return result(out, st, exc)
			})
			if end {
				return
			}
			if !yield(item, err) || err != nil {
				return
			}
		}
	}
}

// None returns Python's None. It needs the interpreter, which it starts.
func None() *Object {
	if Init(Options{}) != nil {
		return nil
	}
	return interp.none
}

// Import imports a module by dotted name, as Python's import statement
// does: "gi.repository.Gtk" for a GI namespace (after RequireVersion when
// the version matters). When PyGObject itself is missing, the error wraps
// ErrNoGI and says which interpreter is embedded and how to install it.
func Import(name string) (*Object, error) {
	o, err := importName(name)
	if err != nil && (name == "gi" || strings.HasPrefix(name, "gi.")) {
		// PyGObject missing is the one import failure with a fix to name.
		if _, gerr := gi(); gerr != nil {
			return nil, gerr
		}
	}
	return o, err
}

func importName(name string) (*Object, error) {
	if err := enter(); err != nil {
		return nil, err
	}
	defer exit()
	return result(capi.Import(name))
}

// NewGlobals returns a fresh dict with __builtins__, for Exec and Eval.
func NewGlobals() (*Object, error) {
	if err := enter(); err != nil {
		return nil, err
	}
	defer exit()
	g, st := capi.NewGlobals()
	if st != capi.OK {
		return nil, statusErr(st, capi.Ref{})
	}
	return wrap(g), nil
}

func run(src, filename string, eval bool, globals *Object) (*Object, error) {
	if globals == nil {
		g, err := NewGlobals()
		if err != nil {
			return nil, err
		}
		defer g.Close()
		globals = g
	}
	return globals.op(func(s capi.Ref) (*Object, error) {
		return result(capi.Run(src, filename, eval, s))
	})
}

// Exec runs Python statements with globals as their global namespace (a
// dict; nil for a fresh one). Errors, syntax errors included, come back as
// *Error.
func Exec(src string, globals *Object) error {
	_, err := run(src, "<duet>", false, globals)
	return err
}

// ExecFile is Exec with a file name for tracebacks.
func ExecFile(src, filename string, globals *Object) error {
	_, err := run(src, filename, false, globals)
	return err
}

// ExecModule runs src as a new module called name (filename in its
// tracebacks and __file__), registered in sys.modules so that Python code
// can import it, and returns the module. A name that Python already knows
// as another module (imported, or importable: the standard library's
// calendar, a package on sys.path) is refused with an error that names
// it: a module of the app's must never shadow one that other code imports.
// Running it again under the same name replaces the module ExecModule made
// before. If src raises, sys.modules is as it was and the error comes back
// as *Error.
func ExecModule(name, src, filename string) (*Object, error) {
	return execModule(name, src, filename, nil)
}

// execModule is ExecModule with src's code compiled ahead, when not nil
// (see internal/pysrc's precompiled.go).
func execModule(name, src, filename string, compiled []byte) (*Object, error) {
	if err := enter(); err != nil { // starts Python: the helper exists from then on
		return nil, err
	}
	defer exit()
	if compiled == nil {
		return interp.helper.CallMethod("exec_module", name, src, filename)
	}
	return interp.helper.CallMethod("exec_module", name, src, filename, compiled)
}

// Eval evaluates one Python expression with globals (a dict; nil for a
// fresh one).
func Eval(expr string, globals *Object) (*Object, error) {
	return run(expr, "<duet>", true, globals)
}
