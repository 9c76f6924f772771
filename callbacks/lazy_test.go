package callbacks_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// A handler that takes only GObjects runs without the GIL until it first
// uses Python, and holds it from there to its end, as it would have held
// it all along.
func TestLazyHandlerTakesTheGILOnFirstUse(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	var seen []string
	note := func(what string) { seen = append(seen, fmt.Sprintf("%s: attached %v", what, capi.Attached())) }
	id, err := callbacks.Connect(e, "detailed", func(self *pygi.Object) {
		note("before")
		same, err := eval(t, g, "e").Is(self)
		require.NoError(t, err)
		assert.True(t, same, "the emitter is e's own wrapper")
		note("after its first use")
		pygi.WithoutGIL(func() { note("in WithoutGIL") })
		note("after WithoutGIL")
	})
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('detailed')", g)) // emit lets go of the GIL around the emission
	require.NoError(t, callbacks.Disconnect(e, id))
	assert.Equal(t, []string{
		"before: attached false",
		"after its first use: attached true",
		"in WithoutGIL: attached false",
		"after WithoutGIL: attached true",
	}, seen)
	assert.Zero(t, evalInt(t, g, "len(raised)"), "nothing raised")
}

// Before its first use of Python, a lazy handler may wait for a goroutine
// that uses Python (a handler holding the GIL would wait for ever); the
// goroutine may use the handler's own argument, which is the emitter's
// wrapper, until the handler returns.
func TestLazyHandlerWaitsForAGoroutineUsingPython(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	var kept *pygi.Object
	var fromGoroutine error
	id, err := callbacks.Connect(e, "detailed", func(self *pygi.Object) {
		kept = self
		done := make(chan error, 1)
		go func() {
			r, err := pygi.Eval("6*7", nil)
			if err == nil {
				r.Close()
				_, err = self.Attr("n")
			}
			done <- err
		}()
		select {
		case fromGoroutine = <-done:
		case <-time.After(10 * time.Second):
			fromGoroutine = errors.New("the goroutine did not get the GIL")
		}
	})
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('detailed')", g))
	require.NoError(t, callbacks.Disconnect(e, id))
	assert.NoError(t, fromGoroutine)
	require.NotNil(t, kept)
	_, err = kept.Attr("n")
	assert.ErrorIs(t, err, pygi.ErrClosed, "a lazy argument ends with its handler, as a borrowed one does")
}

// The wrappers a lazy handler's arguments make are released when it
// returns: the emitter's reference count comes back, used or not, and a
// Clone outlives the handler.
func TestLazyHandlerReleasesWhatItMade(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	var clone *pygi.Object
	uses := 0
	id, err := callbacks.Connect(e, "detailed", func(self *pygi.Object) {
		uses++
		if uses%2 == 0 {
			return // unused: nothing is made
		}
		_, err := self.Attr("n")
		require.NoError(t, err)
		if clone == nil {
			clone, err = self.Clone()
			require.NoError(t, err)
		}
	})
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('detailed')", g)) // the clone is made
	base := evalInt(t, g, "sys.getrefcount(e)")
	require.NoError(t, pygi.Exec("for _ in range(200): e.emit('detailed')", g))
	runtime.GC()
	require.NoError(t, pygi.Drain())
	assert.Equal(t, base, evalInt(t, g, "sys.getrefcount(e)"), "no reference kept per emission")
	require.NoError(t, callbacks.Disconnect(e, id))
	require.NotNil(t, clone)
	_, err = clone.Attr("n")
	assert.NoError(t, err, "the clone is the handler's to keep")
	require.NoError(t, clone.Close())
	assert.Equal(t, base-1, evalInt(t, g, "sys.getrefcount(e)"), "the clone's reference went with Close")
}

