package widgets_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// These tests run duet's reload (internal/reload; app.Options.Reload turns
// it on in an app, see app's tests) on modules loaded with widgets'
// loaders: a file is saved, the watcher sees it, the UI thread applies it.
// They wait for what they look for by polling it, with a deadline, and
// never time anything.

// syncBuffer is the watcher's Out: written from its goroutine and the UI
// thread.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// reloading is one test's module on disk, loaded, watched.
type reloading struct {
	t    *testing.T
	path string
	mod  *widgets.Module
	out  *syncBuffer
	w    *reload.Watcher

	mu      sync.Mutex
	results []reload.Result
	seen    []time.Time // when each result reached the observer
}

// watchModule writes src to a file called file in a temporary directory,
// loads it with LoadFile and starts a watcher (closed when the test ends).
func watchModule(t *testing.T, file, src string) *reloading {
	t.Helper()
	r := &reloading{t: t, path: filepath.Join(t.TempDir(), file), out: &syncBuffer{}}
	require.NoError(t, os.WriteFile(r.path, []byte(src), 0o644))
	looptest.Do(t, func(t testing.TB) {
		var err error
		r.mod, err = widgets.LoadFile(r.path)
		require.NoError(t, err)
	})
	stop := reload.Observe(func(res reload.Result) {
		if res.Path == r.path {
			r.mu.Lock()
			r.results = append(r.results, res)
			r.seen = append(r.seen, time.Now())
			r.mu.Unlock()
		}
	})
	var err error
	r.w, err = reload.Start(reload.Config{Out: r.out, Debounce: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		stop()
		r.w.Close()
	})
	r.waitWatching(file)
	return r
}

