package pygi

import (
	"errors"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/internal/lifetime"
)

// globals returns a fresh namespace with src executed in it.
func globals(t testing.TB, src string) *Object {
	t.Helper()
	g, err := NewGlobals()
	require.NoError(t, err)
	require.NoError(t, Exec(src, g))
	t.Cleanup(func() { g.Close() })
	return g
}

func evalInt(t testing.TB, g *Object, expr string) int64 {
	t.Helper()
	r, err := Eval(expr, g)
	require.NoError(t, err)
	defer r.Close()
	n, err := As[int64](r)
	require.NoError(t, err)
	return n
}

// refs is sys.getrefcount of the global name in g, as Python sees it.
func refs(t testing.TB, g *Object, name string) int64 {
	t.Helper()
	return evalInt(t, g, "__import__('sys').getrefcount("+name+")")
}

// collectUntil forces Go's GC until cond holds (cleanups run asynchronously),
// then drains the release queue and runs Python's gc.
func collectUntil(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached after GC: %+v", readStats())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, Drain())
	gc, err := Import("gc")
	require.NoError(t, err)
	r, err := gc.CallMethod("collect")
	require.NoError(t, err)
	r.Close()
	gc.Close()
}

func TestRefcounts(t *testing.T) {
	g := globals(t, "x = object()\ndef f(a, b=None): return None\ndef ident(a): return a\nkept = []\ndef keep(a): kept.append(a)\n")
	base := refs(t, g, "x")

	x, err := g.Item("x")
	require.NoError(t, err)
	assert.Equal(t, base+1, refs(t, g, "x"), "wrapping takes exactly one reference")

	f, err := g.Item("f")
	require.NoError(t, err)
	for range 100 {
		r, err := f.Call(x, Kw{"b": x})
		require.NoError(t, err)
		require.True(t, r.IsNone())
	}
	assert.Equal(t, base+1, refs(t, g, "x"), "calling leaves nothing behind")

	ident, err := g.Item("ident")
	require.NoError(t, err)
	same, err := ident.Call(x)
	require.NoError(t, err)
	assert.Equal(t, base+2, refs(t, g, "x"), "a returned object is one more reference")
	is, err := same.Is(x)
	require.NoError(t, err)
	assert.True(t, is)
	require.NoError(t, same.Close())
	require.NoError(t, same.Close(), "Close is idempotent")
	assert.Equal(t, base+1, refs(t, g, "x"), "Close releases exactly once")

	conv, err := New(x)
	require.NoError(t, err)
	assert.Equal(t, base+2, refs(t, g, "x"), "New(*Object) is a new reference to the same object")
	conv.Close()
	lst, err := New([]any{x, x, map[string]any{"k": x}})
	require.NoError(t, err)
	assert.Equal(t, base+4, refs(t, g, "x"), "containers hold their own references")
	lst.Close()
	assert.Equal(t, base+1, refs(t, g, "x"))

	keep, err := g.Item("keep")
	require.NoError(t, err)
	_, err = keep.Call(x)
	require.NoError(t, err)
	assert.Equal(t, base+2, refs(t, g, "x"), "Python keeps its own reference")
	require.NoError(t, Exec("kept.clear()", g))

	// Drop the Go reference without Close: the GC path must release exactly one.
	before := readStats()
	func() {
		y, err := g.Item("x")
		require.NoError(t, err)
		assert.Equal(t, base+2, refs(t, g, "x"))
		_ = y
	}()
	// Other tests' Objects are collected too: wait for this one's reference.
	collectUntil(t, func() bool {
		require.NoError(t, Drain())
		return readStats().Collected > before.Collected && refs(t, g, "x") <= base+1
	})
	assert.Equal(t, base+1, refs(t, g, "x"), "a dropped Object is released by the queue")

	x.Close()
	assert.Equal(t, base, refs(t, g, "x"))
	runtime.KeepAlive(f)
}

func TestRefcountsFromPythonSide(t *testing.T) {
	// An object created in Python and only held by Go lives exactly as long
	// as the Go reference.
	g := globals(t, "import weakref\nclass C: pass\nalive = []\ndef make():\n    c = C()\n    alive.append(weakref.ref(c))\n    return c\n")
	mk, err := g.Item("make")
	require.NoError(t, err)
	c, err := mk.Call()
	require.NoError(t, err)
	assert.Equal(t, int64(1), evalInt(t, g, "sum(1 for r in alive if r() is not None)"))
	n, err := c.RefCount()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "Go holds the only reference")
	c.Close()
	assert.Equal(t, int64(0), evalInt(t, g, "sum(1 for r in alive if r() is not None)"))

	before := readStats()
	func() {
		_, err := mk.Call()
		require.NoError(t, err)
	}()
	collectUntil(t, func() bool {
		require.NoError(t, Drain())
		return readStats().Collected > before.Collected && evalInt(t, g, "sum(1 for r in alive if r() is not None)") == 0
	})
	assert.Equal(t, int64(0), evalInt(t, g, "sum(1 for r in alive if r() is not None)"))
}

