package callbacks_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// emitterNS defines a GObject with signals of several shapes and swaps
// sys.excepthook for one that records what handlers raise (the native
// closure prints them through it, as PyGObject's does).
func emitterNS(t *testing.T) *pygi.Object {
	t.Helper()
	require.NoError(t, pygi.RequireVersion("GObject", "2.0"))
	g := ns(t, `
import sys
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {
        "ping": (GObject.SignalFlags.RUN_LAST, None, (int, str)),
        "ask": (GObject.SignalFlags.RUN_LAST, bool, (int,)),
        "count": (GObject.SignalFlags.RUN_LAST, int, (int,)),
        "detailed": (GObject.SignalFlags.RUN_LAST | GObject.SignalFlags.DETAILED, None, ()),
    }
    n = GObject.Property(type=int)
e = Emitter()
raised = []
_hook = sys.excepthook
sys.excepthook = lambda t, v, tb: raised.append(f"{t.__name__}: {v}")
def restore():
    sys.excepthook = _hook
`)
	t.Cleanup(func() {
		assert.NoError(t, pygi.Exec("restore()", g))
	})
	return g
}

// warmUpConnect connects a handler and disconnects it, before a test
// counts callbacks: the first connection in the process makes the two
// callables every later one shares (duet_connect_native and
// duet_record_connection), which live as long as the process.
func warmUpConnect(t *testing.T, g *pygi.Object) {
	t.Helper()
	e := eval(t, g, "e")
	defer e.Close()
	id, err := callbacks.Connect(e, "ping", func() {})
	require.NoError(t, err)
	require.NoError(t, callbacks.Disconnect(e, id))
}

func TestConnectNativeArguments(t *testing.T) {
	g := emitterNS(t)
	e, err := g.Item("e")
	require.NoError(t, err)
	defer e.Close()

	var got []any
	tests := []struct {
		name string
		fn   any
		want []any
	}{
		{"no arguments", func() { got = append(got, "called") }, []any{"called"}},
		{"the emitter", func(self *pygi.Object) {
			same, err := pygi.Eval("e", g)
			require.NoError(t, err)
			is, err := same.Is(self)
			require.NoError(t, err)
			got = append(got, is)
		}, []any{true}},
		{"emitter and first argument", func(_ *pygi.Object, n int) { got = append(got, n) }, []any{7}},
		{"all", func(_ *pygi.Object, n int, s string) { got = append(got, n, s) }, []any{7, "seven"}},
		{"variadic takes all", func(args ...*pygi.Object) { got = append(got, len(args)) }, []any{3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			id, err := callbacks.Connect(e, "ping", tc.fn)
			require.NoError(t, err)
			require.NotZero(t, id)
			r, err := e.CallMethod("emit", "ping", 7, "seven")
			require.NoError(t, err)
			r.Close()
			r, err = e.CallMethod("disconnect", id)
			require.NoError(t, err)
			r.Close()
			assert.Equal(t, tc.want, got)
			assert.Empty(t, evalInt(t, g, "len(raised)"), "nothing raised")
		})
	}
}

func TestConnectNativeReturnsAndRaises(t *testing.T) {
	g := emitterNS(t)
	e, err := g.Item("e")
	require.NoError(t, err)
	defer e.Close()
	emit := func(signal string, args ...any) *pygi.Object {
		t.Helper()
		r, err := e.CallMethod("emit", append([]any{signal}, args...)...)
		require.NoError(t, err)
		return r
	}
	disconnect := func(id uint64) {
		r, err := e.CallMethod("disconnect", id)
		require.NoError(t, err)
		r.Close()
	}

	id, err := callbacks.Connect(e, "ask", func(_ *pygi.Object, n int) bool { return n > 2 })
	require.NoError(t, err)
	yes, _ := pygi.As[bool](emit("ask", 3))
	no, _ := pygi.As[bool](emit("ask", 1))
	assert.True(t, yes)
	assert.False(t, no)
	disconnect(id)

	id, err = callbacks.Connect(e, "count", func(_ *pygi.Object, n int) int { return n * 2 })
	require.NoError(t, err)
	n, err := pygi.As[int64](emit("count", 21))
	require.NoError(t, err)
	assert.Equal(t, int64(42), n)
	disconnect(id)

	// A handler that returns nothing where a bool is due gives False, as a
	// Python handler returning None does under PyGObject.
	id, err = callbacks.Connect(e, "ask", func() {})
	require.NoError(t, err)
	no, _ = pygi.As[bool](emit("ask", 9))
	assert.False(t, no)
	disconnect(id)

	// What a handler raises (an error, a panic, a wrong return type, more
	// parameters than the signal gives) is printed through sys.excepthook
	// and the emission goes on, as with PyGObject's closures.
	failing := []struct {
		name   string
		signal string
		fn     any
		want   string
	}{
		{"error", "ping", func() error { return errors.New("boom") }, "boom"},
		{"panic", "ping", func() { panic("oops") }, "oops"},
		{"wrong return type", "count", func() string { return "x" }, "TypeError"},
		{"too many parameters", "ping", func(_ *pygi.Object, _ int, _ string, _ int) {}, "takes 4 positional arguments but the signal gives 3"},
	}
	for _, tc := range failing {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, pygi.Exec("raised.clear()", g))
			after := false
			id, err := callbacks.Connect(e, tc.signal, tc.fn)
			require.NoError(t, err)
			id2, err := callbacks.ConnectAfter(e, tc.signal, func() { after = true })
			require.NoError(t, err)
			if tc.signal == "ping" {
				emit("ping", 1, "x").Close()
			} else {
				emit(tc.signal, 1).Close()
			}
			disconnect(id)
			disconnect(id2)
			assert.True(t, after, "the emission went on")
			raised, _ := pygi.As[string](eval(t, g, "'\\n'.join(raised)"))
			assert.Contains(t, raised, tc.want)
		})
	}
}