// Each shape that takes only GObjects runs lazily, its failures printed
// through sys.excepthook as a bare handler's are; an emission whose
// values are not all GObjects runs it holding the GIL, its values
// converted as PyGObject converts them.
func TestLazyHandlerShapes(t *testing.T) {
	g := emitterNS(t)
	require.NoError(t, pygi.Exec(`
class Carrier(GObject.Object):
    __gsignals__ = {
        "carry": (GObject.SignalFlags.RUN_LAST, None, (GObject.Object, GObject.Object)),
    }
c = Carrier()
other = GObject.Object()
`, g))
	c := eval(t, g, "c")
	defer c.Close()
	var got []string
	attached := func(what string) { got = append(got, fmt.Sprintf("%s attached %v", what, capi.Attached())) }
	name := func(o *pygi.Object) string {
		if o == nil {
			return "nil"
		}
		r, err := o.Attr("__class__.__name__")
		if err != nil {
			return err.Error()
		}
		return r.String()
	}
	for _, tc := range []struct {
		name   string
		fn     any
		want   []string
		raised string
	}{
		{"emitter", func(self *pygi.Object) { attached("run"); got = append(got, name(self)) },
			[]string{"run attached false", "Carrier"}, ""},
		{"emitter, error", func(self *pygi.Object) error { attached("run"); return errors.New("no") },
			[]string{"run attached false"}, "GoError: no"},
		{"block and emitter", func(b *pygi.Block, self *pygi.Object) {
			attached("run")
			b.Attr(self, "no_such_thing")
		}, []string{"run attached false"}, "AttributeError"},
		{"block, emitter, object", func(b *pygi.Block, self, o *pygi.Object) {
			attached("run")
			got = append(got, name(self), name(o))
		}, []string{"run attached false", "Carrier", "Object"}, ""},
		{"three objects", func(self, o, none *pygi.Object) error {
			attached("run")
			got = append(got, name(self), name(o), none.String())
			return nil
		}, []string{"run attached false", "Carrier", "Object", "None"}, ""},
		{"a panic", func(self *pygi.Object) { panic("lost") }, nil, "GoPanic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			require.NoError(t, pygi.Exec("raised.clear()", g))
			id, err := callbacks.Connect(c, "carry", tc.fn)
			require.NoError(t, err)
			require.NoError(t, pygi.Exec("c.emit('carry', other, None)", g))
			require.NoError(t, callbacks.Disconnect(c, id))
			assert.Equal(t, tc.want, got)
			raised := eval(t, g, "'; '.join(raised)").String()
			if tc.raised == "" {
				assert.Empty(t, raised)
			} else {
				assert.Contains(t, raised, tc.raised)
			}
		})
	}

	// ping gives an int and a str: the GIL path converts them.
	e := eval(t, g, "e")
	defer e.Close()
	var n, s string
	id, err := callbacks.Connect(e, "ping", func(_, a, b *pygi.Object) {
		attached("ping")
		n, s = a.String(), b.String()
	})
	require.NoError(t, err)
	got = nil
	require.NoError(t, pygi.Exec("e.emit('ping', 7, 'seven')", g))
	require.NoError(t, callbacks.Disconnect(e, id))
	assert.Equal(t, []string{"ping attached true"}, got)
	assert.Equal(t, "7", n)
	assert.Equal(t, "seven", s)
}

// Lazy handlers nest: one emitted from inside another (after and before
// its first use) and from a Python thread, each holding the GIL from its
// own first use; the callback count comes back after.
func TestLazyHandlersNest(t *testing.T) {
	g := emitterNS(t)
	warmUpConnect(t, g)
	base := looptest.Settle(t)
	e := eval(t, g, "e")
	var mu sync.Mutex
	var got []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}
	inner, err := callbacks.Connect(e, "ask", func(self *pygi.Object) {
		note(fmt.Sprint("inner before: ", capi.Attached()))
		_, err := self.Attr("n")
		note(fmt.Sprint("inner after: ", err == nil, capi.Attached()))
	})
	require.NoError(t, err)
	outer, err := callbacks.Connect(e, "detailed", func(self *pygi.Object) {
		_, err := self.CallMethod("emit", "ask", 1) // emit lets go of the GIL
		note(fmt.Sprint("outer after emit: ", err == nil, capi.Attached()))
	})
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('detailed')", g))
	require.NoError(t, pygi.Exec(`
import threading
th = threading.Thread(target=lambda: e.emit('detailed'))
th.start(); th.join()
`, g))
	require.NoError(t, callbacks.Disconnect(e, outer))
	require.NoError(t, callbacks.Disconnect(e, inner))
	once := []string{"inner before: false", "inner after: true true", "outer after emit: true true"}
	assert.Equal(t, append(once, once...), got)
	assert.Zero(t, evalInt(t, g, "len(raised)"), "nothing raised")
	e.Close()
	assert.Equal(t, base, looptest.Settle(t), "every callback freed")
}

