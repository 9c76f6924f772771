package pygi

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/internal/lifetime"
)

// f() takes the lifetime gate in C, in its own crossing (capi.Call0), and
// inside an attachment skips it. Either way it must answer as every other
// call does.
func TestCallWithoutArguments(t *testing.T) {
	g, err := NewGlobals()
	require.NoError(t, err)
	require.NoError(t, Exec("def value(): return 6 * 7\ndef nothing(): pass\ndef fails(): raise ValueError('no')\n", g))
	closed, err := g.Item("value")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	fn := func(name string) *Object {
		o, err := g.Item(name)
		require.NoError(t, err)
		return o
	}
	for _, tc := range []struct {
		name  string
		f     *Object
		check func(t *testing.T, r *Object, err error)
	}{
		{"value", fn("value"), func(t *testing.T, r *Object, err error) {
			require.NoError(t, err)
			v, err := As[int](r)
			require.NoError(t, err)
			assert.Equal(t, 42, v)
		}},
		{"None", fn("nothing"), func(t *testing.T, r *Object, err error) {
			require.NoError(t, err)
			assert.True(t, r.IsNone())
		}},
		{"raises", fn("fails"), func(t *testing.T, r *Object, err error) {
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "ValueError", pe.Type)
			assert.Nil(t, r)
			// The exception was taken: the next call is clean.
			_, err = fn("nothing").Call()
			assert.NoError(t, err)
		}},
		{"closed", closed, func(t *testing.T, r *Object, err error) {
			assert.ErrorIs(t, err, ErrClosed)
			assert.Nil(t, r)
		}},
		{"nil", nil, func(t *testing.T, r *Object, err error) {
			assert.ErrorIs(t, err, ErrNilObject)
		}},
	} {
		t.Run(tc.name+"/alone", func(t *testing.T) {
			r, err := tc.f.Call()
			tc.check(t, r, err)
			assert.Equal(t, int64(0), inFlight())
		})
		t.Run(tc.name+"/attached", func(t *testing.T) {
			require.NoError(t, WithGIL(func() error {
				r, err := tc.f.Call()
				tc.check(t, r, err)
				assert.Equal(t, int64(1), inFlight(), "the attachment's entry, no more")
				return nil
			}))
			assert.Equal(t, int64(0), inFlight())
		})
	}
}

