package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// Children about who owns the interpreter's life and the UI thread; each
// returns nil for "ok".
var lifetimeChildren = map[string]func() error{
	// Finalize while the loop runs is refused, from a goroutine and from
	// the loop itself; the interpreter keeps working (a signal with a
	// Python handler is emitted afterwards); after the loop it finalises.
	"finalize-while-running": func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("from gi.repository import Gio\nhits = []\n"+
			"action = Gio.SimpleAction.new('a', None)\n"+
			"action.connect('activate', lambda a, p: hits.append(1))\n", g); err != nil {
			return err
		}
		errc := make(chan error, 1)
		eventloop.Invoke(func() {
			if err := pygi.Finalize(context.Background()); !errors.Is(err, pygi.ErrLoopRunning) {
				errc <- fmt.Errorf("Finalize on the loop: got %v, want ErrLoopRunning", err)
				eventloop.Quit()
				return
			}
			go func() {
				defer eventloop.Quit()
				if err := pygi.Finalize(context.Background()); !errors.Is(err, pygi.ErrLoopRunning) {
					errc <- fmt.Errorf("Finalize from a goroutine: got %v, want ErrLoopRunning", err)
					return
				}
				errc <- eventloop.InvokeWait(context.Background(), func() error {
					if err := pygi.Exec("action.activate(None)\nassert hits == [1], hits\n", g); err != nil {
						return fmt.Errorf("after a refused Finalize: %w", err)
					}
					return nil
				})
			}()
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if err := <-errc; err != nil {
			return err
		}
		g.Close()
		return pygi.Finalize(context.Background())
	},
	// A Go handler that calls runtime.Goexit (t.FailNow, require.*) while
	// GTK emits a signal on the loop: the process must end, saying why,
	// instead of hanging with the GIL held.
	"goexit-in-handler": func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		cb, err := callbacks.New(func(*pygi.Object, *pygi.Object) { runtime.Goexit() }, callbacks.Name("on_activate"))
		if err != nil {
			return err
		}
		if err := g.SetItem("handler", cb); err != nil {
			return err
		}
		if err := pygi.Exec("from gi.repository import Gio\n"+
			"action = Gio.SimpleAction.new('a', None)\naction.connect('activate', handler)\n", g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			if r, err := g.Item("action"); err == nil {
				r.CallMethod("activate", nil)
			}
		})
		eventloop.After(20*time.Second, eventloop.Quit)
		eventloop.Run(context.Background())
		return errors.New("still running after the handler called runtime.Goexit")
	},
}

func runLifetimeChild(t *testing.T, name string) (string, string, int) {
	t.Helper()
	out, errOut, err := testutil.RunChild(t, "EVENTLOOP_CHILD="+name)
	return out, errOut, testutil.ExitCode(t, err)
}

func TestFinalizeRefusedWhileTheLoopRuns(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "finalize-while-running")
	assert.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, out, "ok")
}

func TestGoexitInAHandlerEndsTheProcess(t *testing.T) {
	start := time.Now()
	_, errOut, code := runLifetimeChild(t, "goexit-in-handler")
	assert.Equal(t, 2, code, "stderr:\n%s", errOut)
	assert.Contains(t, errOut, "runtime.Goexit")
	assert.Contains(t, errOut, "on_activate", "the message names the callback")
	assert.NotContains(t, errOut, "still running")
	assert.Less(t, time.Since(start), 15*time.Second, "promptly, not after the watchdog")
}

// While the loop runs, every collection duet starts runs on the UI thread:
// GTK objects freed by Python's collector are finalised there, whichever
// goroutine asked for the collection.
func TestCollectFinalizesOnTheUIThread(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	const n = 300
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, pygi.Exec(`
import gi, threading
gi.require_version("Gtk", "4.0")
from gi.repository import Gtk
threads = []
ui = threading.get_ident()
def make(n):
    for _ in range(n):
        label = Gtk.Label(label="in a cycle")
        label.cycle = [label]   # held only by a Python reference cycle
        label.weak_ref(lambda: threads.append(threading.get_ident()))
`, g))
		r, err := pygi.Eval(fmt.Sprintf("make(%d)", n), g)
		require.NoError(t, err)
		r.Close()
	})
	// From this goroutine, as a test or a worker would.
	for range 3 {
		require.NoError(t, eventloop.Collect())
	}
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval("(len(threads), sum(1 for i in threads if i != ui))", g)
		require.NoError(t, err)
		got, err := pygi.As[[]int](r)
		require.NoError(t, err)
		assert.Equal(t, n, got[0], "finalised")
		assert.Equal(t, 0, got[1], "finalised off the UI thread")
	})
}

