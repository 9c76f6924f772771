// Package scenarios holds duet's own stress workloads (see stress/harness
// for how they are run and judged).
package scenarios

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/stress/harness"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// All returns the scenarios in the order `-scenario all` runs them.
func All() []harness.Scenario {
	return []harness.Scenario{
		{Name: "awaker", NeedsDisplay: true, CanCrashBroken: true, Run: Awaker,
			Description: "the seed's program: a toggle whose Go handler Go does not keep, clicked continuously"},
		// Each callback is disconnected (Python lets go) right after its
		// emission, before Go's GC can free it: the broken mode has nothing
		// to break here, so it is not expected to crash.
		{Name: "churn", NeedsDisplay: true, Run: Churn,
			Description: "callbacks connected to signals of new widgets, emitted, disconnected, dropped, destroyed"},
		{Name: "threads", NeedsDisplay: true, CanCrashBroken: true, Run: Threads,
			Description: "goroutines and Python threads calling Python and Go while the UI emits signals handled in Go"},
		{Name: "shared", NeedsDisplay: true, Run: Shared,
			Description: "widgets crossing between gotk4 and PyGObject, in windows created and destroyed",
			Twin:        sharedTwin, TwinArgs: []string{widgetsSource()}},
		{Name: "asyncio", NeedsDisplay: true, CanCrashBroken: true, Run: Asyncio,
			Description: "asyncio on the duet loop: Python awaiting Go async funcs made every round, tasks cancelled, Go awaiting Python"},
		{Name: "explore", NeedsDisplay: true, CanCrashBroken: true, Run: Explore,
			Description: "package explore driving a window of every kind of widget it acts on, Go handlers held by the signals"},
		{Name: "exit", Run: Exit,
			Description: "short processes that use Python from several goroutines and exit"},
	}
}

// sharedTwin is Shared's workload in pure PyGObject (see harness.Scenario).
//
//go:embed shared_twin.py
var sharedTwin string

// widgetsSource is duet's LineChart source, which the twin uses as it is:
// in the module's tree, in package widgets/kit.
func widgetsSource() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "widgets", "kit", "duet_widgets.py")
}

// warmRenderer draws one frame of a throwaway window before the workload
// starts: GTK sets its renderer up on the first frame (with Mesa's
// llvmpipe that loads LLVM, 14 MB of RSS at once), and a step that size in
// the second half of a run reads as a leak to the RSS judge.
func warmRenderer() error {
	return pygi.Exec(`
import time
from gi.repository import GLib, Gtk
w = Gtk.Window(title="warm-up")
w.present()
drawn, clock = [], None
ctx = GLib.MainContext.default()
deadline = time.monotonic() + 5
while not drawn and time.monotonic() < deadline:
    if clock is None and w.get_frame_clock() is not None:
        clock = w.get_frame_clock()
        clock.connect("after-paint", lambda c: drawn.append(True))
    if not ctx.iteration(False):
        time.sleep(0.001)
w.destroy()
`, nil)
}

// runApp runs an application for a scenario until env.Ctx ends; start runs
// on activation and returns the teardown to run (on the loop) before quit.
// Python is not finalised: the harness measures after the run.
func runApp(env *harness.Env, id string, start func(a *app.App) (stop func(), err error)) error {
	a, err := app.New(app.Options{ID: "org.duet.stress." + id, NonUnique: true, SkipFinalize: true})
	if err != nil {
		return err
	}
	var runErr error
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		if runErr == nil {
			runErr = err
		}
		errMu.Unlock()
		a.Quit()
	}
	if err := a.OnActivate(func() {
		if err := warmRenderer(); err != nil {
			fail(err)
			return
		}
		env.Baseline() // the app and the loop are set up; the workload starts now
		a.Hold()       // windows come and go: the app must outlive them
		stop, err := start(a)
		if err != nil {
			fail(err)
			return
		}
		go func() {
			<-env.Ctx.Done()
			eventloop.Invoke(func() {
				stop()
				a.Release()
				a.Quit()
			})
		}()
	}); err != nil {
		return err
	}
	failures.Store(&fail)
	if status := a.Run(context.Background(), []string{"duet-stress"}); status != 0 && runErr == nil {
		runErr = fmt.Errorf("application exited with status %d", status)
	}
	errMu.Lock()
	defer errMu.Unlock()
	return runErr
}

var failures atomic.Pointer[func(error)]

