package pygi

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkCallTrivial: Go calls a Python function that returns None, GIL
// acquisition and release included.
func BenchmarkCallTrivial(b *testing.B) {
	f, err := Eval("lambda: None", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Call(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallTrivialWithGIL: the same call, many of them inside one
// attachment (make bench's batched-call row).
func BenchmarkCallTrivialWithGIL(b *testing.B) {
	f, err := Eval("lambda: None", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	require.NoError(b, WithGIL(func() error {
		for b.Loop() {
			if _, err := f.Call(); err != nil {
				return err
			}
		}
		return nil
	}))
}

// The calls that make bench times allocate nothing on the Go side: f() and
// f(1, k=True) builds no map of its own.
func TestTrivialCallsDoNotAllocate(t *testing.T) {
	if sanitized {
		t.Skip("AddressSanitizer's build allocates on its own; the -race pass counts")
	}
	f, err := Eval("lambda *a, **k: None", nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		call func() (*Object, error)
		max  float64
	}{
		{"f()", func() (*Object, error) { return f.Call() }, 0},
		// The caller's own Kw map and argument slice, and (under the race
		// detector's escape analysis) one more.
		{"f(1, k=True)", func() (*Object, error) { return f.Call(1, Kw{"k": true}) }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := tc.call(); err != nil {
					t.Fatal(err)
				}
			})
			assert.LessOrEqual(t, allocs, tc.max)
		})
	}
}

// BenchmarkCallAfterLongList: f("x") after a list of 30 000 strings went
// through the pooled encoders once. It costs what BenchmarkCallOneArg does:
// the encoders' values hold no Go pointers, so cgo's pointer check does
// not walk the array the long list grew (it did, 113 µs a call).
func BenchmarkCallAfterLongList(b *testing.B) {
	f, err := Eval("lambda x: x", nil)
	require.NoError(b, err)
	long := make([]string, 30000)
	for i := range long {
		long[i] = "item"
	}
	for range 4 { // into every pooled encoder
		l, err := New(long)
		require.NoError(b, err)
		l.Close()
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := f.Call("x")
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkCallOneArg: one int argument and an int result (a new Object).
func BenchmarkCallOneArg(b *testing.B) {
	f, err := Eval("lambda x: x", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		r, err := f.Call(12345)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkCallThreeAndKeyword: make bench's f(1, 'two', 3.0, k=True), a
// Go loop, the result None.
func BenchmarkCallThreeAndKeyword(b *testing.B) {
	f, err := Eval("lambda a, b, c, k=False: None", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Call(1, "two", 3.0, Kw{"k": true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallFromPython: the same trivial call made by Python itself, for
// comparison (timeit's per-call figure, reported as ns/op).
func BenchmarkCallFromPython(b *testing.B) {
	g := globals(b, "import time\nf = lambda: None\ndef loop(n):\n    t = time.perf_counter_ns()\n    for _ in range(n): f()\n    return time.perf_counter_ns() - t\n")
	loop, err := g.Item("loop")
	require.NoError(b, err)
	b.ResetTimer()
	r, err := loop.Call(b.N)
	require.NoError(b, err)
	ns, err := As[int64](r)
	require.NoError(b, err)
	b.StopTimer()
	b.ReportMetric(float64(ns)/float64(b.N), "py-ns/call")
}

func BenchmarkAttrGet(b *testing.B) {
	g := globals(b, "class C:\n    x = 1\nc = C()\n")
	c, err := g.Item("c")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Attr("x")
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

func BenchmarkListToPython1000(b *testing.B) {
	in := make([]int, 1000)
	for i := range in {
		in[i] = i
	}
	b.ReportAllocs()
	for b.Loop() {
		o, err := New(in)
		if err != nil {
			b.Fatal(err)
		}
		o.Close()
	}
}

func BenchmarkListFromPython1000(b *testing.B) {
	o, err := Eval("list(range(1000))", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := As[[]int](o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParallelCalls(b *testing.B) {
	f, err := Eval("lambda: None", nil)
	require.NoError(b, err)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.Call(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkResultLeftToGC and BenchmarkResultClosed: a call returning an
// object, its Object dropped for Go's collector to release, or closed. The
// difference is what the cleanup every result registers costs when it
// runs (the scroll rows of make bench make five such results per row).
func BenchmarkResultLeftToGC(b *testing.B) {
	f, err := Eval("lambda: ()", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Call(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	require.NoError(b, Drain())
}

func BenchmarkResultClosed(b *testing.B) {
	f, err := Eval("lambda: ()", nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		r, err := f.Call()
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkGIMethodCalls: PyGObject method calls on a Gtk.Label from Go
// (inside one WithGIL, results left to Go's collector) against the same
// calls in a Python loop, timed inside Python: what a Go handler that
// drives Python widgets pays over the Python code it replaces, call by
// call. Run under a display (xvfb-run).
func BenchmarkGIMethodCalls(b *testing.B) {
	require.NoError(b, RequireVersion("Gtk", "4.0"))
	g, err := NewGlobals()
	require.NoError(b, err)
	require.NoError(b, Exec(`
import time
from gi.repository import Gtk
l = Gtk.Label(label="hello")
def loop(n, what):
    t = time.perf_counter_ns()
    if what == 0:
        for _ in range(n): l.get_label()
    elif what == 1:
        for _ in range(n): l.set_label("x")
    else:
        for _ in range(n): l.get_parent()
    return time.perf_counter_ns() - t
`, g))
	l, err := g.Item("l")
	require.NoError(b, err)
	loop, err := g.Item("loop")
	require.NoError(b, err)
	calls := []struct {
		name string
		call func() (*Object, error)
	}{
		{"get_label", func() (*Object, error) { return l.CallMethod("get_label") }},      // a str result: an Object
		{"set_label", func() (*Object, error) { return l.CallMethod("set_label", "x") }}, // an argument, None back
		{"get_parent", func() (*Object, error) { return l.CallMethod("get_parent") }},    // nothing either way
	}
	for i, c := range calls {
		b.Run("Go/"+c.name, func(b *testing.B) {
			require.NoError(b, WithGIL(func() error {
				for b.Loop() {
					if _, err := c.call(); err != nil {
						return err
					}
				}
				return nil
			}))
		})
		b.Run("Python/"+c.name, func(b *testing.B) {
			r, err := loop.Call(b.N, i)
			require.NoError(b, err)
			ns, err := As[int64](r)
			require.NoError(b, err)
			b.ReportMetric(float64(ns)/float64(b.N), "ns/op")
		})
	}
}
