package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

// FuzzLifetime runs random sequences of duet's lifetime operations from
// three goroutines at once, the loop running: objects made, called, closed
// and dropped; Go callbacks made, held by Python, called, connected to a
// GObject signal, emitted, disconnected and let go; Invoke and timers;
// Python objects whose __del__ calls back into Go, left to the cycle
// collector; asyncio awaits both ways; both collectors at random points.
// After each sequence: no crash, every error one of duet's typed errors,
// and the live callbacks and the objects Go holds back to where they were.
// make test replays the seeds and testdata/fuzz/FuzzLifetime; go test
// -fuzz FuzzLifetime ./eventloop looks for more. (Finalisation in the
// middle of such operations: TestLifetimeOpsThroughFinalize.)
func FuzzLifetime(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
		{16, 3, 16, 17, 17, 12, 11, 16},
		{3, 3, 4, 4, 7, 12, 11, 4},
		{5, 5, 5, 6, 6, 7, 12, 11, 5},
		{10, 10, 10, 11, 12, 15, 15, 11},
		{13, 14, 13, 14, 8, 9, 9, 12},
		{15, 1, 15, 2, 0, 0, 12, 11},
	} {
		f.Add(seed)
	}
	w, err := newWorld()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		base := w.baseline(t)
		var wg sync.WaitGroup
		errs := make(chan error, len(ops))
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < len(ops); i += 3 {
					if err := w.op(ops[i], i); err != nil && !typed(err) {
						errs <- fmt.Errorf("op %d (%d): not an error an operation may end with: %T: %v", i, ops[i]%18, err, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		w.settle(t, base)
	})
}

// world is what the operations share: Python code of their own.
type world struct {
	g       *pygi.Object // globals
	emitter *pygi.Object // a GObject with a signal
	coro    *pygi.Object // a coroutine function awaiting a Go async func
	sleep   *pygi.Object // asyncio.sleep
	mu      sync.Mutex
	conns   []uint64 // handler ids on emitter
}

func newWorld() (*world, error) {
	w := &world{}
	var b pygi.Block
	double, err := callbacks.Async(func(ctx context.Context, n int) (int, error) { return 2 * n, nil }, callbacks.Name("fuzz_double"))
	if err != nil {
		return nil, err
	}
	w.g = b.Globals(pygi.Kw{"double": double})
	b.Exec(`
import asyncio, gc
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"ping": (GObject.SignalFlags.RUN_LAST, int, (int,))}
emitter = Emitter()
held = []
haunt_errors = []
class Haunt:
    """Cyclic garbage whose __del__ calls a Go callback back."""
    def __init__(self, cb):
        self.cb, self.me = cb, self
    def __del__(self):
        try:
            self.cb(list(range(len(held) + 50)))  # decoded by Go, maybe inside another decode
        except Exception as e:
            haunt_errors.append(repr(e))  # the sequence's settle fails on any
async def via_go(n):
    return await double(n)
`, w.g)
	w.emitter = b.Item(w.g, "emitter")
	w.coro = b.Item(w.g, "via_go")
	w.sleep = b.Eval("__import__('asyncio').sleep", w.g)
	if err := b.Err(); err != nil {
		return nil, err
	}
	// The first connect installs duet's connect hook (callbacks of its own,
	// for the process): before the baseline.
	id, err := callbacks.Connect(w.emitter, "ping", func() {})
	if err != nil {
		return nil, err
	}
	return w, callbacks.Disconnect(w.emitter, id)
}

// typed: one of the errors an operation may legitimately end with. A
// Python SystemError is duet's bug (an exception lost on the way), and a
// deadline no operation here comes near (5 s) is a hang: neither counts.
func typed(err error) bool {
	var pe *pygi.Error
	var ce *pygi.ConversionError
	if errors.As(err, &pe) {
		return !pe.Matches("SystemError")
	}
	return errors.As(err, &ce) || errors.Is(err, pygi.ErrClosed) || errors.Is(err, pygi.ErrFinalized) ||
		errors.Is(err, eventloop.ErrNotRunning)
}

