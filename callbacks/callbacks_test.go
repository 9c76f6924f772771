package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

func TestMain(m *testing.M) {
	if name := os.Getenv("CALLBACKS_CHILD"); name != "" {
		os.Exit(childMain(name))
	}
	if err := pygi.Init(pygi.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if n := capi.LeakedExceptions(); n > 0 {
		fmt.Fprintf(os.Stderr, "%d entries left a Python exception set\n", n)
		code = 1
	}
	if err := pygi.Finalize(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "Finalize:", err)
		code = 1
	}
	os.Exit(code)
}

func ns(t testing.TB, src string) *pygi.Object {
	t.Helper()
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	require.NoError(t, pygi.Exec(src, g))
	t.Cleanup(func() { g.Close() })
	return g
}

func eval(t testing.TB, g *pygi.Object, expr string) *pygi.Object {
	t.Helper()
	r, err := pygi.Eval(expr, g)
	require.NoError(t, err)
	return r
}

func evalInt(t testing.TB, g *pygi.Object, expr string) int64 {
	t.Helper()
	n, err := pygi.As[int64](eval(t, g, expr))
	require.NoError(t, err)
	return n
}

func TestHeldByPythonOutlivesGo(t *testing.T) {
	base := looptest.Settle(t)
	g := ns(t, "held = None\ndef keep(f):\n    global held\n    held = f\n")
	calls := atomic.Int64{}
	func() {
		cb, err := callbacks.New(func(a, b int) int { calls.Add(1); return a*10 + b })
		require.NoError(t, err)
		keep, err := g.Item("keep")
		require.NoError(t, err)
		_, err = keep.Call(cb)
		require.NoError(t, err)
		cb.Close() // Go lets go entirely
	}()
	assert.Equal(t, base+1, looptest.Settle(t), "Python still holds it")
	assert.Equal(t, int64(42), evalInt(t, g, "held(4, 2)"))
	assert.Equal(t, int64(1), calls.Load())

	require.NoError(t, pygi.Exec("held = None", g))
	assert.Equal(t, base, looptest.Settle(t), "every callback was freed")
}

func TestHeldBySignalOutlivesGo(t *testing.T) {
	base := looptest.Settle(t)
	require.NoError(t, pygi.RequireVersion("GObject", "2.0"))
	g := ns(t, `
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"ping": (GObject.SignalFlags.RUN_LAST, int, (int,))}
e = Emitter()
`)
	e, err := g.Item("e")
	require.NoError(t, err)
	func() {
		// The callback is created here and not kept by Go: exactly the
		// seed's Awaker pattern.
		r, err := e.CallMethod("connect", "ping", func(self *pygi.Object, n int) int { return n + 1 })
		require.NoError(t, err)
		r.Close()
	}()
	assert.Equal(t, base+1, looptest.Settle(t), "the signal holds it")
	for i := range 100 {
		r, err := e.CallMethod("emit", "ping", i)
		require.NoError(t, err)
		n, err := pygi.As[int64](r)
		require.NoError(t, err)
		require.Equal(t, int64(i+1), n)
		if i%10 == 0 {
			require.NoError(t, eventloop.Collect())
		}
	}
	e.Close()
	require.NoError(t, pygi.Exec("del e", g))
	assert.Equal(t, base, looptest.Settle(t), "every callback was freed")
}

func TestAutoWrappedFunc(t *testing.T) {
	base := looptest.Settle(t)
	g := ns(t, "registry = {}\n")
	reg, err := g.Item("registry")
	require.NoError(t, err)
	require.NoError(t, reg.SetItem("upper", strings.ToUpper))
	require.NoError(t, g.SetItem("twice", func(s string) string { return s + s }))
	lst, err := pygi.New([]any{func() string { return "in a list" }})
	require.NoError(t, err)
	require.NoError(t, g.SetItem("lst", lst))
	lst.Close()
	assert.Equal(t, base+3, looptest.Settle(t))
	r := eval(t, g, "registry['upper']('go') + twice('py') + lst[0]()")
	s, err := pygi.As[string](r)
	require.NoError(t, err)
	assert.Equal(t, "GOpypyin a list", s)

	// A func Python does not keep is freed as soon as the call is over.
	apply := eval(t, g, "lambda f, x: f(x)")
	out, err := apply.Call(func(x int) int { return -x }, 5)
	require.NoError(t, err)
	n, err := pygi.As[int64](out)
	require.NoError(t, err)
	assert.Equal(t, int64(-5), n)
	assert.Equal(t, int64(base+3), forensics.ReadStats().Callbacks.Live, "the temporary was freed at once")

	require.NoError(t, pygi.Exec("registry.clear(); del twice, lst", g))
	assert.Equal(t, base, looptest.Settle(t), "every callback was freed")
}

