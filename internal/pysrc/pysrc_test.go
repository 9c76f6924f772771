package pysrc_test

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

//go:embed testdata/*.py
var testFiles embed.FS

var files = pysrc.Embed("internal/pysrc", testFiles)

// selfSetup and slowSetup are what two modules' Setup run; set by the
// tests that use them.
var (
	selfSetup = func() error { return nil }
	slowSetup = func(*pygi.Object) error { return nil }
)

var (
	countedPy = files.Module("duet_test_counted", "testdata/counted.py")
	brokenPy  = files.Module("duet_test_broken", "testdata/broken.py")
	flakyPy   = files.Module("duet_test_flaky", "testdata/flaky.py")
	reentryPy = files.Module("duet_test_reentry", "testdata/reentry.py")
	plainPy   = files.Module("duet_test_plain", "testdata/plain.py")
	uiPy      = files.Module("duet_test_ui", "testdata/plain.py", pysrc.UIThread())
	sleepyPy  = files.Module("duet_test_sleepy", "testdata/sleepy.py")
	selfPy    = files.Module("duet_test_self", "testdata/plain.py", pysrc.Setup(func(*pygi.Object) error { return selfSetup() }))
	slowPy    = files.Module("duet_test_slow", "testdata/plain.py", pysrc.Setup(func(m *pygi.Object) error { return slowSetup(m) }))
)

func TestMain(m *testing.M) {
	if name := os.Getenv("PYSRC_CHILD"); name != "" {
		if err := children[name](); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			os.Exit(1)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	looptest.Main(m)
}

func watchdog(t *testing.T) func() { return testutil.Watchdog(t, time.Minute) }

func evalInt(t testing.TB, expr string) int64 {
	t.Helper()
	r, err := pygi.Eval(expr, nil)
	require.NoError(t, err)
	n, err := pygi.As[int64](r)
	require.NoError(t, err)
	return n
}

// Every Python file a package embeds compiles; the files are found by
// walking the embedded file systems, so none can be forgotten. (widgets'
// test, which links every package, does the same for all of them, and
// checks that no .py file in duet's tree is left out.)
func TestEmbeddedFilesCompile(t *testing.T) {
	all, err := pysrc.CompileAll()
	require.NoError(t, err)
	var paths []string
	for _, f := range all {
		paths = append(paths, f.Package+"/"+f.Path)
	}
	assert.Contains(t, paths, "pygi/helper.py", "the interpreter's bootstrap is listed too")
	assert.Contains(t, paths, "eventloop/hooks.py")
	assert.Contains(t, paths, "callbacks/errors.py")
	assert.NotContains(t, paths, "internal/pysrc/testdata/broken.py", "testdata is not duet's code")
}

// Concurrent first Loads, from goroutines (some attached to Python, as a
// Go callback is) and from the UI thread while the loop runs, run the file
// once and all get the one module; Reset makes the next Load run it again.
func TestLoadRunsOnceForConcurrentCallers(t *testing.T) {
	defer watchdog(t)()
	pysrc.Reset()
	before := evalInt(t, "getattr(__import__('sys'), 'duet_test_runs', 0)")
	const n = 16
	got := make([]*pygi.Object, n+1)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				got[i], errs[i] = countedPy.Load()
				return
			}
			errs[i] = pygi.WithGIL(func() error {
				var err error
				got[i], err = countedPy.Load()
				return err
			})
		})
	}
	wg.Go(func() {
		<-start
		errs[n] = eventloop.InvokeWait(context.Background(), func() error {
			var err error
			got[n], err = countedPy.Load()
			return err
		})
	})
	close(start)
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i], "caller %d", i)
		assert.Same(t, got[0], got[i], "caller %d got another module", i)
	}
	assert.Equal(t, before+1, evalInt(t, "__import__('sys').duet_test_runs"), "the file ran once")
	assert.Same(t, got[0], countedPy.Loaded())
	same, err := pygi.Eval("__import__('sys').modules['duet_test_counted']", nil)
	require.NoError(t, err)
	is, err := same.Is(got[0])
	require.NoError(t, err)
	assert.True(t, is, "the module handed out is the one in sys.modules")
	got[0].Close()
	_, err = got[0].Attr("__name__")
	assert.NoError(t, err, "the module is shared: Close on it does nothing")

	pysrc.Reset()
	assert.Nil(t, countedPy.Loaded())
	again, err := countedPy.Load()
	require.NoError(t, err)
	assert.NotSame(t, got[0], again)
	assert.Equal(t, before+2, evalInt(t, "__import__('sys').duet_test_runs"), "after Reset the file runs again")
}