func (w *world) op(code byte, i int) error {
	switch code % 18 {
	case 0: // New and Close, or New and drop; now and then a value that holds itself
		l := []any{1, "two", 3.0}
		if i%7 == 0 {
			l = append(l, nil)
			l[3] = l
		}
		o, err := pygi.New(map[string]any{"i": i, "l": l})
		if err == nil && i%2 == 0 {
			o.Close()
		}
		return err
	case 1: // call a Python function with Go values
		f, err := pygi.Eval("lambda *a, **k: (len(a), sorted(k))", nil)
		if err != nil {
			return err
		}
		defer f.Close()
		r, err := f.Call(i, "x", pygi.Kw{"k": []int{i}})
		r.Close()
		return err
	case 2: // methods on a shared list, from any goroutine
		h, err := w.g.Item("held")
		if err != nil {
			return err
		}
		defer h.Close()
		r, err := h.CallMethod("append", i)
		r.Close()
		if err == nil && i%3 == 0 {
			r, err = h.CallMethod("clear")
			r.Close()
		}
		return err
	case 3: // a Go callback Python holds; Go drops its wrapper
		opts := []callbacks.Option{callbacks.Name("fuzz_held")}
		if i%11 == 0 {
			opts = append(opts, callbacks.Module("not \xff utf-8"))
		}
		cb, err := callbacks.New(func(n int) int { return n + i }, opts...)
		if err != nil {
			return err
		}
		h, err := w.g.Item("held")
		if err != nil {
			return err
		}
		defer h.Close()
		r, err := h.CallMethod("append", cb)
		r.Close()
		return err
	case 4: // Python calls what it holds
		r, err := pygi.Eval("[f(1) for f in list(held) if callable(f)]", w.g)
		r.Close()
		return err
	case 5: // connect a Go handler to a signal and emit it
		cb, err := callbacks.New(func(_ *pygi.Object, n int) int { return n * 2 }, callbacks.Name("fuzz_ping"))
		if err != nil {
			return err
		}
		connect := callbacks.Connect
		if i%2 == 0 {
			connect = callbacks.ConnectAfter
		}
		id, err := connect(w.emitter, "ping", cb)
		cb.Close()
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.conns = append(w.conns, id)
		w.mu.Unlock()
		r, err := w.emitter.CallMethod("emit", "ping", i)
		r.Close()
		return err
	case 6: // disconnect one
		w.mu.Lock()
		var id uint64
		if n := len(w.conns); n > 0 {
			id, w.conns = w.conns[n-1], w.conns[:n-1]
		}
		w.mu.Unlock()
		if id == 0 {
			return nil
		}
		r, err := w.emitter.CallMethod("disconnect", id)
		r.Close()
		return err
	case 7: // Python lets go of everything it holds
		return pygi.Exec("held.clear()\n", w.g)
	case 8: // Invoke: Python on the UI thread
		done := make(chan error, 1)
		eventloop.Invoke(func() {
			r, err := pygi.Eval("sum(range(100))", nil)
			r.Close()
			done <- err
		})
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("Invoke did not run")
		}
	case 9: // a timer
		done := make(chan struct{})
		tm := eventloop.After(time.Duration(i%3)*time.Millisecond, func() { close(done) })
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tm.Cancel()
			return errors.New("the timer did not fire")
		}
		return nil
	case 10: // cyclic garbage whose __del__ calls Go
		cb, err := callbacks.New(func(xs []int) {}, callbacks.Name("fuzz_haunt"))
		if err != nil {
			return err
		}
		defer cb.Close()
		f, err := w.g.Item("Haunt")
		if err != nil {
			return err
		}
		defer f.Close()
		r, err := f.Call(cb)
		r.Close() // only the cycle collector frees it now
		return err
	case 11: // Python's cycle collector (on the UI thread)
		return eventloop.Collect()
	case 12: // Go's
		runtime.GC()
		return nil
	case 13: // Go awaits Python
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := eventloop.Await(ctx, w.sleep, 0.001)
		r.Close()
		return err
	case 14: // Go awaits Python awaiting Go
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := eventloop.Await(ctx, w.coro, i)
		if err == nil {
			if n, _ := pygi.As[int64](r); n != int64(2*i) {
				err = fmt.Errorf("via_go(%d) = %d", i, n)
			}
		}
		r.Close()
		return err
	case 16: // Python code on a thread of Python's own, calling Go (Python at depth 0)
		return pygi.Exec(`
import threading
out = []
def t():
    try:
        raise ValueError("in flight")
    except ValueError:
        out.append(sum(f(1) for f in list(held) if callable(f)))
th = threading.Thread(target=t); th.start(); th.join()
`, w.g)
	case 17: // a goroutine that ends locked to its thread (the thread ends)
		done := make(chan error)
		go func() {
			runtime.LockOSThread()
			r, err := pygi.Eval("[1, 2, 3]", nil)
			r.Close()
			done <- err
		}()
		return <-done
	default: // 15: decode Python values with objects inside into Go
		o, err := pygi.Eval("{'a': [1, [2, 'x']], 'e': emitter, 'h': list(held)}", w.g)
		if err != nil {
			return err
		}
		defer o.Close()
		m, err := pygi.As[map[string]any](o)
		for _, v := range m {
			if x, ok := v.(*pygi.Object); ok {
				x.Close()
			}
		}
		return err
	}
}