// waitWatching waits for the watcher to say it watches file.
func (r *reloading) waitWatching(file string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, l := range strings.Split(r.out.String(), "\n") {
			if strings.HasPrefix(l, "duet reload: watching ") && strings.Contains(l, file) {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("never said it watches %s; said:\n%s", file, r.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// save replaces the file as editors do: a new file renamed over the old.
func (r *reloading) save(src string) {
	r.t.Helper()
	tmp := r.path + ".tmp~"
	require.NoError(r.t, os.WriteFile(tmp, []byte(src), 0o644))
	require.NoError(r.t, os.Rename(tmp, r.path))
}

// saveInPlace writes the file where it is.
func (r *reloading) saveInPlace(src string) {
	r.t.Helper()
	require.NoError(r.t, os.WriteFile(r.path, []byte(src), 0o644))
}

func (r *reloading) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results)
}

// waitReload waits for the reload after the n-th and returns it.
func (r *reloading) waitReload(n int) reload.Result {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.count() <= n {
		if time.Now().After(deadline) {
			r.t.Fatalf("no reload %d within 20 s; said:\n%s", n+1, r.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[n]
}

func (r *reloading) waitOut(text string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(r.out.String(), text) {
		if time.Now().After(deadline) {
			r.t.Fatalf("never said %q; said:\n%s", text, r.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eval evaluates expr on the loop with the module as m and the widget
// (when not nil) as w, and returns it as a T.
func evalAs[T any](t *testing.T, r *reloading, w *widgets.Widget, expr string) T {
	t.Helper()
	var v T
	looptest.Do(t, func(t testing.TB) {
		g, err := pygi.NewGlobals()
		require.NoError(t, err)
		defer g.Close()
		require.NoError(t, g.SetItem("m", r.mod.Object))
		if w != nil {
			require.NoError(t, g.SetItem("w", w.Object))
		}
		o, err := pygi.Eval(expr, g)
		require.NoError(t, err, expr)
		defer o.Close()
		v, err = pygi.As[T](o)
		require.NoError(t, err)
	})
	return v
}

// until polls expr until it gives want, for 20 s.
func until[T comparable](t *testing.T, r *reloading, w *widgets.Widget, expr string, want T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := evalAs[T](t, r, w, expr)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v, not %v, after 20 s; said:\n%s", expr, got, want, r.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newWidget(t *testing.T, r *reloading, class string) *widgets.Widget {
	t.Helper()
	var w *widgets.Widget
	looptest.Do(t, func(t testing.TB) {
		var err error
		w, err = r.mod.New(class, nil)
		require.NoError(t, err)
	})
	t.Cleanup(func() { w.Close() })
	return w
}

const panelPy = `from gi.repository import Gtk

VERSION = 1


def greeting(s):
    return s


class Panel(Gtk.Box):
    def __init__(self):
        super().__init__()
        self.label = Gtk.Label(label="start")
        self.button = Gtk.Button(label="go")
        self.append(self.label)
        self.append(self.button)
        self.button.connect("clicked", self.on_clicked)

    def on_clicked(self, button):
        self.label.set_text(greeting("old"))
`

const click = `(w.button.emit("clicked"), w.label.get_text())[1]`

// A method's body changed on disk: the next signal runs the new code, on
// the widget made before, through the handler connected before (a bound
// method of the old function object); a Go handler connected to the
// widget's button stays connected and runs.
func TestReloadMethodBodyAppliesToLiveWidget(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_panel.py", panelPy)
	w := newWidget(t, r, "Panel")
	var goClicks int
	looptest.Do(t, func(t testing.TB) {
		b, err := w.Object.Attr("button")
		require.NoError(t, err)
		_, err = widgets.Wrap(b).Connect("clicked", func(*pygi.Object) { goClicks++ })
		require.NoError(t, err)
	})
	assert.Equal(t, "old", evalAs[string](t, r, w, click))

	saved := time.Now()
	r.save(strings.Replace(panelPy, `greeting("old")`, `greeting("new")`, 1))
	until(t, r, w, click, "new")
	res := r.waitReload(0)
	// What it takes, for the record (no assertion on speed): from the
	// rename to the reload done, the 20 ms debounce of these tests
	// included; the reload itself on the UI thread.
	r.mu.Lock()
	t.Logf("save to applied: %v (debounce %v); the reload on the UI thread: %v", r.seen[0].Sub(saved), 20*time.Millisecond, res.Took)
	r.mu.Unlock()
	assert.Equal(t, reload.Applied, res.Outcome, res.Line)
	assert.Equal(t, 1, res.Methods)
	assert.Contains(t, r.out.String(), "duet reload: reload_panel.py: applied (1 method)")

	// A module function changed, saved in place this time.
	src := strings.Replace(panelPy, `greeting("old")`, `greeting("new")`, 1)
	r.saveInPlace(strings.Replace(src, "return s\n", "return s.upper()\n", 1))
	until(t, r, w, click, "NEW")
	assert.Contains(t, r.out.String(), "applied (1 function)")

	before := goClicks
	evalAs[string](t, r, w, click)
	assert.Equal(t, before+1, goClicks, "the Go handler is still connected and runs")
	assert.True(t, evalAs[bool](t, r, w, "type(w) is m.Panel"), "the class is the one the widget was made of")
}

const meterPy = `from gi.repository import Gtk


class Meter(Gtk.Widget):
    def do_measure(self, orientation, for_size):
        return 10, 10, -1, -1
`

const measure = `(w.queue_resize(), w.measure(__import__("gi.repository.Gtk", fromlist=["Gtk"]).Orientation.HORIZONTAL, -1)[0])[1]`

// A GObject subclass's virtual function (do_measure, which GTK calls from
// C through the closure PyGObject made when the class was registered)
// runs the new code for the instance made before, also when the new code
// needs a closure the old one had not (zero-argument super()).
func TestReloadVirtualFunctionOfLiveInstance(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_meter.py", meterPy)
	w := newWidget(t, r, "Meter")
	assert.Equal(t, int64(10), evalAs[int64](t, r, w, measure))

	r.save(strings.Replace(meterPy, "return 10, 10", "return 20, 20", 1))
	until(t, r, w, measure, int64(20))
	assert.Equal(t, reload.Applied, r.waitReload(0).Outcome)

	r.save(strings.Replace(meterPy, "return 10, 10, -1, -1", "super().get_name()\n        return 30, 30, -1, -1", 1))
	until(t, r, w, measure, int64(30))
	res := r.waitReload(1)
	assert.Equal(t, reload.Applied, res.Outcome, res.Line)
	assert.Equal(t, 1, res.Methods)

	// And back to no closure: the function takes the code itself again.
	r.save(strings.Replace(meterPy, "return 10, 10", "return 40, 40", 1))
	until(t, r, w, measure, int64(40))
	assert.Equal(t, "do_measure", evalAs[string](t, r, w, "m.Meter.__dict__['do_measure'].__code__.co_name"))
}

// A syntax error keeps the old code and says so, with the file and the
// error; fixing the file applies it.
func TestReloadSyntaxErrorKeepsOldCode(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_syntax.py", panelPy)
	w := newWidget(t, r, "Panel")

	r.save(strings.Replace(panelPy, `greeting("old")`, `greeting("new"`, 1))
	res := r.waitReload(0)
	assert.Equal(t, reload.KeptOld, res.Outcome)
	out := r.out.String()
	assert.Contains(t, out, "duet reload: reload_syntax.py: kept the old code: SyntaxError")
	assert.Contains(t, out, "reload_syntax.py")
	assert.Contains(t, out, "(traceback follows)")
	assert.Contains(t, res.Traceback, `line 20`)
	assert.Equal(t, "old", evalAs[string](t, r, w, click))

	r.save(strings.Replace(panelPy, `greeting("old")`, `greeting("fixed")`, 1))
	until(t, r, w, click, "fixed")
	assert.Equal(t, reload.Applied, r.waitReload(1).Outcome)
}

// An exception while the module runs keeps the old code entirely: nothing
// that ran before the exception is applied.
func TestReloadExceptionAppliesNothing(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_raise.py", panelPy)
	w := newWidget(t, r, "Panel")

	broken := strings.Replace(panelPy, `greeting("old")`, `greeting("new")`, 1)
	broken = strings.Replace(broken, "return s\n", "return s.upper()\n", 1)
	broken = strings.Replace(broken, "VERSION = 1", "VERSION = 2\nADDED = 1", 1)
	broken += "\n\ndef added():\n    pass\n\n\nraise RuntimeError('boom at import')\n"
	r.save(broken)
	res := r.waitReload(0)
	assert.Equal(t, reload.KeptOld, res.Outcome)
	assert.Contains(t, res.Line, "RuntimeError: boom at import")
	assert.Contains(t, res.Traceback, "reload_raise.py")
	assert.NotContains(t, res.Traceback, "reload.py", "the traceback starts at the module")
	assert.Equal(t, "old", evalAs[string](t, r, w, click))
	assert.Equal(t, "x", evalAs[string](t, r, w, "m.greeting('x')"))
	assert.Equal(t, int64(1), evalAs[int64](t, r, w, "m.VERSION"))
	assert.False(t, evalAs[bool](t, r, w, "hasattr(m, 'ADDED') or hasattr(m, 'added')"))
	assert.True(t, evalAs[bool](t, r, w, "m.__dict__['__builtins__'] is __import__('builtins').__dict__ and m.greeting.__builtins__ is m.__dict__['__builtins__']"), "the module's builtins are its own again")
}

const counterPy = `from gi.repository import GObject, Gtk


class Counter(Gtk.Box):
    count = GObject.Property(type=int, default=0)

    def __init__(self):
        super().__init__()
        self.label = Gtk.Label(label="start")
        self.button = Gtk.Button(label="go")
        self.append(self.label)
        self.append(self.button)
        self.button.connect("clicked", self.on_clicked)

    def on_clicked(self, button):
        self.count += 1
        self.label.set_text("v1 %d" % self.count)
`

// A property added needs a restart: said in one line; the rest of the
// save (a method's body) applies, and the widget works on.
func TestReloadPropertyAddedNeedsRestart(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_counter.py", counterPy)
	w := newWidget(t, r, "Counter")
	assert.Equal(t, "v1 1", evalAs[string](t, r, w, click))

	src := strings.Replace(counterPy, "    count = GObject.Property(type=int, default=0)\n",
		"    count = GObject.Property(type=int, default=0)\n    total = GObject.Property(type=int, default=5)\n", 1)
	src = strings.Replace(src, `"v1 %d"`, `"v2 %d"`, 1)
	r.save(src)
	res := r.waitReload(0)
	assert.Equal(t, reload.Restart, res.Outcome, res.Line)
	assert.Contains(t, r.out.String(), "duet reload: reload_counter.py: applied (1 method); restart needed: Counter: property 'total' added")
	assert.Equal(t, "v2 2", evalAs[string](t, r, w, click))
	assert.False(t, evalAs[bool](t, r, w, "'total' in [p.name for p in w.list_properties()]"))

	// The property's default changed: the same, as a change.
	r.save(strings.Replace(counterPy, "default=0", "default=3", 1))
	res = r.waitReload(1)
	assert.Contains(t, res.Line, "restart needed: Counter: property 'count' changed")
	assert.Equal(t, "v1 3", evalAs[string](t, r, w, click))

	// Unchanged declarations say nothing; a changed __init__ says the
	// widgets made already keep what the old one did.
	r.save(strings.Replace(counterPy, `label="start"`, `label="begin"`, 1))
	res = r.waitReload(2)
	assert.Contains(t, res.Line, "restart needed: Counter: __init__ changed (the 1 made already keep what the old one did)")
	assert.NotContains(t, res.Line, "property")
}

// A handler of the module running while its module reloads (a reload can
// only start between two events, but a handler that runs a nested main
// loop, or calls Go that reloads, is mid-way): it finishes with its own
// code, what it calls from then on runs the new code, and so does the next
// event.
func TestReloadDuringHandler(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const src = `from gi.repository import Gtk

log = globals().get("log", [])  # kept across reloads


def tail():
    return "old tail"


class Panel(Gtk.Box):
    def __init__(self, hook):
        super().__init__()
        self.button = Gtk.Button()
        self.append(self.button)
        self.hook = hook
        self.button.connect("clicked", self.on_clicked)

    def on_clicked(self, button):
        log.append("old head")
        self.hook()
        log.append("old body")
        log.append(tail())
`
	r := watchModule(t, "reload_midway.py", src)
	newSrc := strings.ReplaceAll(src, "old", "new")
	var w *widgets.Widget
	var hookErr error
	looptest.Do(t, func(t testing.TB) {
		hook := func() {
			if _, err := reload.Now(r.mod.Name, newSrc, r.out); err != nil {
				hookErr = err
			}
		}
		cls, err := r.mod.Attr("Panel")
		require.NoError(t, err)
		o, err := cls.Call(hook)
		require.NoError(t, err)
		w = widgets.Wrap(o)
	})
	t.Cleanup(func() { w.Close() })
	assert.Equal(t, []string{"old head", "old body", "new tail"}, evalAs[[]string](t, r, w, `(w.button.emit("clicked"), m.log)[1]`))
	require.NoError(t, hookErr)
	assert.Equal(t, []string{"new head", "new body", "new tail"}, evalAs[[]string](t, r, w, `(m.log.clear(), w.button.emit("clicked"), m.log)[2]`))
}

// Modules that import each other: a module's functions and classes keep
// their identity, so what another module took from it (import m, from m
// import f) runs the new code; reloading the importer does not run the
// imported module again.
func TestReloadImportedModule(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	base := watchModule(t, "reload_base.py", "RUNS = globals().get('RUNS', [0])\nRUNS[0] += 1\n\ndef tag():\n    return 'a1'\n\nclass Tagger:\n    def tag(self):\n        return 'c1'\n")
	base.w.Close() // one watcher at a time: the second module's watches both
	user := watchModule(t, "reload_user.py", "import reload_base\nfrom reload_base import tag, Tagger\n\ndef both():\n    return tag() + reload_base.tag() + Tagger().tag()\n")
	assert.Equal(t, "a1a1c1", evalAs[string](t, user, nil, "m.both()"))

	base.save("RUNS = globals().get('RUNS', [0])\nRUNS[0] += 1\n\ndef tag():\n    return 'a2'\n\nclass Tagger:\n    def tag(self):\n        return 'c2'\n")
	until(t, user, nil, "m.both()", "a2a2c2")
	assert.Equal(t, "a2", evalAs[string](t, user, nil, "m.tag()"))

	user.save("import reload_base\nfrom reload_base import tag, Tagger\n\ndef both():\n    return '<' + tag() + reload_base.tag() + Tagger().tag()\n")
	until(t, user, nil, "m.both()", "<a2a2c2")
	assert.Equal(t, int64(2), evalAs[int64](t, user, nil, "__import__('reload_base').RUNS[0]"), "the base module ran twice: its load and its one reload")
}

// A file deleted while watched: said, the old code runs on; the file back
// (as an editor's rename does): applied. Two saves in quick succession end
// with the second applied.
func TestReloadFileDeletedAndSavedTwice(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_gone.py", panelPy)
	w := newWidget(t, r, "Panel")
	require.NoError(t, os.Remove(r.path))
	r.waitOut("reload_gone.py: the file is gone; the code loaded from it keeps running")
	assert.Equal(t, "old", evalAs[string](t, r, w, click))

	r.save(strings.Replace(panelPy, `greeting("old")`, `greeting("back")`, 1))
	until(t, r, w, click, "back")

	r.saveInPlace(strings.Replace(panelPy, `greeting("old")`, `greeting("first")`, 1))
	r.saveInPlace(strings.Replace(panelPy, `greeting("old")`, `greeting("second")`, 1))
	until(t, r, w, click, "second")
	assert.NotContains(t, r.out.String(), "kept the old code")
}

// Classes whose metaclass makes them more than their namespace (an Enum):
// unchanged, the class stays the same (its members compare as before);
// changed, it is made anew and that is said.
func TestReloadUnusualMetaclass(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const src = "import enum\n\nclass Kind(enum.Enum):\n    A = 1\n    B = 2\n\ndef kind():\n    return 1\n"
	r := watchModule(t, "reload_enum.py", src)
	evalAs[bool](t, r, nil, "m.__dict__.setdefault('SAVED', m.Kind.A) is None")
	r.save(strings.Replace(src, "return 1", "return 2", 1))
	until(t, r, nil, "m.kind()", int64(2))
	assert.True(t, evalAs[bool](t, r, nil, "m.SAVED is m.Kind.A"), "the same class, the same members")
	assert.Equal(t, reload.Applied, r.waitReload(0).Outcome)

	r.save(strings.Replace(src, "B = 2", "B = 2\n    C = 3", 1))
	res := r.waitReload(1)
	assert.Contains(t, res.Line, "restart needed: Kind: rebuilt (metaclass EnumType)")
	assert.True(t, evalAs[bool](t, r, nil, "m.Kind.C.value == 3"))
}

// A hundred reloads under forced collections leave nothing behind: live
// callbacks and the Python objects Go holds are back to where they were,
// and so are the functions the module's code made.
func TestReloadLeavesNothingBehind(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_leak.py", counterPy)
	w := newWidget(t, r, "Counter")
	var goClicks int
	looptest.Do(t, func(t testing.TB) {
		b, err := w.Object.Attr("button")
		require.NoError(t, err)
		_, err = widgets.Wrap(b).Connect("clicked", func(*pygi.Object) { goClicks++ })
		require.NoError(t, err)
	})
	functions := `(__import__("gc").collect(), sum(1 for o in __import__("gc").get_objects() if getattr(getattr(o, "__code__", None), "co_filename", "") == m.__file__))[1]`
	variant := func(i int) string {
		src := strings.Replace(counterPy, `"v1 %d"`, `"v`+strings.Repeat("x", i%7)+` %d"`, 1)
		if i%2 == 0 { // the closure changes every other time: forwarded, then swapped back
			src = strings.Replace(src, "self.count += 1", "self.count += 1\n        super().get_name()", 1)
		}
		return src
	}
	var took time.Duration
	run := func(from, to int) {
		looptest.Do(t, func(t testing.TB) {
			for i := from; i < to; i++ {
				res, err := reload.Now(r.mod.Name, variant(i), r.out)
				require.NoError(t, err)
				require.Equal(t, reload.Applied, res.Outcome, res.Line)
				took += res.Took
			}
		})
	}
	run(0, 10)
	base := looptest.Settle(t)
	objects := forensics.ReadStats().Objects.Live
	fns := evalAs[int64](t, r, w, functions)
	for i := 10; i < 100; i += 10 {
		run(i, i+10)
		runtime.GC()
	}
	// Through the watcher too, a few times.
	for i := range 3 {
		n := r.count()
		r.saveInPlace(variant(100 + i))
		r.waitReload(n)
	}
	run(103, 110)
	t.Logf("a reload of this module on the UI thread: %v on average", took/107)
	assert.Equal(t, base, looptest.Settle(t), "live callbacks")
	assert.Equal(t, objects, forensics.ReadStats().Objects.Live, "Python objects held by Go")
	assert.Equal(t, fns, evalAs[int64](t, r, w, functions), "functions of the module")
	before := goClicks
	evalAs[string](t, r, w, click)
	assert.Equal(t, before+1, goClicks)
}

// Off, there is no watcher: none runs unless one was started, and one
// closed leaves no goroutine behind (fsnotify's included).
func TestReloadWatcherLeavesNoGoroutine(t *testing.T) {
	assert.Zero(t, reload.Running())
	watcherGoroutinesGone(t, "no watcher goroutine before one starts")
	w, err := reload.Start(reload.Config{Out: &syncBuffer{}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), reload.Running())
	assert.True(t, watcherGoroutines())
	_, err = reload.Start(reload.Config{})
	assert.ErrorIs(t, err, reload.ErrRunning)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
	assert.Zero(t, reload.Running())
	watcherGoroutinesGone(t, "Close waited for both goroutines")
}

// A goroutine that closed the channel Close waits on is still on its way
// out for an instant (its deferred calls, then its return), and an earlier
// test's watcher may be in that instant when this one starts: gone means
// gone within a while, as goroutine leak checkers count it.
func watcherGoroutinesGone(t *testing.T, msg string) {
	t.Helper()
	assert.Eventually(t, func() bool { return !watcherGoroutines() }, 5*time.Second, 2*time.Millisecond, msg)
}

func watcherGoroutines() bool {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	return strings.Contains(stacks, "fsnotify") || strings.Contains(stacks, "internal/reload.(*Watcher)")
}

const thingPy = `from gi.repository import GObject


class Thing(GObject.Object):
    """A thing, v1."""

    __gsignals__ = {"poked": (GObject.SignalFlags.RUN_FIRST, None, (int,))}
    seen = []

    @GObject.Signal(arg_types=(str,))
    def named(self, what):
        Thing.seen.append("named v1 " + what)

    def plain(self):
        return "plain v1"

    @staticmethod
    def stat():
        return "static v1"

    @classmethod
    def klass(cls):
        return "class v1 " + cls.__name__

    @property
    def prop(self):
        return "property v1"

    def gone(self):
        return "gone"
`

// Methods of every kind take the new code in place (a signal's class
// closure, static and class methods, a property's getter), what holds the
// old ones (a bound method, the function taken from the class) runs it; a
// method added is there (its zero-argument super() works), one removed is
// gone.
func TestReloadMethodsOfEveryKind(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_kinds.py", thingPy)
	const held = `m.__dict__.setdefault("HELD", (m.Thing(),)) and m.__dict__.setdefault("HELD2", (m.HELD[0].plain, m.Thing.plain, m.Thing.stat, m.Thing.klass)) is None`
	evalAs[bool](t, r, nil, held)
	src := strings.ReplaceAll(thingPy, "v1", "v2")
	src = strings.Replace(src, "    def gone(self):\n        return \"gone\"\n", "    def added(self):\n        return type(super()).__name__\n", 1)
	r.save(src)
	res := r.waitReload(0)
	assert.Equal(t, reload.Applied, res.Outcome, res.Line)
	assert.Equal(t, "duet reload: reload_kinds.py: applied (5 methods, 1 added, 1 removed)", res.Line)
	for expr, want := range map[string]string{
		"m.HELD[0].plain()":     "plain v2",
		"m.HELD2[0]()":          "plain v2",
		"m.HELD2[1](m.HELD[0])": "plain v2",
		"m.HELD2[2]()":          "static v2",
		"m.HELD2[3]()":          "class v2 Thing",
		"m.HELD[0].prop":        "property v2",
		"m.HELD[0].added()":     "super",
		"(m.HELD[0].emit('named', 'x'), m.Thing.seen[-1])[1]": "named v2 x",
		"str(hasattr(m.Thing, 'gone'))":                       "False",
	} {
		assert.Equal(t, want, evalAs[string](t, r, nil, expr), expr)
	}
}

// What a registered GType cannot take says restart needed, in one line
// per save; the code that can change does.
func TestReloadGObjectDeclarationsNeedRestart(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_decl.py", thingPy)
	src := strings.Replace(thingPy, "(int,))}", "(str,))}", 1)
	src = strings.Replace(src, "    seen = []\n", "    __gtype_name__ = \"DuetReloadThing\"\n    seen = []\n    extra = GObject.Signal()\n    size = GObject.Property(type=int)\n", 1)
	src = strings.Replace(src, "plain v1", "plain v2", 1)
	r.save(src)
	res := r.waitReload(0)
	assert.Equal(t, reload.Restart, res.Outcome)
	assert.Equal(t, "duet reload: reload_decl.py: applied (1 method); restart needed: Thing: __gtype_name__ changed (reload_decl+Thing -> DuetReloadThing), property 'size' added, signal 'poked' changed, signal 'extra' added", res.Line)
	assert.Equal(t, "plain v2", evalAs[string](t, r, nil, "m.Thing().plain()"))
	assert.Equal(t, "reload_decl+Thing", evalAs[string](t, r, nil, "m.Thing.__gtype__.name"))

	// New bases: the class is left as it was.
	r.save(strings.Replace(strings.Replace(thingPy, "(GObject.Object)", "(GObject.InitiallyUnowned)", 1), "plain v1", "plain v3", 1))
	res = r.waitReload(1)
	assert.Equal(t, "duet reload: reload_decl.py: restart needed: Thing: its bases changed ((Object) -> (InitiallyUnowned)): its code was not changed", res.Line)
	assert.Equal(t, "plain v2", evalAs[string](t, r, nil, "m.Thing().plain()"))
}

const gaugePy = `from gi.repository import Gtk


class Gauge(Gtk.Widget):
    def do_measure(self, orientation, for_size):
        return 10, 10, -1, -1

    def do_helper(self):
        return "not a vfunc"
`

// A virtual function added or removed cannot reach GTK (PyGObject binds
// them when the class is registered): restart needed, and GTK calls what
// it called; a do_ method that is no virtual function is a plain method.
func TestReloadVirtualFunctionAddedOrRemoved(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	r := watchModule(t, "reload_gauge.py", gaugePy)
	w := newWidget(t, r, "Gauge")
	src := strings.Replace(gaugePy, "    def do_measure(self, orientation, for_size):\n        return 10, 10, -1, -1\n",
		"    def do_snapshot(self, snapshot):\n        pass\n\n    def do_other(self):\n        return 'plain'\n", 1)
	r.save(src)
	res := r.waitReload(0)
	assert.Equal(t, "duet reload: reload_gauge.py: applied (1 added); restart needed: Gauge: do_snapshot is new: GTK calls it only in a new process, do_measure was removed: GTK keeps calling it", res.Line)
	assert.Equal(t, int64(10), evalAs[int64](t, r, w, measure))
	assert.Equal(t, "plain", evalAs[string](t, r, w, "w.do_other()"))
	assert.Equal(t, "not a vfunc", evalAs[string](t, r, w, "w.do_helper()"))
}

// A class with Gtk.Template: its decorator does not run again (it refuses
// to: "Cannot nest template classes"), its callbacks take the new code.
func TestReloadTemplateClass(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const src = `from gi.repository import Gtk

UI = """<interface><template class="DuetReloadTmpl" parent="GtkBox">
<child><object class="GtkButton" id="button"><signal name="clicked" handler="on_clicked"/></object></child>
<child><object class="GtkLabel" id="label"/></child></template></interface>"""


@Gtk.Template(string=UI)
class Tmpl(Gtk.Box):
    __gtype_name__ = "DuetReloadTmpl"
    button = Gtk.Template.Child()
    label = Gtk.Template.Child()

    @Gtk.Template.Callback()
    def on_clicked(self, button):
        self.label.set_text("old")
`
	r := watchModule(t, "reload_tmpl.py", src)
	w := newWidget(t, r, "Tmpl")
	assert.Equal(t, "old", evalAs[string](t, r, w, click))
	r.save(strings.Replace(src, `"old"`, `"new"`, 1))
	until(t, r, w, click, "new")
	assert.Equal(t, reload.Applied, r.waitReload(0).Outcome)
	w2 := newWidget(t, r, "Tmpl")
	assert.Equal(t, "new", evalAs[string](t, r, w2, click), "a new instance gets its template and the new code")
	r.save(strings.Replace(strings.Replace(src, `"old"`, `"newer"`, 1), "@Gtk.Template(string=UI)", "@Gtk.Template(string=UI.replace('GtkLabel', 'GtkLabel'))", 1))
	res := r.waitReload(1)
	assert.Contains(t, res.Line, "restart needed: Tmpl: its decorators changed (they did not run again)")
	assert.Equal(t, "newer", evalAs[string](t, r, w, click))
}

// A GObject class first made by a reload that then raised keeps its GType:
// the fixed file's reload patches it instead of registering the name again
// ("could not create new GType").
func TestReloadNewGObjectClassAfterFailedReload(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const src = "from gi.repository import GObject\n\n\nclass A(GObject.Object):\n    pass\n"
	const b = "\n\nclass B(GObject.Object):\n    __gtype_name__ = 'DuetReloadOrphan'\n\n    def f(self):\n        return %d\n"
	r := watchModule(t, "reload_orphan.py", src)
	r.save(src + fmt.Sprintf(b, 1) + "\n\nraise ValueError('not yet')\n")
	assert.Equal(t, reload.KeptOld, r.waitReload(0).Outcome)
	assert.False(t, evalAs[bool](t, r, nil, "hasattr(m, 'B')"))
	r.save(src + fmt.Sprintf(b, 2))
	res := r.waitReload(1)
	assert.Equal(t, reload.Applied, res.Outcome, res.Line)
	assert.Equal(t, int64(2), evalAs[int64](t, r, nil, "m.B().f()"))
	assert.Equal(t, "DuetReloadOrphan", evalAs[string](t, r, nil, "m.B.__gtype__.name"))
}

// Decorated functions: the wrapper stays, what it wraps takes the new code
// (a decorator of the module's, functools.wraps, functools.lru_cache,
// whose cache is cleared); a decorator's arguments take their new values.
func TestReloadDecoratedFunctions(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const src = `import functools


def tagged(tag):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            return tag + fn(*a, **kw)
        return wrapper
    return deco


@tagged("<")
def shout():
    return "v1"


@functools.lru_cache(maxsize=None)
def cached():
    return "v1"
`
	r := watchModule(t, "reload_deco.py", src)
	evalAs[bool](t, r, nil, `m.__dict__.setdefault("HELD", (m.shout, m.cached)) and m.cached() == "v1"`)
	r.save(strings.Replace(strings.ReplaceAll(src, `"v1"`, `"v2"`), `"<"`, `"["`, 1))
	res := r.waitReload(0)
	assert.Equal(t, reload.Applied, res.Outcome, res.Line)
	assert.Equal(t, "[v2", evalAs[string](t, r, nil, "m.HELD[0]()"))
	assert.Equal(t, "v2", evalAs[string](t, r, nil, "m.HELD[1]()"))
	assert.True(t, evalAs[bool](t, r, nil, "m.HELD[0] is m.shout and m.HELD[1] is m.cached"))
}

// The module's functions keep its own globals, also those the new code
// made and put in a table: they see what later reloads change and the
// state they set is the module's. (Had the new code run in a copy of the
// module's dict, they would see the copy for ever.)
func TestReloadFunctionsKeepTheModulesGlobals(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const src = `def helper():
    return "h1"


def on_a():
    global last
    last = "a"
    return helper()


HANDLERS = {"a": on_a}
`
	r := watchModule(t, "reload_globals.py", src)
	for i, v := range []string{"h2", "h3"} {
		s := strings.Replace(src, `"h1"`, `"`+v+`"`, 1)
		if i == 0 {
			s = strings.Replace(s, "    return helper()\n", "    return helper() + ''\n", 1) // on_a changes too
		}
		r.save(s)
		r.waitReload(i)
		assert.Equal(t, v, evalAs[string](t, r, nil, `m.HANDLERS["a"]()`))
		assert.Equal(t, "a", evalAs[string](t, r, nil, `m.last`))
		assert.True(t, evalAs[bool](t, r, nil, `m.HANDLERS["a"].__globals__ is m.__dict__ and m.helper.__globals__ is m.__dict__`))
	}
}

// Where LoadFS's files are on disk: under an os.DirFS's directory, at
// their path under one of the directories the watcher is given, or (an
// fs.Sub of the embedded files) a file of the same name and source below
// one; a file found nowhere is said, once.
func TestReloadFindsLoadFSFilesOnDisk(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "py"), 0o755))
	files := map[string]string{
		"reload_dirfs.py":   "def f():\n    return 'dirfs 1'\n",
		"py/reload_sub.py":  "def f():\n    return 'sub 1'\n",
		"reload_nowhere.py": "def f():\n    return 'nowhere 1'\n",
	}
	for name, src := range files {
		if name != "reload_nowhere.py" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
		}
	}
	var dirfs, sub *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		var err error
		dirfs, err = widgets.LoadFS(os.DirFS(dir), "reload_dirfs.py")
		require.NoError(t, err)
		sub, err = widgets.LoadFS(fstest.MapFS{"reload_sub.py": {Data: []byte(files["py/reload_sub.py"])}}, "reload_sub.py")
		require.NoError(t, err)
		_, err = widgets.LoadFS(fstest.MapFS{"reload_nowhere.py": {Data: []byte(files["reload_nowhere.py"])}}, "reload_nowhere.py")
		require.NoError(t, err)
	})
	out := &syncBuffer{}
	w, err := reload.Start(reload.Config{Out: out, Guess: dir, Debounce: 20 * time.Millisecond})
	require.NoError(t, err)
	defer w.Close()
	r := &reloading{t: t, out: out}
	r.waitWatching("reload_sub.py")
	text := out.String()
	assert.Contains(t, text, "reload_dirfs.py")
	assert.Contains(t, text, "duet reload: reload_nowhere.py (loaded from an fs.FS) is not on disk under ")
	assert.Equal(t, 1, strings.Count(text, "reload_nowhere.py (loaded"))

	for _, c := range []struct {
		mod  *widgets.Module
		file string
	}{{dirfs, "reload_dirfs.py"}, {sub, "py/reload_sub.py"}} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, c.file), []byte(strings.Replace(files[c.file], " 1'", " 2'", 1)), 0o644))
		r.mod = c.mod
		until(t, r, nil, "m.f()", strings.TrimSuffix(strings.TrimPrefix(strings.Split(files[c.file], "'")[1], ""), "1")+"2")
	}
}

