package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// The seed's bug in miniature: Python keeps a callback, Go drops its
// wrapper, both collectors run, Python calls the callback.
func heldThenCalled(broken bool) error {
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	if err := pygi.Exec("held = []\n", g); err != nil {
		return err
	}
	held, err := g.Item("held")
	if err != nil {
		return err
	}
	for i := range 50 {
		cb, err := pyobj.NewCallback(func(x int) int { return x + i }, "held", broken, false, 0)
		if err != nil {
			return err
		}
		if _, err := held.CallMethod("append", cb); err != nil {
			return err
		}
		// cb is dropped here, never closed: only Go's GC learns it is gone.
	}
	for range 10 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		if err := eventloop.Collect(); err != nil {
			return err
		}
	}
	fmt.Printf("stats before calling: %+v\n", forensics.ReadStats().Callbacks)
	os.Stdout.Sync()
	r, err := pygi.Eval("sum(f(1) for f in held)", g)
	if err != nil {
		return err
	}
	n, err := pygi.As[int64](r)
	if err != nil {
		return err
	}
	if n != 50+49*50/2 {
		return fmt.Errorf("sum = %d", n)
	}
	return pygi.Finalize(context.Background())
}

// The same through duet's own signal closure (callbacks.Connect): the
// connection holds the callback, Go drops it, the signal is emitted.
func connectedThenEmitted(broken bool) error {
	if err := pygi.RequireVersion("GObject", "2.0"); err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	if err := pygi.Exec(`
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"ping": (GObject.SignalFlags.RUN_LAST, int, (int,))}
e = Emitter()
`, g); err != nil {
		return err
	}
	e, err := g.Item("e")
	if err != nil {
		return err
	}
	for i := range 50 {
		cb, err := pyobj.NewCallback(func(_ *pygi.Object, x int) int { return x + i }, "handler", broken, false, 0)
		if err != nil {
			return err
		}
		if _, err := callbacks.Connect(e, "ping", cb); err != nil {
			return err
		}
	}
	for range 10 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		if err := eventloop.Collect(); err != nil {
			return err
		}
	}
	fmt.Printf("stats before emitting: %+v\n", forensics.ReadStats().Callbacks)
	os.Stdout.Sync()
	r, err := e.CallMethod("emit", "ping", 1)
	if err != nil {
		return err
	}
	if n, err := pygi.As[int64](r); err != nil || n != 50 { // the last handler's value
		return fmt.Errorf("emit = %d (%v)", n, err)
	}
	return pygi.Finalize(context.Background())
}

// The same with handlers that take nothing, which run bare (without the
// GIL, their Go handle copied into the closure): the broken mode must
// still crash, not run a freed handler or skip it quietly.
func connectedBareThenEmitted(broken bool) error {
	if err := pygi.RequireVersion("GObject", "2.0"); err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	if err := pygi.Exec(`
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"pong": (GObject.SignalFlags.RUN_LAST, None, ())}
e = Emitter()
`, g); err != nil {
		return err
	}
	e, err := g.Item("e")
	if err != nil {
		return err
	}
	var calls atomic.Int64
	for range 50 {
		cb, err := pyobj.NewCallback(func() { calls.Add(1) }, "handler", broken, false, 0)
		if err != nil {
			return err
		}
		if _, err := callbacks.Connect(e, "pong", cb); err != nil {
			return err
		}
	}
	for range 10 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		if err := eventloop.Collect(); err != nil {
			return err
		}
	}
	fmt.Printf("stats before emitting: %+v\n", forensics.ReadStats().Callbacks)
	os.Stdout.Sync()
	if err := pygi.Exec("e.emit('pong')", g); err != nil {
		return err
	}
	if n := calls.Load(); n != 50 {
		return fmt.Errorf("%d handlers ran, want 50", n)
	}
	return pygi.Finalize(context.Background())
}