func TestFreedByCycleCollector(t *testing.T) {
	base := looptest.Settle(t)
	g := ns(t, "import gc\ngc.disable()\n")
	defer pygi.Exec("gc.enable()", g)
	cb, err := callbacks.New(func() {})
	require.NoError(t, err)
	require.NoError(t, g.SetItem("cb", cb))
	cb.Close()
	require.NoError(t, pygi.Exec("a = [cb]\na.append(a)\ndel a, cb\n", g))
	runtime.GC()
	require.NoError(t, pygi.Drain())
	assert.Equal(t, int64(base+1), forensics.ReadStats().Callbacks.Live, "only a reference cycle holds it now")
	require.NoError(t, pygi.Exec("gc.collect()", g))
	assert.Equal(t, int64(base), forensics.ReadStats().Callbacks.Live, "gc.collect() freed it")
}

func TestCalledFromPythonThread(t *testing.T) {
	g := ns(t, "import threading\nresults = []\n")
	var goroutineSaw atomic.Int64
	require.NoError(t, g.SetItem("cb", func(i int) int { goroutineSaw.Add(1); return i * i }))
	require.NoError(t, pygi.Exec(`
def work(i):
    results.append(cb(i))
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
`, g))
	assert.Equal(t, int64(8), goroutineSaw.Load())
	assert.Equal(t, int64(140), evalInt(t, g, "sum(results)"))
}

func TestReentrant(t *testing.T) {
	g := ns(t, "def py_outer(go_cb, n):\n    return go_cb(n) + 1\ndef py_inner(n):\n    return n * 2\n")
	inner, err := g.Item("py_inner")
	require.NoError(t, err)
	outer, err := g.Item("py_outer")
	require.NoError(t, err)
	var depth func(n int) (int, error)
	depth = func(n int) (int, error) {
		// Go -> Python -> Go -> Python, recursively.
		if n == 0 {
			r, err := inner.Call(21)
			if err != nil {
				return 0, err
			}
			v, err := pygi.As[int64](r)
			return int(v), err
		}
		r, err := outer.Call(depth, n-1)
		if err != nil {
			return 0, err
		}
		v, err := pygi.As[int64](r)
		return int(v), err
	}
	got, err := depth(5)
	require.NoError(t, err)
	assert.Equal(t, 42+5, got)
}

var errSentinel = errors.New("sentinel from Go")