// A lazy handler that, before its own first use of Python, emits from C a
// signal whose Python handler calls Go code that enters Python: that
// entry is nested in the Python handler's hold on the GIL, which lets go
// of it when it returns, so it is not the lazy handler's first use; the
// handler's own first use after it is (an entry there used to be taken
// for the hold, and the handler's end let go of a GIL it no longer held:
// SIGSEGV).
func TestLazyHandlerAroundAPythonHandler(t *testing.T) {
	g := emitterNS(t)
	pe, p, err := pongEmitter()
	require.NoError(t, err)
	defer pe.Close()
	inner := 0
	require.NoError(t, g.SetItem("pe", pe))
	require.NoError(t, g.SetItem("cb", func() error {
		inner++
		_, err := pygi.Eval("6*7", nil)
		return err
	}))
	require.NoError(t, pygi.Exec("phid = pe.connect('pong', lambda *a: cb())", g))
	defer func() { require.NoError(t, pygi.Exec("pe.disconnect(phid)", g)) }()
	e := eval(t, g, "e")
	defer e.Close()
	var seen []string
	id, err := callbacks.Connect(e, "detailed", func(self *pygi.Object) {
		_, err := capi.EmitN(p, "pong", 1) // from C: no entry of duet's around it
		require.NoError(t, err)
		seen = append(seen, fmt.Sprint("after the Python handler: ", capi.Attached()))
		_, err = self.Attr("n")
		seen = append(seen, fmt.Sprint("after its first use: ", err == nil, capi.Attached()))
	})
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('detailed'); e.emit('detailed')", g))
	require.NoError(t, callbacks.Disconnect(e, id))
	assert.Equal(t, 2, inner)
	once := []string{"after the Python handler: false", "after its first use: true true"}
	assert.Equal(t, append(once, once...), seen)
	assert.Zero(t, evalInt(t, g, "len(raised)"), "nothing raised")
}

// gobjectPointer is the address of o's GObject, for emitting from C.
func gobjectPointer(t *testing.T, o *pygi.Object) uintptr {
	t.Helper()
	var p unsafe.Pointer
	require.NoError(t, pyobj.Use(o, func(r capi.Ref) (capi.Status, capi.Ref) {
		var st capi.Status
		var exc capi.Ref
		p, _, st, exc = capi.GObjectPointer(r)
		return st, exc
	}))
	return uintptr(p)
}

// within runs f, failing the test if it has not returned in 10 s (a
// deadlock, which would otherwise hang the whole test binary).
func within(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no return in 10 s (deadlock?)", what)
	}
}

// A goroutine given a lazy argument may use it while the handler holds
// the GIL (after its first use of Python, or emitted under a WithGIL), and
// the handler may use it meanwhile too: making the wrapper takes no lock
// across the GIL, and the handler's end lets go of the GIL while a
// goroutine is making it. After the handler the argument is closed.
func TestLazyArgumentOnAGoroutineWhileTheGILIsHeld(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	p := gobjectPointer(t, e)
	for _, tc := range []struct {
		name     string
		firstUse bool // the handler uses Python before the goroutine starts
		useToo   bool // and uses its argument while the goroutine makes it
		underGIL bool // emitted from C inside WithGIL
	}{
		{name: "after its first use", firstUse: true},
		{name: "both use it", firstUse: true, useToo: true},
		{name: "emitted inside WithGIL", underGIL: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used := make(chan error, 1)
			var own error
			id, err := callbacks.Connect(e, "detailed", func(self *pygi.Object) {
				if tc.firstUse {
					r, err := pygi.Eval("1", nil)
					require.NoError(t, err)
					r.Close()
				}
				go func() { _, err := self.Attr("n"); used <- err }()
				time.Sleep(50 * time.Millisecond)
				if tc.useToo {
					_, own = self.Attr("n")
				}
				time.Sleep(100 * time.Millisecond)
			})
			require.NoError(t, err)
			defer func() { require.NoError(t, callbacks.Disconnect(e, id)) }()
			within(t, "the emission", func() error {
				if tc.underGIL {
					return pygi.WithGIL(func() error { _, err := capi.EmitN(p, "detailed", 1); return err })
				}
				return pygi.Exec("e.emit('detailed')", g)
			})
			assert.NoError(t, own)
			select {
			case err := <-used:
				if err != nil {
					assert.ErrorIs(t, err, pygi.ErrClosed, "made after the handler returned")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the goroutine's use never returned")
			}
		})
	}
}