// fail stops the running scenario with an error.
func fail(err error) {
	if f := failures.Load(); f != nil {
		(*f)(err)
	}
}

func gtkNS() (*pygi.Object, error) { return pygi.Import("gi.repository.Gtk") }

// Awaker is the seed's program, toggled continuously.
func Awaker(env *harness.Env) error {
	return runApp(env, "awaker", func(a *app.App) (func(), error) {
		Gtk, err := gtkNS()
		if err != nil {
			return nil, err
		}
		win, err := Gtk.CallMethod("ApplicationWindow", pygi.Kw{"application": a.Python(), "title": "Awaker"})
		if err != nil {
			return nil, err
		}
		button, err := Gtk.CallMethod("ToggleButton", pygi.Kw{"label": "OFF"})
		if err != nil {
			return nil, err
		}
		state := false
		// The handler is created here and not kept by Go: only the signal
		// holds it (in the broken mode Go's GC frees it regardless).
		onClick, err := env.Callback(func(b *pygi.Object) {
			state = !state
			l := "OFF"
			if state {
				l = "ON"
			}
			b.CallMethod("set_label", l)
		}, "on_click")
		if err != nil {
			return nil, err
		}
		if _, err := button.CallMethod("connect", "clicked", onClick); err != nil {
			return nil, err
		}
		onClick = nil // dropped, not closed: exactly the seed's situation
		win.CallMethod("set_child", button)
		win.CallMethod("present")
		button.Close()
		clicks := int64(0)
		clicker := eventloop.Every(time.Millisecond, func() {
			child, err := win.CallMethod("get_child")
			if err != nil {
				fail(err)
				return
			}
			defer child.Close()
			clicks++
			env.Op("click %d", clicks)
			if _, err := child.CallMethod("emit", "clicked"); err != nil {
				fail(err)
				return
			}
			want := "OFF"
			if clicks%2 == 1 {
				want = "ON"
			}
			l, err := child.CallMethod("get_label")
			if err != nil {
				fail(err)
				return
			}
			if s, _ := pygi.As[string](l); s != want {
				fail(fmt.Errorf("after click %d the label is %q, want %q", clicks, s, want))
			}
			env.Iter(1)
		})
		return func() {
			clicker.Cancel()
			win.CallMethod("destroy")
			win.Close()
		}, nil
	})
}

// Churn connects new callbacks to signals of new widgets, emits, disconnects,
// drops and destroys, as fast as the loop allows.
func Churn(env *harness.Env) error {
	return runApp(env, "churn", func(a *app.App) (func(), error) {
		Gtk, err := gtkNS()
		if err != nil {
			return nil, err
		}
		win, err := Gtk.CallMethod("ApplicationWindow", pygi.Kw{"application": a.Python(), "title": "churn"})
		if err != nil {
			return nil, err
		}
		host, err := Gtk.CallMethod("Box")
		if err != nil {
			return nil, err
		}
		win.CallMethod("set_child", host)
		win.CallMethod("present")
		n := int64(0)
		step := func() error {
			n++
			env.Op("churn %d: new button", n)
			btn, err := Gtk.CallMethod("Button", pygi.Kw{"label": fmt.Sprint(n)})
			if err != nil {
				return err
			}
			defer btn.Close()
			if _, err := host.CallMethod("append", btn); err != nil {
				return err
			}
			hits := 0
			cb, err := env.Callback(func(*pygi.Object) { hits++ }, "on_clicked")
			if err != nil {
				return err
			}
			id, err := btn.CallMethod("connect", "clicked", cb)
			if err != nil {
				return err
			}
			if !env.Broken {
				cb.Close() // only the signal holds it now
			} // the broken mode must be left to Go's GC, as in the seed
			env.Op("churn %d: emit", n)
			if _, err := btn.CallMethod("emit", "clicked"); err != nil {
				return err
			}
			if hits != 1 {
				return fmt.Errorf("churn %d: handler ran %d times", n, hits)
			}
			env.Op("churn %d: disconnect and destroy", n)
			if _, err := btn.CallMethod("disconnect", id); err != nil {
				return err
			}
			if _, err := host.CallMethod("remove", btn); err != nil {
				return err
			}
			env.Iter(1)
			return nil
		}
		tick := eventloop.Every(time.Millisecond, func() {
			for range 20 {
				if err := step(); err != nil {
					fail(err)
					return
				}
			}
		})
		return func() {
			tick.Cancel()
			win.CallMethod("destroy")
			win.Close()
			host.Close()
		}, nil
	})
}