func TestErrorsAndPanics(t *testing.T) {
	type weird struct{ A, B int }
	cases := []struct {
		name     string
		fn       any
		pyType   string
		isBase   bool // derives from BaseException only
		contains string
		check    func(t *testing.T, err error)
	}{
		{"returned error", func() error { return fmt.Errorf("wrapped: %w", errSentinel) },
			"duet_callbacks.GoError", false, "wrapped: sentinel from Go",
			func(t *testing.T, err error) { assert.ErrorIs(t, err, errSentinel) }},
		{"value and error", func(x int) (int, error) { return 0, errSentinel },
			"duet_callbacks.GoError", false, "sentinel", nil},
		{"panic string", func() { panic("boom") }, "duet_callbacks.GoPanic", true, "boom",
			func(t *testing.T, err error) {
				var pe *pygi.PanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "boom", pe.Value)
				assert.Contains(t, pe.Stack, "callbacks_test.go")
			}},
		{"panic error", func() { panic(errSentinel) }, "duet_callbacks.GoPanic", true, "sentinel",
			func(t *testing.T, err error) { assert.ErrorIs(t, err, errSentinel) }},
		{"panic int", func() { panic(7) }, "duet_callbacks.GoPanic", true, "7",
			func(t *testing.T, err error) {
				var pe *pygi.PanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, 7, pe.Value)
			}},
		{"panic struct", func() { panic(weird{1, 2}) }, "duet_callbacks.GoPanic", true, "{1 2}", nil},
		//lint:ignore SA5000 the runtime panic is the point
		{"nil map write", func() { var m map[string]int; m["x"] = 1 }, "duet_callbacks.GoPanic", true, "nil map", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := looptest.Settle(t)
			objBase := forensics.ReadStats().Objects.Live
			g := ns(t, `
def probe(f, *args):
    try:
        f(*args)
    except Exception as e:
        return "Exception", type(e).__module__ + "." + type(e).__name__, str(e)
    except BaseException as e:
        return "BaseException", type(e).__module__ + "." + type(e).__name__, str(e)
    return "none", "", ""
def call(f, *args):
    return f(*args)
`)
			probe, err := g.Item("probe")
			require.NoError(t, err)
			var args []any
			if _, ok := tc.fn.(func(int) (int, error)); ok {
				args = []any{1}
			}
			r, err := probe.Call(append([]any{tc.fn}, args...)...)
			require.NoError(t, err)
			got, err := pygi.As[[]string](r)
			require.NoError(t, err)
			want := "Exception"
			if tc.isBase {
				want = "BaseException"
			}
			assert.Equal(t, want, got[0], "caught by the right except clause")
			assert.Equal(t, tc.pyType, got[1])
			assert.Contains(t, got[2], tc.contains)

			// The same exception, propagated back out to Go.
			call, err := g.Item("call")
			require.NoError(t, err)
			_, err = call.Call(append([]any{tc.fn}, args...)...)
			var pe *pygi.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.pyType, pe.Type)
			if tc.check != nil {
				tc.check(t, err)
			}
			probe.Close()
			call.Close()
			pe.Value.Close()
			r.Close()
			assert.Equal(t, base, looptest.Settle(t), "every callback was freed")
			assert.LessOrEqual(t, forensics.ReadStats().Objects.Live, objBase+4, "no Python objects leak")
		})
	}
}

func TestArityAndTypes(t *testing.T) {
	base := looptest.Settle(t)
	g := ns(t, `
def probe(f, *args, **kw):
    try:
        f(*args, **kw)
    except TypeError as e:
        return "TypeError: " + str(e)
    except BaseException as e:
        return type(e).__name__ + ": " + str(e)
    return "ok"
`)
	probe, err := g.Item("probe")
	require.NoError(t, err)
	add, err := callbacks.New(func(a int, b string) {}, callbacks.Name("add"))
	require.NoError(t, err)
	small, err := callbacks.New(func(x int8) {}, callbacks.Name("small"))
	require.NoError(t, err)
	noArgs, err := callbacks.New(func() {}, callbacks.Name("nothing"))
	require.NoError(t, err)
	variadic, err := callbacks.New(func(first int, rest ...string) {}, callbacks.Name("many"))
	require.NoError(t, err)
	bad, err := callbacks.New(func() chan int { return make(chan int) }, callbacks.Name("badResult"))
	require.Error(t, err, "an unconvertible result type is refused at creation")
	assert.Nil(t, bad)

	cases := []struct {
		args []any
		want string
	}{
		{[]any{add, 1}, "TypeError: add() takes 2 positional arguments but 1 were given"},
		{[]any{add, 1, "x", 3}, "TypeError: add() takes 2 positional arguments but 3 were given"},
		{[]any{add, "x", "y"}, "TypeError: add() argument 1: pygi: cannot convert Python str to Go int: wrong type"},
		{[]any{add, 1, 2}, "TypeError: add() argument 2: pygi: cannot convert Python int to Go string: wrong type"},
		{[]any{small, 300}, "TypeError: small() argument 1: pygi: cannot convert Python int to Go int8: 300 does not fit"},
		{[]any{noArgs, 1}, "TypeError: nothing() takes 0 positional arguments but 1 were given"},
		{[]any{noArgs, pygi.Kw{"x": 1}}, "TypeError: nothing() got an unexpected keyword argument 'x'"},
		{[]any{add, 1, "b", pygi.Kw{"extra": 1}}, "TypeError: add() got an unexpected keyword argument 'extra'"},
		{[]any{variadic}, "TypeError: many() takes at least 1 positional argument but 0 were given"},
		{[]any{variadic, 1, "a", 2}, "TypeError: many() argument 3: pygi: cannot convert Python int to Go string: wrong type"},
		{[]any{variadic, 1, "a", "b"}, "ok"},
	}
	for _, tc := range cases {
		r, err := probe.Call(tc.args...)
		require.NoError(t, err)
		s, err := pygi.As[string](r)
		require.NoError(t, err)
		assert.Equal(t, tc.want, s)
	}
	for _, o := range []*pygi.Object{add, small, noArgs, variadic, probe} {
		o.Close()
	}
	assert.Equal(t, base, looptest.Settle(t), "every callback was freed")
}