// baseline is the live callbacks and the objects Go holds once what earlier
// sequences left is gone.
func (w *world) baseline(t testing.TB) [2]int64 {
	w.release()
	return [2]int64{int64(looptest.Settle(t)), forensics.ReadStats().Objects.Live}
}

// settle lets go of what the sequence left and checks that, once both
// collectors have settled, the counts are back to base and nothing went
// wrong out of sight.
func (w *world) settle(t testing.TB, base [2]int64) {
	w.release()
	live := int64(looptest.Settle(t))
	held := forensics.ReadStats().Objects.Live
	assert.LessOrEqual(t, live, base[0], "live callbacks after the sequence")
	assert.LessOrEqual(t, held, base[1], "objects Go holds after the sequence")
	assert.Zero(t, capi.LeakedExceptions(), "entries that left a Python exception set")
	if r, err := pygi.Eval("haunt_errors[:]", w.g); assert.NoError(t, err) {
		n, _ := r.Len()
		assert.Zero(t, n, "__del__ calling Go failed: %v", r)
	}
}

// release drops Python's list and the connections the sequence made.
func (w *world) release() {
	pygi.Exec("held.clear()\n", w.g)
	w.mu.Lock()
	conns := w.conns
	w.conns = nil
	w.mu.Unlock()
	for _, id := range conns {
		r, _ := w.emitter.CallMethod("disconnect", id)
		r.Close()
	}
}

// TestLifetimeOpsThroughFinalize runs the same operations from goroutines
// while Python is finalised under them (in a child process): every
// operation that loses the race gets ErrFinalized or another typed error,
// nothing crashes, and the process exits.
func TestLifetimeOpsThroughFinalize(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "ops-through-finalize")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%.3000s", code, out, errOut)
	}
}

func init() {
	lifetimeChildren["ops-through-finalize"] = func() error {
		w, err := newWorld()
		if err != nil {
			return err
		}
		stop := make(chan struct{})
		errs := make(chan error, 64)
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; ; i += 3 {
					select {
					case <-stop:
						return
					default:
					}
					code := byte(i*7) % 16
					if code == 8 || code == 9 || code == 11 || code == 13 || code == 14 {
						continue // they need the loop, which is not running here
					}
					if err := w.op(code, i); err != nil {
						if errors.Is(err, pygi.ErrFinalized) {
							return
						}
						if !typed(err) {
							errs <- fmt.Errorf("op %d: untyped %T: %v", code, err, err)
							return
						}
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		ferr := pygi.Finalize(context.Background())
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		return ferr
	}
}