// A stand-alone f() counts its entry while it runs (Finalize waits for it),
// and gives it back.
func TestCallWithoutArgumentsCountsItsEntry(t *testing.T) {
	g, err := NewGlobals()
	require.NoError(t, err)
	require.NoError(t, Exec("import threading\nev = threading.Event()\ndef f(): ev.wait(10)\n", g))
	f, err := g.Item("f")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { _, err := f.Call(); done <- err }()
	// ev.wait lets go of the GIL: the call is in flight, nothing else is.
	require.Eventually(t, func() bool { return inFlight() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, Exec("ev.set()", g))
	require.NoError(t, <-done)
	assert.Equal(t, int64(0), inFlight())
}

// A reference Go's collector gave back is released by the next f(), as by
// any entry while no loop runs: the fast path steps aside for the drain.
func TestCallWithoutArgumentsDrains(t *testing.T) {
	f, err := Eval("lambda: None", nil)
	require.NoError(t, err)
	before := readStats()
	for range 5 {
		_, err := New([]int{1, 2, 3})
		require.NoError(t, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for readStats().Collected-before.Collected < 5 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	require.GreaterOrEqual(t, readStats().Collected-before.Collected, int64(5))
	_, err = f.Call()
	require.NoError(t, err)
	s := readStats()
	assert.GreaterOrEqual(t, s.Drained-before.Drained, int64(5))
	assert.Equal(t, int64(0), s.Pending)
}

// Inside an attachment, f() results that Go's collector gives back are
// still released along the way (the nested fast path steps aside for the
// drain, as any entry drains): a long batch does not pile them up.
func TestCallWithoutArgumentsDrainsInsideAnAttachment(t *testing.T) {
	f, err := Eval("lambda: [1, 2, 3]", nil)
	require.NoError(t, err)
	require.NoError(t, Drain())
	before := readStats()
	var pending int64
	require.NoError(t, WithGIL(func() error {
		for i := 1; i <= 200_000; i++ {
			if _, err := f.Call(); err != nil { // dropped: the collector queues it
				return err
			}
			if i%20_000 == 0 {
				// The cleanups run on their own goroutine: on a busy
				// machine a millisecond is not always enough for them.
				deadline := time.Now().Add(5 * time.Second)
				for readStats().Collected-before.Collected < int64(i/2) && time.Now().Before(deadline) {
					runtime.GC()
					time.Sleep(time.Millisecond)
				}
				pending = max(pending, readStats().Pending)
			}
		}
		return nil
	}))
	s := readStats()
	require.Greater(t, s.Collected-before.Collected, int64(100_000), "the collector gave most results back inside the scope")
	// At most what came back since the last call: a collection's worth.
	assert.Less(t, pending, int64(100_000), "released inside the scope, not piled up for its end")
}

func init() {
	// Finalize inside WithoutGIL inside WithGIL is inside a call: it is
	// refused at once (it used to wait for the WithGIL around it).
	childScenarios["finalize-inside-withoutgil"] = func() error {
		if _, err := Eval("1", nil); err != nil {
			return err
		}
		var ferr error
		if err := WithGIL(func() error {
			WithoutGIL(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				ferr = Finalize(ctx)
			})
			return nil
		}); err != nil {
			return err
		}
		if !errors.Is(ferr, ErrInsideCall) {
			return fmt.Errorf("Finalize inside WithoutGIL inside WithGIL: %v, want ErrInsideCall", ferr)
		}
		return Finalize(context.Background())
	}
	// FinalizeContext gives up while a stand-alone f() is in flight (an
	// entry C counted): the error names it; an f() made while Finalize
	// decided waited and then ran.
	childScenarios["finalize-waits-for-f"] = func() error {
		g, err := NewGlobals()
		if err != nil {
			return err
		}
		if err := Exec("import threading\nev = threading.Event()\ndef f(): ev.wait(10)\ndef g(): return 1\n", g); err != nil {
			return err
		}
		f, err := g.Item("f")
		if err != nil {
			return err
		}
		g2, err := g.Item("g")
		if err != nil {
			return err
		}
		waiting := make(chan error, 1)
		go func() { _, err := f.Call(); waiting <- err }()
		for deadline := time.Now().Add(5 * time.Second); lifetime.InFlight() != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("f() never showed as in flight: %d", lifetime.InFlight())
			}
		}
		entered := make(chan error, 1)
		go func() {
			for lifetime.Current() != lifetime.Closing {
				time.Sleep(100 * time.Microsecond)
			}
			_, err := g2.Call()
			entered <- err
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err = Finalize(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 calls in flight") {
			return fmt.Errorf("FinalizeContext: want a deadline error naming 1 call in flight, got %v", err)
		}
		if err := <-entered; err != nil {
			return fmt.Errorf("an f() made while Finalize decided saw %v, though Python stayed", err)
		}
		if err := Exec("ev.set()", g); err != nil {
			return err
		}
		if err := <-waiting; err != nil {
			return err
		}
		if err := Finalize(context.Background()); err != nil {
			return err
		}
		if _, err := g2.Call(); !errors.Is(err, ErrFinalized) {
			return fmt.Errorf("f() after Finalize: %v, want ErrFinalized", err)
		}
		if _, err := g2.CallMethod("__call__"); !errors.Is(err, ErrFinalized) {
			return fmt.Errorf("f.__call__() after Finalize: %v, want ErrFinalized", err)
		}
		return nil
	}
}

func init() {
	// An f() or o.m() that raises: C ends the call's entry when it
	// returns, and the exception is described (its str(), which takes a
	// while here) in an entry of its own, which Finalize waits for. It
	// used to run outside the gate: Finalize went ahead underneath it,
	// and the goroutine was never heard of again.
	childScenarios["finalize-waits-for-a-raising-call"] = func() error {
		var b Block
		g := b.Globals(nil)
		b.Exec(`
import threading, time
described = threading.Event()
class E(Exception):
    def __str__(self):
        described.set()
        time.sleep(0.5)
        return 'slow'
class H:
    def fails(self): raise E()
h = H()
`, g)
		h := b.Item(g, "h")
		f := b.Attr(h, "fails")
		described := b.Item(g, "described")
		if err := b.Err(); err != nil {
			return err
		}
		done := make(chan error, 2)
		go func() { _, err := f.Call(); done <- err }()
		go func() { _, err := h.CallMethod("fails"); done <- err }()
		if !BlockAs[bool](&b, b.CallMethod(described, "wait", 5)) { // lets go of the GIL
			return errors.Join(b.Err(), errors.New("the exceptions were never described"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := Finalize(ctx); err != nil {
			return fmt.Errorf("Finalize: %v", err)
		}
		for range 2 {
			select {
			case err := <-done:
				var pe *Error
				if !errors.As(err, &pe) && !errors.Is(err, ErrFinalized) {
					return fmt.Errorf("a raising call returned %v, want its *Error or ErrFinalized", err)
				}
			case <-time.After(10 * time.Second):
				return errors.New("a raising call never returned after Finalize")
			}
		}
		return nil
	}
}

func TestCallWithoutArgumentsAndFinalize(t *testing.T) {
	for _, name := range []string{"finalize-waits-for-f", "finalize-inside-withoutgil", "finalize-waits-for-a-raising-call"} {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "exit status; stderr:\n%s", errOut)
			assert.Contains(t, out, "ok")
			assert.Empty(t, errOut)
		})
	}
}

// o.m() takes the gate in C too (capi.CallMethod0): a method, a method
// path, a missing method, a method that raises, a closed or nil receiver,
// alone and inside an attachment, answer as the general call does, and
// the entry is counted while it runs.
func TestMethodCallWithoutArguments(t *testing.T) {
	g := globals(t, `
import threading
from types import SimpleNamespace
class H:
    def value(self): return 6 * 7
    def nothing(self): pass
    def yes(self): return True
    def fails(self): raise ValueError('no')
    def waits(self): ev.wait(10)
ev = threading.Event()
h = H()
ns = SimpleNamespace(inner=SimpleNamespace(h=h))
`)
	item := func(name string) *Object {
		o, err := g.Item(name)
		require.NoError(t, err)
		return o
	}
	closed := item("h")
	require.NoError(t, closed.Close())
	h, ns := item("h"), item("ns")
	value := func(t *testing.T, r *Object, err error) {
		require.NoError(t, err)
		v, err := As[int](r)
		require.NoError(t, err)
		assert.Equal(t, 42, v)
	}
	for _, tc := range []struct {
		name, method string
		o            *Object
		check        func(t *testing.T, r *Object, err error)
	}{
		{"value", "value", h, value},
		{"path", "inner.h.value", ns, value},
		{"None", "nothing", h, func(t *testing.T, r *Object, err error) {
			require.NoError(t, err)
			assert.True(t, r.IsNone())
		}},
		{"True", "yes", h, func(t *testing.T, r *Object, err error) {
			require.NoError(t, err)
			v, err := As[bool](r)
			require.NoError(t, err)
			assert.True(t, v)
		}},
		{"raises", "fails", h, func(t *testing.T, r *Object, err error) {
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "ValueError", pe.Type)
			assert.Nil(t, r)
		}},
		{"missing", "missing", h, func(t *testing.T, r *Object, err error) {
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "AttributeError", pe.Type)
		}},
		{"missing in the path", "inner.nope.value", ns, func(t *testing.T, r *Object, err error) {
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "AttributeError", pe.Type)
		}},
		{"closed", "value", closed, func(t *testing.T, r *Object, err error) {
			assert.ErrorIs(t, err, ErrClosed)
			assert.Nil(t, r)
		}},
		{"nil", "value", nil, func(t *testing.T, r *Object, err error) {
			assert.ErrorIs(t, err, ErrNilObject)
		}},
	} {
		t.Run(tc.name+"/alone", func(t *testing.T) {
			r, err := tc.o.CallMethod(tc.method)
			tc.check(t, r, err)
			assert.Equal(t, int64(0), inFlight())
			_, err = h.CallMethod("nothing") // an exception was taken: the next call is clean
			assert.NoError(t, err)
		})
		t.Run(tc.name+"/attached", func(t *testing.T) {
			require.NoError(t, WithGIL(func() error {
				r, err := tc.o.CallMethod(tc.method)
				tc.check(t, r, err)
				assert.Equal(t, int64(1), inFlight(), "the attachment's entry, no more")
				return nil
			}))
			assert.Equal(t, int64(0), inFlight())
		})
	}
	done := make(chan error, 1)
	go func() { _, err := h.CallMethod("waits"); done <- err }()
	require.Eventually(t, func() bool { return inFlight() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, Exec("ev.set()", g))
	require.NoError(t, <-done)
	assert.Equal(t, int64(0), inFlight())
}