func TestSignatures(t *testing.T) {
	g := ns(t, "")
	call := func(fn any, expr string) *pygi.Object {
		t.Helper()
		require.NoError(t, g.SetItem("f", fn))
		return eval(t, g, expr)
	}
	// Keyword arguments through pygi.Kw.
	r := call(func(a int, kw pygi.Kw) string { return fmt.Sprintf("%v %v %v", a, kw["x"], kw["y"]) }, "f(1, x='X', y=[1])")
	s, _ := pygi.As[string](r)
	assert.Equal(t, "1 X [1]", s)
	// Kw before a variadic tail.
	r = call(func(kw pygi.Kw, rest ...int) int { return len(kw) + len(rest) }, "f(1, 2, 3, a=1)")
	n, _ := pygi.As[int64](r)
	assert.Equal(t, int64(4), n)
	// Value and nil error.
	r = call(func(x []int) ([]int, error) { return append(x, 4), nil }, "f([1, 2, 3])")
	ints, err := pygi.As[[]int](r)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, ints)
	// Maps, nested, any.
	r = call(func(m map[string][]float64, x any) map[string]any {
		return map[string]any{"n": len(m["a"]), "x": x}
	}, "f({'a': [1.0, 2.5]}, None)")
	m, err := pygi.As[map[string]any](r)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": int64(2), "x": nil}, m)
	// *pygi.Object in and out: identity is kept.
	r = call(func(o *pygi.Object) *pygi.Object { return o }, "(lambda x: f(x) is x)(object())")
	b, _ := pygi.As[bool](r)
	assert.True(t, b)
	// Variadic objects fast path.
	r = call(func(objs ...*pygi.Object) int { return len(objs) }, "f(1, 'a', None)")
	n, _ = pygi.As[int64](r)
	assert.Equal(t, int64(3), n, "func(...*Object) int takes the general path")
	var got int
	r = call(func(objs ...*pygi.Object) { got = len(objs) }, "f(1, 'a', None)")
	assert.True(t, r.IsNone())
	assert.Equal(t, 3, got)

	for _, bad := range []any{
		func(ch chan int) {},
		func() (int, int) { return 0, 0 },
		func() (int, error, error) { return 0, nil, nil },
		func(kw pygi.Kw, x int) {},
		func(s struct{ X int }) {},
		42,
		nil,
		(func())(nil),
	} {
		_, err := callbacks.New(bad)
		assert.Error(t, err, "%T", bad)
	}
}

func TestIntrospection(t *testing.T) {
	cb, err := callbacks.New(func(a int, b string, kw pygi.Kw) {}, callbacks.Name("on_click"),
		callbacks.Doc("Handle a click."), callbacks.Params("button", "label"))
	require.NoError(t, err)
	g := ns(t, "import inspect\n")
	require.NoError(t, g.SetItem("cb", cb))
	for expr, want := range map[string]string{
		"cb.__name__":                "on_click",
		"cb.__doc__":                 "Handle a click.",
		"cb.__text_signature__":      "(button, label, /, **kwargs)",
		"str(inspect.signature(cb))": "(button, label, /, **kwargs)",
		"cb.__qualname__":            "PyCapsule.on_click",
		"type(cb).__name__":          "builtin_function_or_method",
		"type(cb.__self__).__name__": "PyCapsule",
		"cb.__module__":              "github.com/duet-gtk/duet/callbacks_test",
		"callable(cb)":               "True",
		"cb.__name__.isidentifier()": "True",
		"repr(cb).startswith('<built-in method on_click')": "True",
	} {
		r := eval(t, g, "str("+expr+")")
		s, err := pygi.As[string](r)
		require.NoError(t, err)
		assert.Equal(t, want, s, expr)
	}
	// Default names come from the Go function.
	named, err := callbacks.New(strings.ToUpper)
	require.NoError(t, err)
	require.NoError(t, g.SetItem("named", named))
	s, _ := pygi.As[string](eval(t, g, "named.__name__"))
	assert.Equal(t, "ToUpper", s)
	closure, err := callbacks.New(func() {})
	require.NoError(t, err)
	require.NoError(t, g.SetItem("closure", closure))
	s, _ = pygi.As[string](eval(t, g, "closure.__name__"))
	assert.Equal(t, "TestIntrospection_func2", s)
}