// Bare emissions racing disconnects on another thread: a Python thread
// emits (PyGObject lets go of the GIL around each emission, so the
// handlers run without it) while a goroutine connects and disconnects
// handlers, each freed as it is disconnected. GLib lets an emission under
// way call a handler disconnected meanwhile; duet must neither crash nor
// take that race for the broken mode's use after free.
func bareDisconnectRace() error { return disconnectRace(false) }

func disconnectRace(lazy bool) error {
	if err := pygi.RequireVersion("GObject", "2.0"); err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	if err := pygi.Exec(`
import threading
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"pong": (GObject.SignalFlags.RUN_LAST, None, ())}
e = Emitter()
done = threading.Event()
def emitting():
    while not done.is_set():
        for _ in range(100):
            e.emit('pong')
emitter = threading.Thread(target=emitting)
emitter.start()
`, g); err != nil {
		return err
	}
	e, err := g.Item("e")
	if err != nil {
		return err
	}
	var calls atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	cycles := 0
	for ; time.Now().Before(deadline) || calls.Load() == 0; cycles++ {
		var ids []uint64
		for range 4 {
			var fn any = func() { calls.Add(1) }
			if lazy { // a lazy handler, using its emitter every other call
				fn = func(self *pygi.Object) {
					if calls.Add(1)%2 == 0 {
						_, _ = self.Attr("__class__")
					}
				}
			}
			id, err := callbacks.Connect(e, "pong", fn)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			if err := callbacks.Disconnect(e, id); err != nil {
				return err
			}
		}
	}
	if err := pygi.Exec("done.set(); emitter.join()", g); err != nil {
		return err
	}
	fmt.Printf("%d connect cycles, %d calls\n", cycles, calls.Load())
	if live := forensics.ReadStats().Callbacks.Live; live > 2 { // the connect hook's two
		return fmt.Errorf("%d callbacks live after every handler was disconnected", live)
	}
	return pygi.Finalize(context.Background())
}

// pongEmitter makes a GObject with a signal "pong" and returns its
// wrapper and its address, with a reference of its own taken through
// ctypes that nothing gives back: the object outlives the interpreter, as
// one a C library emits from would.
func pongEmitter() (*pygi.Object, uintptr, error) {
	return emitter(`from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"pong": (GObject.SignalFlags.RUN_LAST, None, ())}
e = Emitter()
`)
}

// cancellable is an emitter whose signal ("cancelled") involves no Python
// at all: a class of GLib's own, whose default handler is C (pong's, a
// Python class's, takes the GIL).
func cancellable() (*pygi.Object, uintptr, error) {
	return emitter("from gi.repository import Gio\ne = Gio.Cancellable()\n")
}

// emitter runs src, which makes a GObject e, and returns e and its
// address, with a reference of its own (the caller emits on it from C).
func emitter(src string) (*pygi.Object, uintptr, error) {
	if err := pygi.RequireVersion("GObject", "2.0"); err != nil {
		return nil, 0, err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return nil, 0, err
	}
	defer g.Close()
	if err := pygi.Exec(src+`
import ctypes
cap = e.__gpointer__
api = ctypes.pythonapi
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
ptr = api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))
gobject = ctypes.CDLL("libgobject-2.0.so.0")
gobject.g_object_ref.argtypes = [ctypes.c_void_p]
gobject.g_object_ref(ptr)
`, g); err != nil {
		return nil, 0, err
	}
	e, err := g.Item("e")
	if err != nil {
		return nil, 0, err
	}
	p, err := pygi.As[uint64](eval0(g, "ptr"))
	return e, uintptr(p), err
}

func eval0(g *pygi.Object, expr string) *pygi.Object {
	r, _ := pygi.Eval(expr, g)
	return r
}