func TestConnectNativeErrors(t *testing.T) {
	g := emitterNS(t)
	e, err := g.Item("e")
	require.NoError(t, err)

	_, err = callbacks.Connect(e, "no-such-signal", func() {})
	var pe *pygi.Error
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Matches("TypeError"))
	assert.Contains(t, err.Error(), "unknown signal name: no-such-signal")

	notGObject := eval(t, g, "object()")
	_, err = callbacks.Connect(notGObject, "ping", func() {})
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "not a GObject")

	_, err = callbacks.Connect(e, "ping", func(chan int) {})
	assert.Error(t, err, "a function that cannot be adapted")

	e.Close()
	_, err = callbacks.Connect(e, "ping", func() {})
	assert.ErrorIs(t, err, pygi.ErrClosed)

	// Details and property notifications go through GLib's own parser.
	e2, err := g.Item("e")
	require.NoError(t, err)
	defer e2.Close()
	notified := 0
	id, err := callbacks.Connect(e2, "notify::n", func() { notified++ })
	require.NoError(t, err)
	require.NoError(t, e2.SetAttr("n", 5))
	require.NoError(t, e2.SetAttr("n", 6))
	assert.Equal(t, 2, notified)
	r, err := e2.CallMethod("disconnect", id)
	require.NoError(t, err)
	r.Close()
}

// The connection owns the callback: Go lets go at once, the handler lives
// while it is connected, and disconnecting or finalising the object frees
// it (counted once both collectors have settled).
func TestConnectNativeLifetime(t *testing.T) {
	g := emitterNS(t)
	warmUpConnect(t, g)
	connect := func(t *testing.T, expr string, fn any) uint64 {
		o := eval(t, g, expr)
		defer o.Close()
		id, err := callbacks.Connect(o, "ping", fn)
		require.NoError(t, err)
		return id
	}

	t.Run("disconnect frees it", func(t *testing.T) {
		base := looptest.Settle(t)
		calls := 0
		id := connect(t, "e", func(_ *pygi.Object, n int) { calls += n })
		assert.Equal(t, base+1, looptest.Settle(t), "the connection holds it")
		require.NoError(t, pygi.Exec("e.emit('ping', 2, '')", g))
		assert.Equal(t, 2, calls)
		r, err := eval(t, g, "e").CallMethod("disconnect", id)
		require.NoError(t, err)
		r.Close()
		assert.Equal(t, base, looptest.Settle(t), "disconnected, it is freed")
	})

	t.Run("the object's finalisation frees it", func(t *testing.T) {
		base := looptest.Settle(t)
		calls := 0
		require.NoError(t, pygi.Exec("tmp = Emitter()", g))
		connect(t, "tmp", func(_ *pygi.Object, n int) { calls += n })
		assert.Equal(t, base+1, looptest.Settle(t), "the connection holds it")
		require.NoError(t, pygi.Exec("tmp.emit('ping', 3, ''); del tmp", g))
		assert.Equal(t, 3, calls)
		assert.Equal(t, base, looptest.Settle(t), "finalised with its object")
	})

	// The connection takes its own reference and Close on the Go side does
	// not free it.
	t.Run("a callback already made is shared, not copied", func(t *testing.T) {
		base := looptest.Settle(t)
		calls := 0
		cb, err := callbacks.New(func() { calls++ })
		require.NoError(t, err)
		id := connect(t, "e", cb)
		cb.Close()
		assert.Equal(t, base+1, looptest.Settle(t), "the connection holds it")
		require.NoError(t, pygi.Exec("e.emit('ping', 0, '')", g))
		assert.Equal(t, 1, calls)
		r, err := eval(t, g, "e").CallMethod("disconnect", id)
		require.NoError(t, err)
		r.Close()
		assert.Equal(t, base, looptest.Settle(t), "disconnected, it is freed")
	})
}