func TestMethodBinding(t *testing.T) {
	g := ns(t, "class Counter:\n    def __init__(self): self.n = 10\n")
	bump, err := callbacks.NewMethod(func(self *pygi.Object, by int) (int, error) {
		n, err := self.Attr("n")
		if err != nil {
			return 0, err
		}
		v, err := pygi.As[int64](n)
		if err != nil {
			return 0, err
		}
		return int(v) + by, self.SetAttr("n", int(v)+by)
	}, callbacks.Name("bump"))
	require.NoError(t, err)
	cls, err := g.Item("Counter")
	require.NoError(t, err)
	require.NoError(t, cls.SetAttr("bump", bump))
	assert.Equal(t, int64(15), evalInt(t, g, "Counter().bump(5)"))
	assert.Equal(t, int64(12), evalInt(t, g, "(lambda c: (c.bump(1), c.bump(1))[1])(Counter())"))
	sig, _ := pygi.As[string](eval(t, g, "str(__import__('inspect').signature(Counter().bump))"))
	assert.Equal(t, "(arg1, /)", sig, "the bound method hides self")
}

func TestBorrowedArgumentAfterReturn(t *testing.T) {
	g := ns(t, "")
	var kept *pygi.Object
	require.NoError(t, g.SetItem("f", func(o *pygi.Object) { kept = o }))
	require.NoError(t, pygi.Exec("f([1, 2, 3])", g))
	require.NotNil(t, kept)
	_, err := kept.Len()
	assert.ErrorIs(t, err, pygi.ErrClosed, "a borrowed argument kept past the call reads as closed")

	var cloned *pygi.Object
	require.NoError(t, g.SetItem("f", func(o *pygi.Object) error {
		var err error
		cloned, err = o.Clone()
		return err
	}))
	require.NoError(t, pygi.Exec("f([1, 2, 3])", g))
	n, err := cloned.Len()
	require.NoError(t, err)
	assert.Equal(t, 3, n, "a clone is the Go code's own reference")
}

func TestCountersAndCreateFree(t *testing.T) {
	before := forensics.ReadStats().Callbacks
	for range 1000 {
		cb, err := callbacks.New(func() {})
		require.NoError(t, err)
		cb.Close() // the only reference: freed right now
	}
	after := forensics.ReadStats().Callbacks
	assert.Equal(t, int64(1000), after.Created-before.Created)
	assert.Equal(t, int64(1000), after.Freed-before.Freed)
	assert.Equal(t, before.Live, after.Live)
}

func TestGoroutinesCallWhileCallbacksRun(t *testing.T) {
	g := ns(t, "import threading\n")
	slow, err := callbacks.New(func() {
		// Blocks on Go work with the GIL released, so goroutines proceed.
		pygi.WithoutGIL(func() { time.Sleep(50 * time.Millisecond) })
	})
	require.NoError(t, err)
	require.NoError(t, g.SetItem("slow", slow))
	done := make(chan error, 4)
	go func() { done <- pygi.Exec("slow()", g) }()
	for range 3 {
		go func() {
			_, err := pygi.Eval("sum(range(100))", nil)
			done <- err
		}()
	}
	for range 4 {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("deadlock")
		}
	}
}