// A lazy handler that, before its first use of Python, emits from C (as
// gotk4 code does) a signal whose Python handler reaches duet with the GIL
// its own (calling Go code that enters Python), or lets go of it around a
// call that enters duet (disconnecting a Go handler, emitting to a Go
// handler that takes an int): none of those entries is the lazy handler's
// hold, which must end with the Python handler (a crash, or a deadlock in
// PyGObject taking back a GIL its own thread held).
func TestLazyHandlerAroundPythonThatEntersDuet(t *testing.T) {
	require.NoError(t, pygi.RequireVersion("GObject", "2.0"))
	for _, mode := range []string{"go", "disconnect", "emit"} {
		t.Run(mode, func(t *testing.T) {
			g := ns(t, `
from gi.repository import GObject
class Two(GObject.Object):
    __gsignals__ = {
        "outer": (GObject.SignalFlags.RUN_LAST, None, ()),
        "inner": (GObject.SignalFlags.RUN_LAST, None, ()),
        "num": (GObject.SignalFlags.RUN_LAST, None, (int,)),
        "spare": (GObject.SignalFlags.RUN_LAST, None, ()),
    }
two = Two()
def on_inner(obj):
    if mode == "go":
        gofn()
    elif mode == "disconnect":
        obj.disconnect(spare_id)
    elif mode == "emit":
        obj.emit("num", 5)
two.connect("inner", on_inner)
`)
			ran := 0
			require.NoError(t, g.SetItem("mode", mode))
			require.NoError(t, g.SetItem("gofn", func() error {
				ran++
				_, err := pygi.Eval("6*7", nil)
				return err
			}))
			two := eval(t, g, "two")
			defer two.Close()
			p := gobjectPointer(t, two)
			spare, err := callbacks.Connect(two, "spare", func() {})
			require.NoError(t, err)
			require.NoError(t, g.SetItem("spare_id", spare))
			num, err := callbacks.Connect(two, "num", func(_ *pygi.Object, n int) { ran += n })
			require.NoError(t, err)
			var seen []string
			outer, err := callbacks.Connect(two, "outer", func(self *pygi.Object) {
				_, err := capi.EmitN(p, "inner", 1)
				require.NoError(t, err)
				seen = append(seen, fmt.Sprint("after the Python handler: ", capi.Attached()))
				pygi.WithoutGIL(func() { seen = append(seen, "WithoutGIL") })
				_, err = self.Attr("__class__")
				seen = append(seen, fmt.Sprint("after its first use: ", err == nil, capi.Attached()))
			})
			require.NoError(t, err)
			within(t, "the emission", func() error { return pygi.Exec("two.emit('outer')", g) })
			assert.Equal(t, []string{"after the Python handler: false", "WithoutGIL", "after its first use: true true"}, seen)
			switch mode {
			case "go":
				assert.Equal(t, 1, ran)
			case "emit":
				assert.Equal(t, 5, ran)
			}
			for _, id := range []uint64{outer, num} {
				require.NoError(t, callbacks.Disconnect(two, id))
			}
			if mode != "disconnect" {
				require.NoError(t, callbacks.Disconnect(two, spare))
			}
		})
	}
}

// Emitted on a Python thread whose code keeps the GIL around the emission
// (a C function called through ctypes.PyDLL), a handler that takes the
// emitter, or nothing, runs attached: WithoutGIL in it lets a goroutine
// use Python.
func TestHandlerEmittedUnderAGILHeldByPython(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	var got []string
	wait := func() {
		pygi.WithoutGIL(func() { got = append(got, fmt.Sprint("goroutine: ", evalOnAGoroutine(5*time.Second))) })
	}
	lazy, err := callbacks.Connect(e, "detailed", func(*pygi.Object) { wait() })
	require.NoError(t, err)
	bare, err := callbacks.Connect(e, "detailed", wait)
	require.NoError(t, err)
	within(t, "the emission", func() error {
		return pygi.Exec(testutil.GPointerPy+`
import ctypes, threading
ptr = addr(e)
lib = ctypes.PyDLL("libgobject-2.0.so.0")  # keeps the GIL during the call
lib.g_signal_emit_by_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
th = threading.Thread(target=lambda: lib.g_signal_emit_by_name(ptr, b"detailed"))
th.start(); th.join()
`, g)
	})
	require.NoError(t, callbacks.Disconnect(e, lazy))
	require.NoError(t, callbacks.Disconnect(e, bare))
	assert.Equal(t, []string{"goroutine: <nil>", "goroutine: <nil>"}, got)
}