// A bare handler holds no GIL, but it holds Finalize back as one holding
// the GIL did: one emitted on a thread of its own, still running when
// Finalize is called, ends (its failure printed through Python) before the
// interpreter does, and the rest of the emission (the Python class's
// default handler) meets a live interpreter.
func bareHoldsFinalizeBack(lazy bool) error {
	e, p, err := pongEmitter()
	if err != nil {
		return err
	}
	started := make(chan struct{})
	late := func(self *pygi.Object) error {
		close(started)
		time.Sleep(300 * time.Millisecond)
		// Finalize is waiting for this handler now: a call into Python
		// from it is nested in it, not made to wait for Finalize (a lazy
		// handler's emitter too, made into its wrapper only now).
		if self != nil {
			if _, err := self.Attr("__class__"); err != nil {
				return err
			}
		}
		r, err := pygi.Eval("6*7", nil)
		if err != nil {
			return err
		}
		r.Close()
		fmt.Println("handler: done")
		return errors.New("late failure")
	}
	var fn any = func() error { return late(nil) }
	if lazy {
		fn = late
	}
	if _, err := callbacks.Connect(e, "pong", fn); err != nil {
		return err
	}
	e.Close()
	emitted := make(chan error)
	go func() {
		runtime.LockOSThread() // a thread Python never saw
		_, err := capi.EmitN(p, "pong", 1)
		emitted <- err
	}()
	select { // Finalize once the handler runs
	case <-started:
	case err := <-emitted:
		return fmt.Errorf("the emission ended before the handler started: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pygi.Finalize(ctx); err != nil {
		return err
	}
	fmt.Println("Finalize returned")
	return <-emitted
}

// A bare handler emitted while Finalize waits for a call in flight holds
// no GIL either (the call in flight may need it to end): it waits until
// the gate opens again, as any entry does (Finalize reopens it for
// threading's shutdown), then runs, its own calls into Python nested in
// it, or does not run once Python is finalised (as an emission on another
// thread does not).
func bareWhileFinalizeDecides(lazy bool) error {
	// Not pong: its class closure is PyGObject's and takes the GIL after
	// the handler. Run while the gate is open for threading's shutdown, the
	// handler can end just as Py_FinalizeEx begins, and that closure then
	// waits for the GIL for ever (CPython ends such a thread there, as
	// python3 does): what this test would see is the machine's timing.
	// cancelled's default handler is C, so the emission ends whenever the
	// handler runs, or is refused.
	e, p, err := cancellable()
	if err != nil {
		return err
	}
	handler := func(self *pygi.Object) {
		fmt.Println("handler: phase", lifetime.Current())
		fmt.Println("handler: attached:", capi.Attached())
		if self != nil {
			_, err := self.Attr("__class__")
			fmt.Println("handler: its emitter:", err)
		}
		r, err := pygi.Eval("6*7", nil)
		r.Close()
		fmt.Println("handler: its Eval:", err)
	}
	var fn any = func() { handler(nil) }
	if lazy {
		fn = handler
	}
	if _, err := callbacks.Connect(e, "cancelled", fn); err != nil {
		return err
	}
	e.Close()
	inFlight, refused := make(chan struct{}), make(chan error, 1)
	go func() { // a call in flight keeps Finalize deciding for a while
		refused <- pygi.WithGIL(func() error {
			close(inFlight)
			pygi.WithoutGIL(func() { time.Sleep(500 * time.Millisecond) })
			return nil
		})
	}()
	select {
	case <-inFlight:
	case err := <-refused:
		return fmt.Errorf("WithGIL before Finalize: %v", err)
	}
	emitted := make(chan error, 1)
	go func() {
		// Once Finalize decides, not after a while (on a loaded machine
		// that came before Finalize did).
		for lifetime.Current() < lifetime.Closing {
			time.Sleep(100 * time.Microsecond)
		}
		runtime.LockOSThread() // a thread Python never saw
		_, err := capi.EmitN(p, "cancelled", 1)
		emitted <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = pygi.Finalize(ctx)
	fmt.Println("Finalize returned:", err)
	if err != nil {
		return err
	}
	select {
	case err := <-emitted:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("the emission did not return")
	}
}

// Once a sub-interpreter has existed, CPython's PyGILState_Check says yes
// to every thread: a bare handler emitted inside an entry whose Python let
// go of the GIL must still see that it holds none (WithoutGIL in it used
// to abort the process).
func bareAfterSubinterpreter() error {
	if err := pygi.Exec("import _xxsubinterpreters as s\ns.destroy(s.create())\n", nil); err != nil {
		return err
	}
	e, _, err := pongEmitter()
	if err != nil {
		return err
	}
	ran := false
	if _, err := callbacks.Connect(e, "pong", func() { pygi.WithoutGIL(func() { ran = true }) }); err != nil {
		return err
	}
	if _, err := e.CallMethod("emit", "pong"); err != nil {
		return err
	}
	if !ran {
		return errors.New("the handler did not run")
	}
	e.Close()
	return pygi.Finalize(context.Background())
}

// Finalize from inside a bare handler is refused, as from inside any Go
// callback: the emission returns into GLib, whose other handlers may be
// Python's.
func bareFinalizeInside() error {
	runtime.LockOSThread() // the thread that starts Python
	e, p, err := pongEmitter()
	if err != nil {
		return err
	}
	var inside error
	if _, err := callbacks.Connect(e, "pong", func() { inside = pygi.Finalize(context.Background()) }); err != nil {
		return err
	}
	if _, err := capi.EmitN(p, "pong", 1); err != nil {
		return err
	}
	if !errors.Is(inside, pygi.ErrInsideCall) {
		return fmt.Errorf("Finalize inside a bare handler returned %v, want ErrInsideCall", inside)
	}
	e.Close()
	return pygi.Finalize(context.Background())
}

// An emission to a bare handler (or a pygi call) inside WithoutGIL inside
// WithGIL, while Finalize decides: nested in the open WithGIL, which
// Finalize waits for, so it goes in at once (it used to wait for Finalize,
// which waited for it: a hang until Finalize's context ended).
func nestedInWithoutGIL(emit bool) error {
	e, p, err := pongEmitter()
	if err != nil {
		return err
	}
	ran := false
	if _, err := callbacks.Connect(e, "pong", func() { ran = true }); err != nil {
		return err
	}
	e.Close()
	done := make(chan error, 1)
	in := make(chan struct{})
	go func() {
		done <- pygi.WithGIL(func() error {
			close(in)
			var err error
			pygi.WithoutGIL(func() {
				for lifetime.Current() != lifetime.Closing {
					time.Sleep(100 * time.Microsecond)
				}
				if emit {
					_, err = capi.EmitN(p, "pong", 1)
					return
				}
				var r *pygi.Object
				if r, err = pygi.Eval("6*7", nil); err == nil {
					ran = true
					r.Close()
				}
			})
			return err
		})
	}()
	// Finalize once the WithGIL is in flight: on a loaded machine the
	// goroutine could otherwise come after Python was gone.
	select {
	case <-in:
	case err := <-done:
		return fmt.Errorf("WithGIL before Finalize: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := pygi.Finalize(ctx); err != nil {
		return fmt.Errorf("Finalize: %w", err)
	}
	if err := <-done; err != nil {
		return err
	}
	if !ran {
		return errors.New("the nested handler or call did not run")
	}
	return nil
}

// A bare handler emitted, once Finalize runs its last step, on a thread
// other than Finalize's (nested in a Go callback a Python daemon thread
// runs, detached) does not run: nothing would wait for it, and it would
// outlive the interpreter (it used to, and crashed on its way out).
func bareOnceFinalizing() error {
	e, p, err := cancellable() // no Python in the emission but the handler's way
	if err != nil {
		return err
	}
	var ran atomic.Bool
	if _, err := callbacks.Connect(e, "cancelled", func() error { ran.Store(true); return errors.New("late") }); err != nil {
		return err
	}
	e.Close()
	emitted := make(chan error, 1)
	// The last step waits for the emission: the window is held open.
	lifetime.AtFinalize(func() {
		select {
		case <-emitted:
		case <-time.After(10 * time.Second):
		}
	})
	cb, err := callbacks.New(func() {
		pygi.WithoutGIL(func() {
			for lifetime.Current() != lifetime.Finalizing {
				time.Sleep(100 * time.Microsecond)
			}
			_, err := capi.EmitN(p, "cancelled", 1)
			emitted <- err
			select {} // never back into the dying interpreter
		})
	}, callbacks.Name("daemon_cb"))
	if err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	if err := g.SetItem("cb", cb); err != nil {
		return err
	}
	if err := pygi.Exec("import threading\nthreading.Thread(target=cb, daemon=True).start()\n", g); err != nil {
		return err
	}
	g.Close()
	cb.Close()
	if err := pygi.Finalize(context.Background()); err != nil {
		return err
	}
	select {
	case err := <-emitted:
		return fmt.Errorf("the emission's outcome was not taken by the hook: %v", err)
	default:
	}
	if ran.Load() {
		return errors.New("the bare handler ran while Python was being finalised, on another thread")
	}
	return nil
}

// A bare handler emitted by an AtFinalize hook runs: the hooks run
// attached, in Finalize's last step, on its thread, where Go code nested
// in the finalisation may still run.
func bareFromAnAtFinalizeHook() error {
	e, p, err := cancellable()
	if err != nil {
		return err
	}
	var ran atomic.Bool
	if _, err := callbacks.Connect(e, "cancelled", func() { ran.Store(true) }); err != nil {
		return err
	}
	e.Close()
	emitted := make(chan error, 1)
	lifetime.AtFinalize(func() {
		_, err := capi.EmitN(p, "cancelled", 1)
		emitted <- err
	})
	if err := pygi.Finalize(context.Background()); err != nil {
		return err
	}
	if err := <-emitted; err != nil {
		return err
	}
	if !ran.Load() {
		return errors.New("a bare handler emitted in Finalize's last step, on its thread, did not run")
	}
	return nil
}

// watchdog ends the child with a message when what it waits for hangs.
func watchdog(what string) (stop func() bool) {
	return time.AfterFunc(20*time.Second, func() {
		fmt.Fprintln(os.Stderr, "FAIL: hung:", what)
		os.Exit(3)
	}).Stop
}

// Finalize from an atexit function that calls Go, while Finalize runs
// Python's shutdown on this very thread: refused, not a wait for itself.
func finalizeFromAtexit() error {
	if err := pygi.Init(pygi.Options{}); err != nil {
		return err
	}
	defer watchdog("Finalize from an atexit Go function")()
	inner := errors.New("the atexit function never ran")
	cb, err := callbacks.New(func() {
		fmt.Println("atexit: phase", lifetime.Current())
		inner = pygi.Finalize(context.Background())
	}, callbacks.Name("go_shutdown"))
	if err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err == nil {
		err = g.SetItem("go_shutdown", cb)
	}
	if err == nil {
		err = pygi.Exec("import atexit\natexit.register(go_shutdown)\n", g)
	}
	if err != nil {
		return err
	}
	g.Close()
	cb.Close()
	if err := pygi.Finalize(context.Background()); err != nil {
		return fmt.Errorf("the outer Finalize: %w", err)
	}
	if !errors.Is(inner, pygi.ErrInsideCall) {
		return fmt.Errorf("Finalize inside an atexit function: %v, want ErrInsideCall", inner)
	}
	return nil
}

// Finalize from inside a call (detached in WithoutGIL until another
// goroutine's Finalize decides) is refused: the deciding one waits for
// this very call. Python runs on its own thread here (Init from a
// goroutine), where Finalize is not refused for the thread first.
func finalizeInsideWhileClosing() error {
	errc := make(chan error, 1)
	go func() { errc <- pygi.Init(pygi.Options{}) }()
	if err := <-errc; err != nil {
		return err
	}
	defer watchdog("Finalize inside a call while another decides")()
	inner := make(chan error, 1)
	cb, err := callbacks.New(func() {
		pygi.WithoutGIL(func() {
			for lifetime.Current() != lifetime.Closing {
				time.Sleep(100 * time.Microsecond)
			}
		})
		inner <- pygi.Finalize(context.Background())
	}, callbacks.Name("finalizes"))
	if err != nil {
		return err
	}
	called := make(chan error, 1)
	go func() {
		r, err := cb.Call()
		r.Close()
		called <- err
	}()
	outer := make(chan error, 1)
	go func() {
		for lifetime.InFlight() == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		outer <- pygi.Finalize(context.Background())
	}()
	if err := <-inner; !errors.Is(err, pygi.ErrInsideCall) {
		return fmt.Errorf("Finalize inside a call while another decides: %v, want ErrInsideCall", err)
	}
	if err := <-called; err != nil {
		return fmt.Errorf("the call: %w", err)
	}
	if err := <-outer; err != nil {
		return fmt.Errorf("the outer Finalize: %w", err)
	}
	if p := lifetime.Current(); p != lifetime.Finalized {
		return fmt.Errorf("after both: phase %v", p)
	}
	return nil
}

// A Finalize on a thread that cannot run Python's shutdown, come while
// another Finalize decides, waits for that one's outcome; when that one
// gives up, it is refused (ErrWrongThread), not run on the wrong thread.
func finalizeOffThreadAfterAGiveUp() error {
	runtime.LockOSThread() // the thread that starts Python
	if err := pygi.Init(pygi.Options{}); err != nil {
		return err
	}
	defer watchdog("Finalize off the thread after another gave up")()
	go func() { // a call in flight: the first Finalize gives up on it
		_ = pygi.WithGIL(func() error {
			pygi.WithoutGIL(func() { time.Sleep(600 * time.Millisecond) })
			return nil
		})
	}()
	for lifetime.InFlight() == 0 {
		time.Sleep(100 * time.Microsecond)
	}
	other := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // a thread Python never started on
		for lifetime.Current() != lifetime.Closing {
			time.Sleep(100 * time.Microsecond)
		}
		other <- pygi.Finalize(context.Background())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := pygi.Finalize(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the first Finalize: %v, want it to give up", err)
	}
	if err := <-other; !errors.Is(err, pygi.ErrWrongThread) {
		return fmt.Errorf("Finalize off the thread after the first gave up: %v, want ErrWrongThread", err)
	}
	if p := lifetime.Current(); p != lifetime.Ready {
		return fmt.Errorf("after it: phase %v, want ready (nothing of Python's shutdown run)", p)
	}
	return pygi.Finalize(context.Background())
}

var scenarios = map[string]func() error{
	"finalize-off-thread-after-give-up": finalizeOffThreadAfterAGiveUp,
	"finalize-from-atexit":              finalizeFromAtexit,
	"finalize-inside-while-closing":     finalizeInsideWhileClosing,
	"bare-holds-finalize":               func() error { return bareHoldsFinalizeBack(false) },
	"lazy-holds-finalize":               func() error { return bareHoldsFinalizeBack(true) },
	"bare-finalize-inside":              bareFinalizeInside,
	"bare-while-deciding":               func() error { return bareWhileFinalizeDecides(false) },
	"lazy-while-deciding":               func() error { return bareWhileFinalizeDecides(true) },
	"bare-in-withoutgil":                func() error { return nestedInWithoutGIL(true) },
	"call-in-withoutgil":                func() error { return nestedInWithoutGIL(false) },
	"bare-once-finalizing":              bareOnceFinalizing,
	"bare-in-atfinalize":                bareFromAnAtFinalizeHook,
	"bare-subinterpreter":               bareAfterSubinterpreter,
	"capsule-bare":                      func() error { return connectedBareThenEmitted(false) },
	"broken-bare":                       func() error { return connectedBareThenEmitted(true) },
	"bare-race":                         bareDisconnectRace,
	"lazy-race":                         func() error { return disconnectRace(true) },
	"lazy-goroutine-finalize":           lazyGoroutineWhileFinalizing,
	"lazy-wait-debug":                   lazyWaitsUnderDebugCallbacks,
	"capsule":                           func() error { return heldThenCalled(false) },
	"broken":                            func() error { return heldThenCalled(true) },
	"capsule-signal":                    func() error { return connectedThenEmitted(false) },
	"broken-signal":                     func() error { return connectedThenEmitted(true) },
	// runtime.Goexit inside a callback that Python called from a goroutine:
	// the process must end with a message, not hang with the GIL held.
	"goexit": func() error {
		cb, err := callbacks.New(func() { runtime.Goexit() }, callbacks.Name("leaves_early"))
		if err != nil {
			return err
		}
		done := make(chan error)
		go func() {
			r, err := cb.Call()
			r.Close()
			done <- err
		}()
		select {
		case err := <-done:
			return fmt.Errorf("the call returned (%v) after runtime.Goexit", err)
		case <-time.After(20 * time.Second):
			return errors.New("hung after runtime.Goexit in a callback")
		}
	},
}

func childMain(name string) int {
	fn, ok := scenarios[name]
	if !ok {
		return 2
	}
	if err := fn(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

func runChild(t *testing.T, name string) (string, string, error) {
	return testutil.RunChild(t, "CALLBACKS_CHILD="+name)
}

func TestOwnershipInChildProcess(t *testing.T) {
	for _, via := range []string{"", "-signal", "-bare"} {
		t.Run("capsule ownership survives"+via, func(t *testing.T) {
			out, errOut, err := runChild(t, "capsule"+via)
			require.NoError(t, err, "stderr:\n%s", errOut)
			assert.Contains(t, out, "ok")
		})
		t.Run("broken ownership crashes"+via, func(t *testing.T) { brokenCrashes(t, "broken"+via) })
	}
}

func brokenCrashes(t *testing.T, scenario string) {
	out, errOut, err := runChild(t, scenario)
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the broken mode must crash, got %v\nstdout:\n%s", err, out)
	assert.NotContains(t, out, "ok\n")
	assert.NotContains(t, errOut, "FAIL:", "a crash, not an orderly failure")
	// Go reports a fault in C code as a fatal signal (exit status 2);
	// a raw signal death shows up as a negative exit code.
	// Under AddressSanitizer (make sanitize) the use after free is caught
	// as such.
	crashed := ee.ExitCode() == 2 || ee.ExitCode() < 0 || strings.Contains(errOut, "SIGSEGV") ||
		strings.Contains(errOut, "AddressSanitizer: heap-use-after-free")
	assert.True(t, crashed, "exit %d\nstderr:\n%.2000s", ee.ExitCode(), errOut)
	// The crash comes when Python next touches a freed callback: normally the
	// call after the stats line, sometimes already a collection before it.
	if strings.Contains(out, "stats before") {
		assert.Contains(t, out, "FreedByGoGC:50", "Go's GC freed every callback Python still held")
	}
	t.Logf("broken mode: exit %d, %s", ee.ExitCode(), firstLine(errOut))
}

func TestBareEmissionsRaceDisconnects(t *testing.T) {
	for _, name := range []string{"bare-race", "lazy-race"} {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "ok")
			t.Log(firstLine(out))
		})
	}
}

// A lazy handler running when Finalize is called hands its emitter to a
// goroutine, which uses it while Finalize decides, and returns: the
// goroutine waits for the gate outside the argument (the handler's end
// does not wait for it), so Finalize, which waits for the handler, goes on.
func lazyGoroutineWhileFinalizing() error {
	e, p, err := pongEmitter()
	if err != nil {
		return err
	}
	started := make(chan struct{})
	used := make(chan error, 1)
	if _, err := callbacks.Connect(e, "pong", func(self *pygi.Object) {
		close(started)
		time.Sleep(300 * time.Millisecond) // Finalize decides meanwhile
		go func() { _, err := self.Attr("__class__"); used <- err }()
		time.Sleep(100 * time.Millisecond)
	}); err != nil {
		return err
	}
	e.Close()
	go func() {
		runtime.LockOSThread() // a thread Python never saw
		_, _ = capi.EmitN(p, "pong", 1)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := pygi.Finalize(ctx); err != nil {
		return fmt.Errorf("Finalize after %v: %w", time.Since(start), err)
	}
	select {
	case err := <-used:
		if !errors.Is(err, pygi.ErrClosed) && !errors.Is(err, pygi.ErrFinalized) {
			return fmt.Errorf("the goroutine's use after the handler: %v, want ErrClosed or ErrFinalized", err)
		}
	case <-time.After(10 * time.Second):
		return errors.New("the goroutine's use never returned")
	}
	return nil
}

// With DUET_DEBUG=callbacks (forensics.SetDebugCallbacks), a lazy handler
// runs as it runs without: before its first use of Python it may wait for
// a goroutine that uses Python (the debug mode read the quarantine under
// the GIL and ran every such handler holding it: a deadlock the program
// does not have without the debug mode).
func lazyWaitsUnderDebugCallbacks() error {
	forensics.SetDebugCallbacks(true)
	e, p, err := pongEmitter()
	if err != nil {
		return err
	}
	defer e.Close()
	var got error = errors.New("the handler did not run")
	if _, err := callbacks.Connect(e, "pong", func(self *pygi.Object) {
		got = evalOnAGoroutine(10 * time.Second)
	}); err != nil {
		return err
	}
	if _, err := capi.EmitN(p, "pong", 1); err != nil {
		return err
	}
	return got
}

func TestLazyHandlerUnderDebugCallbacks(t *testing.T) {
	out, errOut, err := runChild(t, "lazy-wait-debug")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok")
}

func TestLazyArgumentUsedWhileFinalizing(t *testing.T) {
	out, errOut, err := runChild(t, "lazy-goroutine-finalize")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok")
}

func TestBareHandlerAndFinalize(t *testing.T) {
	for _, kind := range []string{"bare", "lazy"} {
		t.Run(kind+": it holds Finalize back", func(t *testing.T) {
			out, errOut, err := runChild(t, kind+"-holds-finalize")
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "handler: done\nFinalize returned\nok", "Finalize waited for the handler")
			assert.Contains(t, errOut, "GoError: late failure", "its failure printed through Python")
		})
		t.Run(kind+": emitted while Finalize decides, it holds no GIL", func(t *testing.T) {
			out, errOut, err := runChild(t, kind+"-while-deciding")
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "Finalize returned: <nil>")
			assert.NotContains(t, out, "handler: attached: true")
			// Emitted on a thread inside nothing, it waited for the outcome.
			assert.NotContains(t, out, "handler: phase closing")
			if kind == "lazy" && strings.Contains(out, "handler: phase") {
				assert.Contains(t, out, "handler: its emitter: <nil>")
			}
			t.Log(out)
		})
	}
	t.Run("after a sub-interpreter, inside an entry", func(t *testing.T) {
		out, errOut, err := runChild(t, "bare-subinterpreter")
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, out, "ok")
	})
	for _, name := range []string{"bare-in-withoutgil", "call-in-withoutgil"} {
		t.Run("nested in WithoutGIL while Finalize decides: "+name, func(t *testing.T) {
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "ok")
		})
	}
	for _, name := range []string{"bare-once-finalizing", "bare-in-atfinalize"} {
		t.Run("once Finalize runs its last step, only on its thread: "+name, func(t *testing.T) {
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "ok")
		})
	}
	for _, name := range []string{"finalize-from-atexit", "finalize-inside-while-closing", "finalize-off-thread-after-give-up"} {
		t.Run("Finalize that would wait for itself or run on the wrong thread is refused: "+name, func(t *testing.T) {
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "ok")
		})
	}
	t.Run("Finalize inside it is refused", func(t *testing.T) {
		out, errOut, err := runChild(t, "bare-finalize-inside")
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, out, "ok")
	})
}

func TestGoexitInACallbackEndsTheProcess(t *testing.T) {
	start := time.Now()
	_, errOut, err := runChild(t, "goexit")
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "want a failing exit, got %v\nstderr:\n%s", err, errOut)
	assert.Equal(t, 2, ee.ExitCode(), "stderr:\n%s", errOut)
	assert.Contains(t, errOut, "runtime.Goexit")
	assert.Contains(t, errOut, "inside Go callback leaves_early", "the message names the callback")
	assert.NotContains(t, errOut, "hung")
	assert.Less(t, time.Since(start), 15*time.Second)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