// A Load that waits for another's lets go of the GIL: here the waiter is
// attached (a Do scope, as a Go callback is) while the load it waits for
// sleeps in Python, which it cannot wake from without the GIL.
func TestLoadWaitsWithoutTheGIL(t *testing.T) {
	defer watchdog(t)()
	first := make(chan error, 1)
	go func() {
		_, err := sleepyPy.Load()
		first <- err
	}()
	for evalInt(t, "int(getattr(__import__('sys'), 'duet_test_sleeping', False))") == 0 {
		time.Sleep(time.Millisecond)
	}
	second := pygi.WithGIL(func() error {
		m, err := sleepyPy.Load()
		if err == nil && m != sleepyPy.Loaded() {
			err = errors.New("another module")
		}
		return err
	})
	require.NoError(t, <-first)
	require.NoError(t, second)
}

// A syntax error in an embedded file is an error that names the module,
// its file and the line; nothing is left in sys.modules, and nothing is
// remembered.
func TestSyntaxErrorNamesTheFile(t *testing.T) {
	for range 2 {
		m, err := brokenPy.Load()
		require.Error(t, err)
		assert.Nil(t, m)
		var pe *pygi.Error
		require.ErrorAs(t, err, &pe)
		assert.True(t, pe.Matches("SyntaxError"), pe.Type)
		for _, want := range []string{"duet_test_broken", "internal/pysrc/testdata/broken.py", "line 3"} {
			assert.Contains(t, err.Error(), want)
		}
		assert.Nil(t, brokenPy.Loaded())
		assert.Equal(t, int64(0), evalInt(t, "int('duet_test_broken' in __import__('sys').modules)"))
	}
}

// A load that failed is tried again by the next Load, as Python's import
// does.
func TestFailedLoadIsTriedAgain(t *testing.T) {
	_, err := flakyPy.Load()
	var pe *pygi.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "RuntimeError", pe.Type)
	assert.Contains(t, err.Error(), "duet_test_flaky (internal/pysrc/testdata/flaky.py)")
	m, err := flakyPy.Load()
	require.NoError(t, err)
	assert.Same(t, m, flakyPy.Loaded())
}

// A module needed by its own load (its code calls Go that loads it, or its
// Setup does) is an error, not a deadlock.
func TestLoadFromInsideItsOwnLoad(t *testing.T) {
	defer watchdog(t)()
	reenter, err := callbacks.New(func() string {
		_, err := reentryPy.Load()
		if err == nil {
			return "no error"
		}
		return err.Error()
	}, callbacks.Name("duet_test_reenter"))
	require.NoError(t, err)
	defer reenter.Close()
	b, err := pygi.Import("builtins")
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.SetAttr("duet_test_reenter", reenter))
	defer b.DelAttr("duet_test_reenter")
	m, err := reentryPy.Load()
	require.NoError(t, err)
	r, err := m.Attr("result")
	require.NoError(t, err)
	assert.Contains(t, r.String(), "duet_test_reentry (internal/pysrc/testdata/reentry.py): loaded again from inside its own load")

	selfSetup = func() error { _, err := selfPy.Load(); return err }
	_, err = selfPy.Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loaded again from inside its own load")
	selfSetup = func() error { return nil }
	_, err = selfPy.Load()
	require.NoError(t, err, "and tried again")
}

// A module that touches GTK loads on the UI thread only; elsewhere the
// error says so, and nothing hops threads.
func TestUIThreadModules(t *testing.T) {
	_, err := uiPy.Load()
	require.ErrorIs(t, err, eventloop.ErrNotMain)
	assert.Contains(t, err.Error(), "duet_test_ui")
	assert.Nil(t, uiPy.Loaded())
	looptest.Do(t, func(t testing.TB) {
		m, err := uiPy.Load()
		require.NoError(t, err)
		assert.Same(t, m, uiPy.Loaded())
	})
	m, err := uiPy.Load()
	require.NoError(t, err, "once loaded, from anywhere")
	assert.NotNil(t, m)
}