// Threads has goroutines and Python threads calling across while the UI
// emits signals handled by Go callbacks.
func Threads(env *harness.Env) error {
	return runApp(env, "threads", func(a *app.App) (func(), error) {
		g, err := pygi.NewGlobals()
		if err != nil {
			return nil, err
		}
		var handled atomic.Int64
		handler, err := env.Callback(func(_ *pygi.Object, n int) int { handled.Add(1); return n + 1 }, "go_handler")
		if err != nil {
			return nil, err
		}
		if err := g.SetItem("go_handler", handler); err != nil {
			return nil, err
		}
		handler = nil // Python holds it (globals, signal, threads)
		if err := pygi.Exec(`
import threading, time
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"ping": (GObject.SignalFlags.RUN_LAST, int, (int,))}
emitter = Emitter()
emitter.connect("ping", go_handler)
stop = threading.Event()
def py_worker():
    i = 0
    while not stop.is_set():
        i += 1
        if go_handler(None, i) != i + 1:
            raise RuntimeError("wrong answer from Go")
        if i % 50 == 0:
            time.sleep(0.001)
workers = [threading.Thread(target=py_worker, daemon=True) for _ in range(2)]
for w in workers: w.start()
`, g); err != nil {
			return nil, err
		}
		emitter, err := g.Item("emitter")
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(env.Ctx)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64) // bounded work posted to the loop
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					r, err := pygi.Eval(fmt.Sprintf("sum(range(%d))", i%100), nil)
					if err != nil {
						fail(err)
						return
					}
					r.Close()
					o, err := pygi.New(map[string]any{"w": w, "i": i, "l": []int{1, 2, 3}})
					if err != nil {
						fail(err)
						return
					}
					if i%2 == 0 {
						o.Close()
					} // else: dropped, for the GC to release
					sem <- struct{}{}
					eventloop.Invoke(func() {
						defer func() { <-sem }()
						if ctx.Err() != nil {
							return // stopping: the emitter may be gone
						}
						env.Op("emit ping %d from goroutine %d", i, w)
						r, err := emitter.CallMethod("emit", "ping", i)
						if err != nil {
							fail(err)
							return
						}
						if n, _ := pygi.As[int64](r); n != int64(i+1) {
							fail(fmt.Errorf("ping %d answered %d", i, n))
						}
						r.Close()
						env.Iter(1)
					})
				}
			}()
		}
		return func() {
			cancel()
			// Clean up off the loop: the goroutines may be waiting for it.
			// The harness waits for the callbacks to be released.
			go func() {
				wg.Wait()
				if err := pygi.Exec("stop.set()\nfor w in workers: w.join()\n"+
					"emitter.disconnect_by_func(go_handler)\ndel go_handler, emitter\n", g); err != nil {
					fmt.Fprintln(os.Stderr, "threads: cleanup:", err)
				}
				g.Close()
			}()
		}, nil
	})
}