// freshThreadNS: a Gio.Cancellable c whose "cancelled" signal is emitted
// by fire() on a brand-new GLib thread (no Python thread state at all),
// joined with the GIL let go.
func freshThreadNS(t *testing.T) *pygi.Object {
	require.NoError(t, pygi.RequireVersion("GObject", "2.0"))
	return ns(t, testutil.GPointerPy+`
import ctypes
from gi.repository import Gio, GObject
c = Gio.Cancellable()
other = Gio.Cancellable()
glib = ctypes.CDLL("libglib-2.0.so.0")
gio = ctypes.CDLL("libgio-2.0.so.0")
glib.g_thread_new.restype = ctypes.c_void_p
glib.g_thread_new.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
glib.g_thread_join.argtypes = [ctypes.c_void_p]
gio.g_cancellable_reset.argtypes = [ctypes.c_void_p]
cancel = ctypes.cast(gio.g_cancellable_cancel, ctypes.c_void_p)
def fire():
    gio.g_cancellable_reset(addr(c))
    th = glib.g_thread_new(b"fresh", cancel, addr(c))
    glib.g_thread_join(th)  # CDLL: the GIL is let go while joining
`)
}

// On a thread with no Python thread state when the lazy handler begins
// (a GLib thread), its first use of Python takes the hold, also after a
// pygi call inside WithoutGIL gave the thread its state (that call is not
// the handler's first use, as WithoutGIL says); the hold was never taken
// then.
func TestLazyHandlerOnAFreshThread(t *testing.T) {
	g := freshThreadNS(t)
	c := eval(t, g, "c")
	defer c.Close()
	for _, pre := range []string{"none", "WithoutGIL"} {
		t.Run(pre, func(t *testing.T) {
			var seen []string
			id, err := callbacks.Connect(c, "cancelled", func(self *pygi.Object) {
				if pre == "WithoutGIL" {
					pygi.WithoutGIL(func() {
						r, err := pygi.Eval("1", nil)
						if err == nil {
							r.Close()
						}
					})
				}
				_, err := self.Attr("__class__")
				seen = append(seen, fmt.Sprint("after first use: ", err == nil, " attached ", capi.Attached()))
			})
			require.NoError(t, err)
			defer callbacks.Disconnect(c, id)
			within(t, "emission", func() error { return pygi.Exec("fire()", g) })
			assert.Equal(t, []string{"after first use: true attached true"}, seen)
		})
	}
}

// The same when a bare handler nested in the lazy one (a signal it emits
// through C) is the first to use Python on the fresh thread.
func TestLazyHandlerOnAFreshThreadAfterANestedBareOne(t *testing.T) {
	g := freshThreadNS(t)
	c := eval(t, g, "c")
	defer c.Close()
	other := eval(t, g, "other")
	defer other.Close()
	op := gobjectPointer(t, other)
	bid, err := callbacks.Connect(other, "cancelled", func() {
		r, err := pygi.Eval("1", nil)
		if err == nil {
			r.Close()
		}
	})
	require.NoError(t, err)
	defer callbacks.Disconnect(other, bid)
	var seen []string
	id, err := callbacks.Connect(c, "cancelled", func(self *pygi.Object) {
		_, err := capi.EmitN(op, "cancelled", 1)
		require.NoError(t, err)
		_, err = self.Attr("__class__")
		seen = append(seen, fmt.Sprint("after first use: ", err == nil, " attached ", capi.Attached()))
	})
	require.NoError(t, err)
	defer callbacks.Disconnect(c, id)
	within(t, "emission", func() error { return pygi.Exec("fire()", g) })
	assert.Equal(t, []string{"after first use: true attached true"}, seen)
}

// evalOnAGoroutine has a goroutine of its own call into Python and waits
// for it, d at most: what a handler that waits for a goroutine using
// Python sees.
func evalOnAGoroutine(d time.Duration) error {
	done := make(chan error, 1)
	go func() {
		r, err := pygi.Eval("6*7", nil)
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("the goroutine did not get the GIL in %v", d)
	}
}