func TestClosedAndNil(t *testing.T) {
	o, err := New([]any{1, 2})
	require.NoError(t, err)
	require.NoError(t, o.Close())
	_, err = o.Attr("append")
	assert.ErrorIs(t, err, ErrClosed)
	_, err = o.Len()
	assert.ErrorIs(t, err, ErrClosed)
	_, err = New([]any{o})
	assert.ErrorIs(t, err, ErrClosed, "a closed argument is refused")
	f, err := Eval("len", nil)
	require.NoError(t, err)
	_, err = f.Call(o)
	assert.ErrorIs(t, err, ErrClosed)

	var nilObj *Object
	_, err = nilObj.Attr("x")
	assert.ErrorIs(t, err, ErrNilObject)
	assert.NoError(t, nilObj.Close())
	assert.True(t, nilObj.Closed())

	None().Close()
	assert.True(t, None().IsNone(), "closing None is a no-op")
}

func TestObjectOperations(t *testing.T) {
	g := globals(t, `
class P:
    """a point"""
    def __init__(self, x=0, y=0):
        self.x, self.y = x, y
    def norm2(self, scale=1):
        return (self.x * self.x + self.y * self.y) * scale
    def __repr__(self):
        return "P(%r, %r)" % (self.x, self.y)
`)
	P, err := g.Item("P")
	require.NoError(t, err)
	p, err := P.Call(3, Kw{"y": 4})
	require.NoError(t, err)

	n, err := p.CallMethod("norm2", Kw{"scale": 2})
	require.NoError(t, err)
	v, err := As[int64](n)
	require.NoError(t, err)
	assert.Equal(t, int64(50), v)

	ok, err := p.HasAttr("x")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, p.SetAttr("z", "zed"))
	z, err := p.Attr("z")
	require.NoError(t, err)
	s, err := As[string](z)
	require.NoError(t, err)
	assert.Equal(t, "zed", s)
	require.NoError(t, p.DelAttr("z"))
	ok, err = p.HasAttr("z")
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = p.Attr("z")
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "AttributeError", pe.Type)
	assert.ErrorAs(t, p.DelAttr("z"), &pe)

	r, err := p.Repr()
	require.NoError(t, err)
	assert.Equal(t, "P(3, 4)", r)
	assert.Equal(t, "P(3, 4)", p.String())
	tn, err := p.TypeName()
	require.NoError(t, err)
	assert.Equal(t, "P", tn)
	doc, err := P.Attr("__doc__")
	require.NoError(t, err)
	assert.Equal(t, "a point", doc.String())

	_, err = p.Call()
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "TypeError", pe.Type)
	_, err = P.Call(1, Kw{"x": 2})
	require.ErrorAs(t, err, &pe, "x given twice")
	_, err = P.Call(Kw{"x": 1}, 2)
	assert.Error(t, err, "positional after keyword is refused in Go")
	_, err = P.Call(Kw{"x": 1}, Kw{"x": 2})
	assert.Error(t, err, "repeated keyword is refused")

	d, err := New(map[string]any{"a": 1})
	require.NoError(t, err)
	require.NoError(t, d.SetItem("b", []int{1, 2}))
	l, err := d.Len()
	require.NoError(t, err)
	assert.Equal(t, 2, l)
	b, err := d.Item("b")
	require.NoError(t, err)
	bs, err := As[[]int](b)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, bs)
	require.NoError(t, d.DelItem("a"))
	_, err = d.Item("a")
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Matches("KeyError"))
	assert.True(t, pe.Matches("LookupError"))
	assert.False(t, pe.Matches("ValueError"))

	var keys []string
	for k, err := range d.Iter() {
		require.NoError(t, err)
		keys = append(keys, k.String())
	}
	assert.Equal(t, []string{"b"}, keys)
	lst, err := Eval("[None, 1, None]", nil)
	require.NoError(t, err)
	count := 0
	for item, err := range lst.Iter() {
		require.NoError(t, err)
		count++
		_ = item
	}
	assert.Equal(t, 3, count, "None items do not end the iteration")
	for _, err := range P.Iter() {
		assert.Error(t, err, "a class is not iterable")
	}

	truth, err := lst.Truthy()
	require.NoError(t, err)
	assert.True(t, truth)
	inst, err := p.IsInstance(P)
	require.NoError(t, err)
	assert.True(t, inst)
	assert.False(t, p.IsNone())
	assert.True(t, None().IsNone())
	nv, err := Eval("None", nil)
	require.NoError(t, err)
	assert.True(t, nv.IsNone())
}