// Shared makes windows mixing gotk4 and PyGObject widgets, shows and
// destroys them, and checks that their GObjects are finalised.
func Shared(env *harness.Env) error {
	var watches []*widgets.Watch
	err := runApp(env, "shared", func(a *app.App) (func(), error) {
		Gtk, err := gtkNS()
		if err != nil {
			return nil, err
		}
		lib, err := kit.Library()
		if err != nil {
			return nil, err
		}
		n := int64(0)
		step := func() error {
			n++
			env.Op("shared %d: build", n)
			var win *pygi.Object
			if n%2 == 0 { // a window made in Go ...
				gw := gtk.NewWindow()
				widgets.Track(gw)
				win, err = widgets.ToPython(gw)
			} else { // ... or in Python
				win, err = Gtk.CallMethod("Window")
			}
			if err != nil {
				return err
			}
			defer win.Close()
			box := gtk.NewBox(gtk.OrientationVertical, 2)
			widgets.Track(box)
			goLabel := gtk.NewLabel("gotk4 label")
			widgets.Track(goLabel)
			box.Append(goLabel)
			pyLabel, err := Gtk.CallMethod("Label", pygi.Kw{"label": "PyGObject label"})
			if err != nil {
				return err
			}
			defer pyLabel.Close()
			gl, err := widgets.Cast[*gtk.Label](pyLabel) // a Python widget seen by gotk4
			if err != nil {
				return err
			}
			box.Append(gl)
			chart, err := lib.New("LineChart", pygi.Kw{"title": "x"})
			if err != nil {
				return err
			}
			defer chart.Close()
			if r, err := widgets.CallMethod(box, "append", chart.Object); err != nil {
				return err
			} else {
				r.Close()
			}
			pyBox, err := widgets.ToPython(box)
			if err != nil {
				return err
			}
			defer pyBox.Close()
			if _, err := pyBox.CallMethod("get_first_child"); err != nil {
				return err
			}
			if _, err := win.CallMethod("set_child", pyBox); err != nil {
				return err
			}
			if n%25 == 1 {
				for _, o := range []*pygi.Object{win, pyBox, pyLabel, chart.Object} {
					w, err := widgets.WatchFinalize(o)
					if err != nil {
						return err
					}
					watches = append(watches, w)
				}
			}
			if n%1000 == 0 {
				// Watches of objects finalised by now are done with: the list
				// of those kept must not itself grow (it did: 4 of every 25
				// iterations, about 2.5 MB a minute, read as duet's growth).
				kept := watches[:0]
				for _, w := range watches {
					if !w.Finalized() {
						kept = append(kept, w)
					}
				}
				clear(watches[len(kept):])
				watches = kept
			}
			// Presenting every window would measure GTK rather than duet: a
			// pure PyGObject Gtk.Application that presents and destroys
			// windows grows by about 9 kB per window under Xvfb. What grows
			// still is compared with the same workload in pure PyGObject,
			// run beside this one (shared_twin.py; the report gives both).
			if n%100 == 1 {
				win.CallMethod("present")
			}
			env.Op("shared %d: destroy", n)
			if _, err := win.CallMethod("destroy"); err != nil {
				return err
			}
			env.Iter(1)
			return nil
		}
		tick := eventloop.Every(2*time.Millisecond, func() {
			for range 4 {
				if err := step(); err != nil {
					fail(err)
					return
				}
			}
		})
		return tick.Cancel, nil
	})
	if err != nil {
		return err
	}
	// Every sampled GObject must be finalised once both sides let go.
	for range 100 {
		alive := 0
		for _, w := range watches {
			if !w.Finalized() {
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		eventloop.Collect()
		// The loop has ended: release what gotk4 forgot on this thread.
		hooks.Reap()
		lifetime.FlushContext(100)
		time.Sleep(5 * time.Millisecond)
	}
	var alive []string
	for _, w := range watches {
		if !w.Finalized() {
			alive = append(alive, w.Type)
		}
	}
	return fmt.Errorf("%d of %d sampled GObjects never finalised: %s", len(alive), len(watches), strings.Join(alive, ", "))
}

// Exit starts short processes (this binary in ExitChild mode) that use
// Python from several goroutines and exit; each must exit 0, quietly.
func Exit(env *harness.Env) error {
	modes := []string{"finalize", "no-finalize", "finalize-from-goroutine"}
	for i := 0; env.Ctx.Err() == nil; i++ {
		mode := modes[i%len(modes)]
		env.Op("exit child %d (%s)", i, mode)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, env.Exe, "-exit-child", mode)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		hung := ctx.Err() != nil
		cancel()
		if hung {
			return fmt.Errorf("exit child %d (%s) hung", i, mode)
		}
		if err != nil || stderr.Len() > 0 {
			return fmt.Errorf("exit child %d (%s): %v\n%s", i, mode, err, stderr.String())
		}
		env.Iter(1)
	}
	return nil
}

// ExitChild is the short process Exit starts: Python used from 4
// goroutines, then an exit in the given mode. It returns the exit status.
func ExitChild(mode string) int {
	if err := pygi.Init(pygi.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := pygi.Eval("[i * i for i in range(50)]", nil)
				if errors.Is(err, pygi.ErrFinalized) {
					return
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				r.Close()
			}
		}()
	}
	time.Sleep(30 * time.Millisecond)
	switch mode {
	case "finalize":
		// While the goroutines still call in: they get ErrFinalized.
		if err := pygi.Finalize(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		close(stop)
		wg.Wait()
	case "finalize-from-goroutine":
		close(stop)
		wg.Wait()
		done := make(chan error)
		go func() { done <- pygi.Finalize(context.Background()) }()
		if err := <-done; !errors.Is(err, pygi.ErrWrongThread) {
			fmt.Fprintln(os.Stderr, "Finalize off the main thread:", err)
			return 1
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "no-finalize":
		// Exit with goroutines inside Python.
	}
	return 0
}