func TestLoadByName(t *testing.T) {
	m, err := pysrc.LoadByName("duet_test_plain")
	require.NoError(t, err)
	assert.Same(t, plainPy.Loaded(), m)
	_, err = pysrc.LoadByName("duet_test_nothing")
	require.ErrorIs(t, err, pysrc.ErrUnknown)
	assert.Contains(t, err.Error(), "duet_test_nothing")
}

// ---- the interpreter's end, in children ----

var children = map[string]func() error{
	// After Finalize, Init is refused (the interpreter has one life), a
	// module not loaded fails with ErrFinalized, and one loaded is the
	// same Object, whose operations fail with ErrFinalized.
	"after-finalize": func() error {
		m, err := plainPy.Load()
		if err != nil {
			return err
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		if err := pygi.Init(pygi.Options{}); !errors.Is(err, pygi.ErrFinalized) {
			return fmt.Errorf("Init after Finalize: %v, want ErrFinalized", err)
		}
		if _, err := countedPy.Load(); !errors.Is(err, pygi.ErrFinalized) {
			return fmt.Errorf("Load after Finalize: %v, want ErrFinalized", err)
		}
		again, err := plainPy.Load()
		if err != nil || again != m {
			return fmt.Errorf("a loaded module after Finalize: %v, %v", again, err)
		}
		if _, err := m.Attr("VALUE"); !errors.Is(err, pygi.ErrFinalized) {
			return fmt.Errorf("using it: %v, want ErrFinalized", err)
		}
		return nil
	},
	// A first load while Python finalises, from an atexit function that
	// calls Go: duet's own (a Go error raised into Python needs
	// duet_callbacks) and another.
	"load-at-exit": func() error {
		fail, err := callbacks.New(func() error { return errors.New("from Go") }, callbacks.Name("fail"))
		if err != nil {
			return err
		}
		load, err := callbacks.New(func() (int, error) {
			m, err := plainPy.Load()
			if err != nil {
				return 0, err
			}
			v, err := m.Attr("VALUE")
			if err != nil {
				return 0, err
			}
			return pygi.As[int](v)
		}, callbacks.Name("load"))
		if err != nil {
			return err
		}
		var b pygi.Block
		g := b.Globals(pygi.Kw{"fail": fail, "load": load})
		b.Exec(`
import atexit
def at_exit():
    try:
        fail()
    except Exception as e:
        print("atexit raised:", type(e).__module__ + "." + type(e).__name__, e, flush=True)
    print("atexit loaded:", load(), flush=True)
atexit.register(at_exit)
`, g)
		if err := b.Err(); err != nil {
			return err
		}
		fail.Close()
		load.Close()
		if plainPy.Loaded() != nil {
			return errors.New("loaded before the test")
		}
		return pygi.Finalize(context.Background())
	},
	// Finalize begins while a load runs (its Setup, between two calls into
	// Python) and another Load waits for it inside an entry of its own:
	// Finalize waits for both, which end.
	"finalize-during-load": func() error {
		if err := pygi.Init(pygi.Options{}); err != nil {
			return err
		}
		inSetup := make(chan struct{})
		slowSetup = func(m *pygi.Object) error {
			close(inSetup)
			time.Sleep(200 * time.Millisecond)
			_, err := m.Attr("VALUE")
			return err
		}
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { _, err := slowPy.Load(); first <- err }()
		<-inSetup
		waiting := make(chan struct{})
		go func() {
			second <- pygi.WithGIL(func() error {
				close(waiting)
				_, err := slowPy.Load()
				return err
			})
		}()
		<-waiting
		time.Sleep(20 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pygi.Finalize(ctx); err != nil {
			return fmt.Errorf("Finalize: %w", err)
		}
		if err := <-first; err != nil {
			return fmt.Errorf("the load: %w", err)
		}
		if err := <-second; err != nil {
			return fmt.Errorf("the Load that waited: %w", err)
		}
		return nil
	},
	// Loads racing Finalize from goroutines: each succeeds or fails with
	// ErrFinalized; none hangs.
	"load-during-finalize": func() error {
		if err := pygi.Init(pygi.Options{}); err != nil {
			return err
		}
		errc := make(chan error, 4)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					pysrc.Reset()
					_, err := plainPy.Load()
					if errors.Is(err, pygi.ErrFinalized) {
						return
					}
					if err != nil {
						errc <- err
						return
					}
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		wg.Wait()
		close(errc)
		return <-errc
	},
}

func runChild(t *testing.T, name string) string {
	t.Helper()
	out, errOut, err := testutil.RunChild(t, "PYSRC_CHILD="+name)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok")
	return out
}

func TestAfterFinalize(t *testing.T) { runChild(t, "after-finalize") }

func TestLoadWhilePythonFinalises(t *testing.T) {
	out := runChild(t, "load-at-exit")
	assert.Contains(t, out, "atexit raised: duet_callbacks.GoError from Go")
	assert.Contains(t, out, "atexit loaded: 42")
	runChild(t, "load-during-finalize")
	runChild(t, "finalize-during-load")
}

// BenchmarkLoadLoaded: Load of a module loaded already, what every user of
// a module pays on each use.
func BenchmarkLoadLoaded(b *testing.B) {
	if _, err := plainPy.Load(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := plainPy.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// countCompiles wraps builtins.compile to count the compiles of each file
// name (builtins.compile.calls), which is how a load that compiles is seen.
const countCompiles = `
import builtins, collections, functools
if not hasattr(builtins.compile, "calls"):
    @functools.wraps(builtins.compile)
    def _counted(source, filename, *args, **kwargs):
        _counted.calls[filename] += 1
        return _counted.__wrapped__(source, filename, *args, **kwargs)
    _counted.calls = collections.Counter()
    builtins.compile = _counted
`

// A module whose file was compiled ahead (precompiled/code.bin) loads from that
// code and runs as compiled from its source: compile() is not called. An
// entry made from another source than the embedded file's is not used:
// the file is compiled as it loads, as it is with no entry.
func TestPrecompiledCodeIsUsedOnlyForItsOwnSource(t *testing.T) {
	defer watchdog(t)()
	require.NoError(t, pygi.Exec(countCompiles, nil))
	defer func() {
		require.NoError(t, pygi.Exec("import builtins\nbuiltins.compile = builtins.compile.__wrapped__", nil))
	}()
	compiles := func() int64 {
		return evalInt(t, "__import__('builtins').compile.calls['<duet internal/pysrc/testdata/plain.py>']")
	}
	for _, stale := range []bool{false, true} {
		restore, err := pysrc.PrecompileForTest(plainPy, stale)
		require.NoError(t, err)
		pysrc.Reset()
		before := compiles()
		m, err := plainPy.Load()
		restore()
		require.NoError(t, err)
		v, err := m.Attr("VALUE")
		require.NoError(t, err)
		n, err := pygi.As[int64](v)
		require.NoError(t, err)
		assert.EqualValues(t, 42, n)
		file, err := m.Attr("__file__")
		require.NoError(t, err)
		assert.Equal(t, "<duet internal/pysrc/testdata/plain.py>", file.String())
		want := int64(0)
		if stale {
			want = 1
		}
		assert.Equal(t, want, compiles()-before, "compiles of plain.py when its entry is stale: %v", stale)
	}
	// An entry whose bytes are not this file's code (damaged, or another
	// object marshal made) is not run: the file compiles.
	mo, err := pygi.Eval("__import__('importlib.util').util.MAGIC_NUMBER", nil)
	require.NoError(t, err)
	magic, err := pygi.As[[]byte](mo)
	require.NoError(t, err)
	for name, body := range map[string]string{
		"truncated marshal data": "\xe3\x00\x00",
		"a str, not code":        "\xfa\x0bVALUE = 666",
	} {
		restore := pysrc.DamageForTest(plainPy, string(magic)+body)
		pysrc.Reset()
		before := compiles()
		m, err := plainPy.Load()
		restore()
		require.NoError(t, err, name)
		v, err := m.Attr("VALUE")
		require.NoError(t, err, name)
		n, err := pygi.As[int64](v)
		require.NoError(t, err, name)
		assert.EqualValues(t, 42, n, name)
		assert.EqualValues(t, 1, compiles()-before, "%s: compiled from its source", name)
	}
	pysrc.Reset()
}