func TestEvalExec(t *testing.T) {
	g, err := NewGlobals()
	require.NoError(t, err)
	require.NoError(t, Exec("a = 20\nb = a + 1", g))
	assert.Equal(t, int64(42), evalInt(t, g, "a + b + 1"))

	err = Exec("def broken(:\n  pass", g)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "SyntaxError", pe.Type)
	assert.Contains(t, pe.Traceback, "SyntaxError")

	err = ExecFile("def inner():\n    raise ValueError('deep trouble')\ndef outer():\n    inner()\nouter()\n", "widget.py", g)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ValueError", pe.Type)
	assert.Equal(t, "deep trouble", pe.Message)
	assert.Equal(t, "ValueError: deep trouble", pe.Error())
	assert.Contains(t, pe.Traceback, "Traceback (most recent call last)")
	assert.Contains(t, pe.Traceback, `File "widget.py", line 2, in inner`)
	assert.Contains(t, pe.Traceback, "in outer")
	require.NotNil(t, pe.Value)
	args, err := pe.Value.Attr("args")
	require.NoError(t, err)
	assert.Equal(t, "('deep trouble',)", args.String())

	_, err = Eval("1/0", nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ZeroDivisionError", pe.Type)
	assert.True(t, pe.Matches("ArithmeticError"))

	err = Exec("class E(Exception):\n    def __str__(self): raise RuntimeError('no')\nraise E()", g)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "E", pe.Type)
	assert.Contains(t, pe.Message, "unprintable")

	err = Exec("x = 1\x00", g)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ValueError", pe.Type)

	notDict, err := New([]any{})
	require.NoError(t, err)
	assert.Error(t, Exec("x = 1", notDict))
}

func TestImportAndGI(t *testing.T) {
	_, err := Import("no_such_module_duet")
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ModuleNotFoundError", pe.Type)

	require.NoError(t, RequireVersion("GLib", "2.0"))
	glib, err := Import("gi.repository.GLib")
	require.NoError(t, err)
	maj, err := glib.Attr("MAJOR_VERSION")
	require.NoError(t, err)
	n, err := As[int64](maj)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)

	err = RequireVersion("GLib", "99.0")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ValueError", pe.Type)
}

func TestNoGIExplainsItself(t *testing.T) {
	// Simulate a missing PyGObject by blocking the import, then restore it.
	giModule.mu.Lock()
	saved := giModule.obj
	giModule.obj = nil
	giModule.mu.Unlock()
	g := globals(t, "import sys\nsaved = sys.modules.get('gi')\nsys.modules['gi'] = None\n")
	defer func() {
		require.NoError(t, Exec("sys.modules['gi'] = saved", g))
		giModule.mu.Lock()
		giModule.obj = saved
		giModule.mu.Unlock()
	}()
	_, err := Import("gi.repository.Gtk")
	require.ErrorIs(t, err, ErrNoGI)
	msg := err.Error()
	assert.Contains(t, msg, "python3-gi")
	assert.Contains(t, msg, "sys.path")
	assert.Contains(t, msg, "Python 3.")
}

func TestDoAndWithoutGIL(t *testing.T) {
	var total int64
	err := WithGIL(func() error {
		f, err := Eval("lambda a, b: a * b", nil)
		if err != nil {
			return err
		}
		for i := range 100 {
			r, err := f.Call(i, 2)
			if err != nil {
				return err
			}
			n, err := As[int64](r)
			if err != nil {
				return err
			}
			total += n
			r.Close()
		}
		// Another goroutine needs Python while this one waits for it.
		done := make(chan error)
		go func() {
			_, err := Eval("1 + 1", nil)
			done <- err
		}()
		var gerr error
		WithoutGIL(func() { gerr = <-done })
		return gerr
	})
	require.NoError(t, err)
	assert.Equal(t, int64(9900), total)

	sentinel := errors.New("stop")
	assert.ErrorIs(t, WithGIL(func() error { return sentinel }), sentinel)
	WithoutGIL(func() {}) // outside an attachment it just runs
}

func TestStatsCount(t *testing.T) {
	before := readStats()
	objs := make([]*Object, 10)
	for i := range objs {
		o, err := New(i * 1000)
		require.NoError(t, err)
		objs[i] = o
	}
	mid := readStats()
	assert.Equal(t, int64(10), mid.Created-before.Created)
	for _, o := range objs[:5] {
		o.Close()
	}
	assert.Equal(t, int64(5), readStats().Closed-before.Closed)
	objs = nil
	collectUntil(t, func() bool { return readStats().Collected-before.Collected >= 5 })
	s := readStats()
	assert.GreaterOrEqual(t, s.Drained-before.Drained, int64(5))
	assert.Equal(t, int64(0), s.Pending)
}

func TestMainThreadAlsoCalls(t *testing.T) {
	var got []string
	runOnMainThread(func() {
		require.True(t, lifetime.IsMain())
		o, err := Eval("sorted(['b', 'a'])", nil)
		require.NoError(t, err)
		got, err = As[[]string](o)
		require.NoError(t, err)
	})
	sort.Strings(got)
	assert.Equal(t, []string{"a", "b"}, got)
}