// Python code keeps its view of the collector while the loop runs, and a
// collection on another thread is reported with the thread's name.
func TestCollectorSwitchesAndOffThreadCollections(t *testing.T) {
	errs := looptest.CatchPythonExceptions(t)
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, pygi.Exec(`
import gc
seen = [gc.isenabled()]
gc.disable(); seen.append(gc.isenabled())
gc.enable(); seen.append(gc.isenabled())
`, g))
		r, err := g.Item("seen")
		require.NoError(t, err)
		seen, err := pygi.As[[]bool](r)
		require.NoError(t, err)
		assert.Equal(t, []bool{true, false, true}, seen, "gc.isenabled() answers what Python asked for")
	})
	require.NoError(t, pygi.Exec(`
import gc, threading
t = threading.Thread(target=gc.collect, name="cleaner")
t.start(); t.join()
`, g))
	require.NoError(t, pygi.Exec(`
t = threading.Thread(target=gc.enable, name="enabler")
t.start(); t.join()
`, g))
	require.Eventually(t, func() bool { return len(errs.All()) >= 2 }, 10*time.Second, 5*time.Millisecond)
	var msgs []string
	for _, e := range errs.All() {
		assert.Equal(t, "duet_gc.OffThreadCollection", e.Type)
		msgs = append(msgs, e.Message)
	}
	all := strings.Join(msgs, "\n")
	assert.Contains(t, all, "garbage collection (generation 2) on thread 'cleaner'")
	assert.Contains(t, all, "gc.enable() on thread 'enabler'")
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval("__import__('gc').isenabled()", nil)
		require.NoError(t, err)
		on, _ := pygi.As[bool](r)
		assert.True(t, on, "what Python asked for")
	})
}

// After the loop has returned (an app shutting down), a goroutine that
// calls Python does not release what Go dropped on its own thread: the last
// reference to a widget's wrapper may be among them, and a GTK object is
// finalised on the UI thread only.
func init() {
	lifetimeChildren["release-after-loop"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		var label atomic.Pointer[pygi.Object]
		eventloop.Invoke(func() {
			defer eventloop.Quit()
			if err = pygi.Exec(`
import threading
from gi.repository import Gtk
main = threading.get_ident()
seen = []
def make():
    w = Gtk.Label(label="x")
    w.weak_ref(lambda: seen.append(threading.get_ident() == main))
    return w
`, g); err != nil {
				return
			}
			var l *pygi.Object
			l, err = pygi.Eval("make()", g)
			label.Store(l)
		})
		if rerr := eventloop.Run(context.Background()); rerr != nil {
			return rerr
		}
		if err != nil {
			return err
		}
		done := make(chan error)
		go func() {
			label.Store(nil) // the only reference: to Go's GC and the release queue
			for range 20 {
				runtime.GC()
				time.Sleep(5 * time.Millisecond)
			}
			r, err := pygi.Eval("1", nil) // an entry on this goroutine's thread
			r.Close()
			done <- err
		}()
		if err := <-done; err != nil {
			return err
		}
		if err := pygi.Drain(); err != nil { // here, on the UI thread
			return err
		}
		// What cannot finalise a GTK object is released where it is let go.
		go func() {
			o, err := pygi.Eval("(lambda: type('Noted', (), {'__del__': lambda self: seen.append('noted')})())()", g)
			if err == nil {
				o.Close()
			}
			done <- err
		}()
		if err := <-done; err != nil {
			return err
		}
		r, err := pygi.Eval("seen", g)
		if err != nil {
			return err
		}
		fmt.Println("finalised on the UI thread:", r.String())
		return pygi.Finalize(context.Background())
	}
}

func TestNoReleaseOffTheUIThreadAfterTheLoop(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "release-after-loop")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "finalised on the UI thread: [True, 'noted']")
}

func init() {
	// A loop begun while a Finalize runs (Python on its own thread; the
	// Finalize passed its check before the loop began, and reopens the
	// gate while Python's threads end) is refused; the Finalize finishes.
	// The loop used to run, and Python was finalised under it.
	lifetimeChildren["loop-during-finalize"] = func() error {
		done := make(chan error, 1)
		go func() {
			done <- pygi.Exec("import threading, time\nthreading.Thread(target=time.sleep, args=(0.5,), name='slow', daemon=False).start()\n", nil)
		}()
		if err := <-done; err != nil {
			return err
		}
		fin := make(chan error, 1)
		go func() { fin <- pygi.Finalize(context.Background()) }()
		// Past its check: its threading shutdown waits for "slow", the
		// gate open.
		for deadline := time.Now().Add(20 * time.Second); !lifetime.FinalizeUnderWay(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return errors.New("Finalize never began")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		runErr := eventloop.Run(ctx)
		finErr := <-fin
		if finErr == nil && runErr == nil {
			return errors.New("both the loop and Finalize ran")
		}
		if !errors.Is(runErr, pygi.ErrFinalized) {
			return fmt.Errorf("Run during Finalize: got %v, want an error wrapping ErrFinalized", runErr)
		}
		return finErr
	}
}

func TestLoopBegunDuringFinalizeIsRefused(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "loop-during-finalize")
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok")
}