// The directory of a watched file removed: said (its files are no longer
// watched); the code loaded keeps running.
func TestReloadDirectoryRemoved(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "reload_rmdir.py")
	require.NoError(t, os.WriteFile(path, []byte("def f():\n    return 1\n"), 0o644))
	r := &reloading{t: t, path: path, out: &syncBuffer{}}
	looptest.Do(t, func(t testing.TB) {
		var err error
		r.mod, err = widgets.LoadFile(path)
		require.NoError(t, err)
	})
	w, err := reload.Start(reload.Config{Out: r.out, Debounce: 20 * time.Millisecond})
	require.NoError(t, err)
	defer w.Close()
	r.waitWatching("reload_rmdir.py")
	require.NoError(t, os.RemoveAll(dir))
	r.waitOut(dir + " was removed: reload_rmdir.py no longer watched")
	assert.Equal(t, int64(1), evalAs[int64](t, r, nil, "m.f()"))
}

// A program's class that overrides what the redraw after a reload calls
// (queue_resize) does not make an applied reload say it kept the old code:
// the redraw calls GTK's own, and what it raises is no failure of the
// reload.
func TestReloadRedrawsThroughGTKsOwnMethods(t *testing.T) {
	src := `from gi.repository import Gtk
VERSION = 1

class Picky(Gtk.Widget):
    def queue_resize(self):
        raise RuntimeError("the program's own queue_resize")
`
	path := filepath.Join(t.TempDir(), "picky.py")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	var mod *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		mod, err = widgets.LoadFile(path)
		require.NoError(t, err)
		w, err := mod.New("Picky", nil)
		require.NoError(t, err)
		require.NoError(t, g.SetItem("w", w.Object))
		require.NoError(t, g.SetItem("mod", mod.Object))
		require.NoError(t, pygi.Exec("from gi.repository import Gtk\nwin = Gtk.Window(child=w)\nwin.present()\n", g))
	})
	defer looptest.Do(t, func(t testing.TB) { assert.NoError(t, pygi.Exec("win.destroy()", g)) })
	looptest.Do(t, func(t testing.TB) {
		res, err := reload.Now(mod.Name, strings.Replace(src, "VERSION = 1", "VERSION = 2", 1), os.Stderr)
		require.NoError(t, err)
		assert.Equal(t, reload.Applied, res.Outcome, "%s", res.Line)
		assert.Equal(t, 1, res.Redrawn)
		v, err := pygi.Eval("mod.VERSION", g)
		require.NoError(t, err)
		assert.Equal(t, "2", v.String())
	})
}