// A handler written as a block: its first error is raised as if returned.
func TestBlockParameter(t *testing.T) {
	g := ns(t, "def run(f, x):\n    try:\n        return f(x)\n    except Exception as e:\n        return 'raised: %s' % e\n")
	run, err := g.Item("run")
	require.NoError(t, err)
	ok := func(b *pygi.Block, x *pygi.Object) string { return pygi.BlockAs[string](b, b.CallMethod(x, "upper")) }
	r, err := run.Call(ok, "abc")
	require.NoError(t, err)
	s, _ := pygi.As[string](r)
	assert.Equal(t, "ABC", s)
	bad := func(b *pygi.Block, x *pygi.Object) { b.CallMethod(x, "no_such_method") }
	r, err = run.Call(bad, "abc")
	require.NoError(t, err)
	s, _ = pygi.As[string](r)
	assert.Contains(t, s, "raised: str.no_such_method()")
	_, err = callbacks.New(func(x *pygi.Object, b *pygi.Block) {})
	assert.ErrorContains(t, err, "must come first")

	// The shapes with a fast path (a block and one or two objects) behave
	// as the reflective path does: the block's error is raised, a panic
	// too, and a wrong number of arguments is a TypeError.
	g2 := ns(t, "def run(f, *a):\n    try:\n        return f(*a)\n    except BaseException as e:\n        return 'raised: %s: %s' % (type(e).__name__, e)\n")
	var got []string
	block1 := func(b *pygi.Block, x *pygi.Object) {
		got = append(got, pygi.BlockAs[string](b, b.CallMethod(x, "upper")))
	}
	block2 := func(b *pygi.Block, x, y *pygi.Object) {
		got = append(got, pygi.BlockAs[string](b, b.CallMethod(x, "join", pygi.BlockAs[[]string](b, y))))
	}
	for _, tc := range []struct {
		name string
		code string
		want string
		got  []string
	}{
		{"one object", "run(block1, 'abc')", "None", []string{"ABC"}},
		{"two objects", "run(block2, '-', ['a', 'b'])", "None", []string{"a-b"}},
		{"the block's error", "run(block1, 1)", "raised: GoError: int.upper(): AttributeError", []string{""}},
		{"a panic", "run(block2, 1, 2)", "raised: GoPanic", nil},
		{"too few", "run(block2, 'x')", "raised: TypeError: block2() takes 2 positional arguments but 1 were given", nil},
		{"too many", "run(block1, 'x', 'y')", "raised: TypeError: block1() takes 1 positional argument but 2 were given", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			fns := map[string]any{
				"block1": block1,
				"block2": func(b *pygi.Block, x, y *pygi.Object) {
					if _, err := pygi.As[string](x); err != nil {
						panic("not a string")
					}
					block2(b, x, y)
				},
			}
			for name, fn := range fns {
				cb, err := callbacks.New(fn, callbacks.Name(name))
				require.NoError(t, err)
				require.NoError(t, g2.SetItem(name, cb))
				cb.Close()
			}
			assert.Contains(t, eval(t, g2, "str("+tc.code+")").String(), tc.want)
			assert.Equal(t, tc.got, got)
		})
	}
}

// Callbacks of one func type with different names, docs and modules, made
// alternately and from several goroutines at once, each get their own doc
// (the shape caches the doc it built last).
func TestDocsOfOneShapeStayApart(t *testing.T) {
	type want struct{ name, doc, sig string }
	mk := func(i int) (*pygi.Object, want) {
		fn := func(a, b int) int { return a + b }
		switch i % 4 {
		case 0:
			cb, err := callbacks.New(fn, callbacks.Name("plus"), callbacks.Doc("Adds."))
			require.NoError(t, err)
			return cb, want{"plus", "Adds.", "(arg0, arg1, /)"}
		case 1:
			cb, err := callbacks.New(fn, callbacks.Name("plus"), callbacks.Doc("Adds again."), callbacks.Params("x", "y"))
			require.NoError(t, err)
			return cb, want{"plus", "Adds again.", "(x, y, /)"}
		case 2:
			cb, err := callbacks.New(fn, callbacks.Name("sum2"), callbacks.Module("m"), callbacks.Doc("Sums."))
			require.NoError(t, err)
			return cb, want{"sum2", "Sums.", "(arg0, arg1, /)"}
		default:
			cb, err := callbacks.NewMethod(fn, callbacks.Name("plus"), callbacks.Doc("Adds."))
			require.NoError(t, err)
			return cb, want{"plus", "Adds.", "(self, arg1, /)"}
		}
	}
	check := func(cb *pygi.Object, w want) error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		defer g.Close()
		if err := g.SetItem("f", cb); err != nil {
			return err
		}
		r, err := pygi.Eval("'|'.join((f.__name__, f.__doc__, f.__text_signature__))", g)
		if err != nil {
			return err
		}
		got, err := pygi.As[string](r)
		if err != nil {
			return err
		}
		if exp := w.name + "|" + w.doc + "|" + w.sig; got != exp {
			return fmt.Errorf("got %q, want %q", got, exp)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				cb, w := mk(g + i)
				err := check(cb, w)
				cb.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}