func TestDisconnect(t *testing.T) {
	g := emitterNS(t)
	warmUpConnect(t, g)
	base := looptest.Settle(t)
	e, err := g.Item("e")
	require.NoError(t, err)
	calls := 0
	id, err := callbacks.Connect(e, "ping", func() { calls++ })
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('ping', 0, '')", g))
	require.NoError(t, callbacks.Disconnect(e, id))
	require.NoError(t, pygi.Exec("e.emit('ping', 0, '')", g))
	assert.Equal(t, 1, calls, "not called once disconnected")
	assert.Equal(t, base, looptest.Settle(t), "disconnecting freed it")

	assert.ErrorIs(t, callbacks.Disconnect(e, id), callbacks.ErrNotConnected, "twice")
	assert.ErrorIs(t, callbacks.Disconnect(e, 0), callbacks.ErrNotConnected)
	assert.ErrorIs(t, callbacks.Disconnect(e, 1<<40), callbacks.ErrNotConnected)

	// Python's own handlers too: Disconnect is GLib's, not only Go's.
	pyID, err := pygi.As[uint64](eval(t, g, "e.connect('ping', lambda *a: None)"))
	require.NoError(t, err)
	require.NoError(t, callbacks.Disconnect(e, pyID))
	still, err := eval(t, g, "e.handler_is_connected("+fmt.Sprint(pyID)+")").Truthy()
	require.NoError(t, err)
	assert.False(t, still)

	var pe *pygi.Error
	require.ErrorAs(t, callbacks.Disconnect(eval(t, g, "[]"), 1), &pe)
	assert.True(t, pe.Matches("TypeError"))
	e.Close()
	assert.ErrorIs(t, callbacks.Disconnect(e, 1), pygi.ErrClosed)
}

// A Go func is made into its callable and connected in one crossing; when
// the connect fails, the callable is freed at once (the counts return).
func TestConnectFailureFreesTheCallback(t *testing.T) {
	g := emitterNS(t)
	warmUpConnect(t, g)
	base := looptest.Settle(t)
	e, err := g.Item("e")
	require.NoError(t, err)
	defer e.Close()
	before := forensics.ReadStats().Callbacks
	for range 100 {
		_, err := callbacks.Connect(e, "nope", func() {})
		require.Error(t, err)
		_, err = callbacks.Connect(eval(t, g, "object()"), "ping", func() {})
		require.Error(t, err)
	}
	after := forensics.ReadStats().Callbacks
	assert.Equal(t, after.Created-before.Created, after.Freed-before.Freed, "every callback made was freed")
	assert.Equal(t, int64(base), after.Live, "at once, with no collection")

	// A Python callable that is not a Go callback is refused, not wrapped.
	_, err = callbacks.Connect(e, "ping", eval(t, g, "len"))
	assert.ErrorContains(t, err, "not a Go callback")
}

