package callbacks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// loopNs has Python call f n times and returns the nanoseconds per call, so
// that the figure is Python->Go alone, without Go->Python overhead.
const loopSrc = `
import time
def loop(f, n):
    t = time.perf_counter_ns()
    for _ in range(n):
        f()
    return time.perf_counter_ns() - t
def loop_raising(f, n):
    t = time.perf_counter_ns()
    for _ in range(n):
        try:
            f()
        except Exception:
            pass
    return time.perf_counter_ns() - t
def loop1(f, n, a):
    t = time.perf_counter_ns()
    for _ in range(n):
        f(a)
    return time.perf_counter_ns() - t
`

func pyLoop(b *testing.B, fn any, arg ...any) { pyLoopNamed(b, "", fn, arg...) }

func pyLoopNamed(b *testing.B, name string, fn any, arg ...any) {
	g := ns(b, loopSrc)
	switch {
	case name != "":
	case len(arg) > 0:
		name = "loop1"
	default:
		name = "loop"
	}
	loop, err := g.Item(name)
	require.NoError(b, err)
	b.ResetTimer()
	r, err := loop.Call(append([]any{fn, b.N}, arg...)...)
	require.NoError(b, err)
	b.StopTimer()
	total, err := pygi.As[int64](r)
	require.NoError(b, err)
	b.ReportMetric(float64(total)/float64(b.N), "ns/call")
}

// BenchmarkPythonCallsGoNoop: Python calling a Go func() in a loop.
func BenchmarkPythonCallsGoNoop(b *testing.B) {
	cb, err := callbacks.New(func() {})
	require.NoError(b, err)
	pyLoop(b, cb)
}

// BenchmarkPythonCallsPythonNoop: the same loop calling a Python lambda.
func BenchmarkPythonCallsPythonNoop(b *testing.B) {
	f, err := pygi.Eval("lambda: None", nil)
	require.NoError(b, err)
	pyLoop(b, f)
}

// BenchmarkPythonCallsGoError: a Go func returning an error, which
// becomes a GoError (duet_callbacks) that Python catches.
func BenchmarkPythonCallsGoError(b *testing.B) {
	cb, err := callbacks.New(func() error { return errSentinel })
	require.NoError(b, err)
	pyLoopNamed(b, "loop_raising", cb)
}

// BenchmarkPythonCallsGoObjectArg: one argument received as *pygi.Object.
func BenchmarkPythonCallsGoObjectArg(b *testing.B) {
	cb, err := callbacks.New(func(o *pygi.Object) {})
	require.NoError(b, err)
	pyLoop(b, cb, "x")
}

// BenchmarkPythonCallsGoIntArg: one argument converted to int, int result.
func BenchmarkPythonCallsGoIntArg(b *testing.B) {
	cb, err := callbacks.New(func(x int) int { return x + 1 })
	require.NoError(b, err)
	pyLoop(b, cb, 41)
}

// BenchmarkCreateFree: make a callback and drop its only reference.
func BenchmarkCreateFree(b *testing.B) {
	fn := func() {}
	b.ReportAllocs()
	for b.Loop() {
		cb, err := callbacks.New(fn)
		if err != nil {
			b.Fatal(err)
		}
		cb.Close()
	}
}

// BenchmarkConnectDisconnect: a Go handler connected to a GObject's signal
// and disconnected again (which frees its callback): make bench's "create
// + connect + disconnect + free" row, here to profile.
func BenchmarkConnectDisconnect(b *testing.B) {
	obj, err := pygi.Eval("__import__('gi.repository.GObject', fromlist=['GObject']).Object()", nil)
	require.NoError(b, err)
	defer obj.Close()
	fn := func(*pygi.Object) {}
	b.ReportAllocs()
	for b.Loop() {
		id, err := callbacks.Connect(obj, "notify", fn)
		if err != nil {
			b.Fatal(err)
		}
		if err := callbacks.Disconnect(obj, id); err != nil {
			b.Fatal(err)
		}
	}
}

// emitLoopSrc emits a signal from a Python loop, as make bench's "signal
// emission by a Python loop" row does on a Gtk.Button: cancelled, whose
// default handler is C, as clicked's is.
const emitLoopSrc = `
import time
from gi.repository import Gio, GObject
e = Gio.Cancellable()  # its connect and disconnect are GIO's: GObject's are called by name
def emit_loop(n):
    emit = e.emit
    t = time.perf_counter_ns()
    for _ in range(n):
        emit("cancelled")
    return time.perf_counter_ns() - t
`

// BenchmarkEmitFromPython: a Python loop emits a signal to one handler: a
// Go func taking the emitter (using it or not: a method returning a bool,
// or a str), a Go func taking nothing
// (bare), a Python lambda (using the emitter or not), or none (the floor). Here to profile make bench's row.
func BenchmarkEmitFromPython(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   any
	}{
		{"GoObject", func(*pygi.Object) {}},
		{"GoObjectUsed", func(e *pygi.Object) {
			if r, err := e.CallMethod("is_cancelled"); err == nil {
				r.Close()
			}
		}},
		{"GoObjectUsedStr", func(e *pygi.Object) { // a method returning a str: an Object
			if r, err := e.CallMethod("__repr__"); err == nil {
				r.Close()
			}
		}},
		{"GoBare", func() {}},
		{"LambdaUsed", nil},
		{"Lambda", nil},
		{"None", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := ns(b, emitLoopSrc)
			e, err := g.Item("e")
			require.NoError(b, err)
			var id uint64
			switch {
			case c.fn != nil:
				id, err = callbacks.Connect(e, "cancelled", c.fn)
			case c.name == "Lambda" || c.name == "LambdaUsed":
				src := "GObject.Object.connect(e, 'cancelled', lambda e: None)"
				if c.name == "LambdaUsed" {
					src = "GObject.Object.connect(e, 'cancelled', lambda e: e.is_cancelled())"
				}
				var r *pygi.Object
				r, err = pygi.Eval(src, g)
				if err == nil {
					id, err = pygi.As[uint64](r)
				}
			}
			require.NoError(b, err)
			loop, err := g.Item("emit_loop")
			require.NoError(b, err)
			b.ResetTimer()
			r, err := loop.Call(b.N)
			require.NoError(b, err)
			b.StopTimer()
			total, err := pygi.As[int64](r)
			require.NoError(b, err)
			b.ReportMetric(float64(total)/float64(b.N), "ns/emit")
			if id != 0 {
				require.NoError(b, callbacks.Disconnect(e, id))
			}
		})
	}
}