// A handler that takes nothing from the signal runs without the GIL, as a
// gotk4 handler does: Python threads go on while it runs. It waits for a
// Python thread to make progress; under the GIL that thread could not, and
// the handler would give up after its deadline.
func TestBareHandlerLetsPythonRun(t *testing.T) {
	g := emitterNS(t)
	var ticks atomic.Int64
	require.NoError(t, g.SetItem("tick", func() { ticks.Add(1) }))
	require.NoError(t, pygi.Exec(`
import threading, time
stop = threading.Event()
def ticker():
    while not stop.is_set():
        tick()
        time.sleep(0.001)
ticking = threading.Thread(target=ticker)
ticking.start()
`, g))
	defer func() { require.NoError(t, pygi.Exec("stop.set(); ticking.join()", g)) }()
	e := eval(t, g, "e")
	defer e.Close()
	progressed := map[string]bool{}
	wait := func(name string) func() {
		return func() {
			from := ticks.Load()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				if ticks.Load() >= from+3 {
					progressed[name] = true
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	id, err := callbacks.Connect(e, "ping", wait("func()"))
	require.NoError(t, err)
	id2, err := callbacks.Connect(e, "ping", func() error { wait("func() error")(); return nil })
	require.NoError(t, err)
	// PyGObject's emit lets go of the GIL around the emission.
	require.NoError(t, pygi.Exec("e.emit('ping', 0, '')", g))
	require.NoError(t, callbacks.Disconnect(e, id))
	require.NoError(t, callbacks.Disconnect(e, id2))
	assert.Equal(t, map[string]bool{"func()": true, "func() error": true}, progressed)
}

// A bare handler that disconnects itself, its callback freed while it
// runs: the emission goes on to the next handler, and the count of live
// callbacks comes back.
func TestBareHandlerDisconnectsItself(t *testing.T) {
	g := emitterNS(t)
	warmUpConnect(t, g)
	base := looptest.Settle(t)
	e := eval(t, g, "e")
	defer e.Close()
	var id uint64
	calls, after := 0, 0
	var err error
	//duet:cycle-ok the handler disconnects itself, which ends the cycle
	id, err = callbacks.Connect(e, "ping", func() {
		calls++
		require.NoError(t, callbacks.Disconnect(e, id))
		runtime.GC()
	})
	require.NoError(t, err)
	id2, err := callbacks.ConnectAfter(e, "ping", func() { after++ })
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('ping', 0, ''); e.emit('ping', 0, '')", g))
	assert.Equal(t, 1, calls, "disconnected after its first run")
	assert.Equal(t, 2, after, "the emissions went on")
	require.NoError(t, callbacks.Disconnect(e, id2))
	assert.Equal(t, base, looptest.Settle(t), "both freed")
	assert.Zero(t, evalInt(t, g, "len(raised)"), "nothing raised")
}

// Python code that Go called lets go of the GIL around an emission (emit,
// a property set, a wrapper's dealloc): a bare handler runs there outside
// the entry around it, so that pygi sees no GIL held: WithoutGIL in the
// handler (the documented way to block) works, and so do calls into
// Python, their failures included.
func TestBareHandlerInsideAnEntry(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	var ran []string
	id, err := callbacks.Connect(e, "ping", func() {
		pygi.WithoutGIL(func() { ran = append(ran, "without the GIL") })
		if _, err := pygi.Eval("1/0", nil); err != nil {
			ran = append(ran, "raised")
		}
		n, err := pygi.As[int](eval(t, g, "6*7"))
		require.NoError(t, err)
		ran = append(ran, fmt.Sprint(n))
	})
	require.NoError(t, err)
	require.NoError(t, pygi.Exec("e.emit('ping', 0, '')", g))
	require.NoError(t, pygi.Exec("e.n = 1", g)) // no handler on notify: the entry itself still works
	require.NoError(t, callbacks.Disconnect(e, id))
	assert.Equal(t, []string{"without the GIL", "raised", "42"}, ran)
	assert.Zero(t, evalInt(t, g, "len(raised)"), "nothing raised out of the handler")
}

// A bare handler that fails leaves a boolean signal's value as the
// handlers before it set it (PyGObject's closure does the same for a
// Python handler that raises); one that returns gives False, None's value.
func TestBareHandlerOnABooleanSignal(t *testing.T) {
	g := emitterNS(t)
	e := eval(t, g, "e")
	defer e.Close()
	require.NoError(t, pygi.Exec("hid = e.connect('ask', lambda *a: True)", g))
	defer func() { require.NoError(t, pygi.Exec("e.disconnect(hid)", g)) }()
	for _, tc := range []struct {
		name string
		fn   any
		want string
	}{
		{"an error", func() error { return errors.New("no answer") }, "True"},
		{"a panic", func() { panic("no answer") }, "True"},
		{"nothing", func() {}, "False"},
		{"a nil error", func() error { return nil }, "False"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := callbacks.ConnectAfter(e, "ask", tc.fn)
			require.NoError(t, err)
			defer func() { require.NoError(t, callbacks.Disconnect(e, id)) }()
			assert.Equal(t, tc.want, eval(t, g, "e.emit('ask', 1)").String())
		})
	}
}

// f() called by a Go callback that a Python thread runs is counted in the
// gate while it runs, as any call there: the gate does not count the
// callback's Python caller, so Finalize must see the call itself.
func TestACallInsideACallbackIsCounted(t *testing.T) {
	g := ns(t, "import threading\nev = threading.Event()\ndef wait(): ev.wait(10)\n")
	wait, err := g.Item("wait")
	require.NoError(t, err)
	cb, err := callbacks.New(func() error { _, err := wait.Call(); return err }, callbacks.Name("waits"))
	require.NoError(t, err)
	require.NoError(t, g.SetItem("cb", cb))
	require.NoError(t, pygi.Exec("th = threading.Thread(target=cb)\nth.start()\n", g))
	require.Eventually(t, func() bool { return lifetime.InFlight() == 1 }, 5*time.Second, time.Millisecond,
		"the call inside the callback is in flight")
	require.NoError(t, pygi.Exec("ev.set()\nth.join()\n", g))
	assert.Eventually(t, func() bool { return lifetime.InFlight() == 0 }, 5*time.Second, time.Millisecond)
}
