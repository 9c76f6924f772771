package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// Shutdown's bounds and its reports: each path that used to hang, crash or
// report success after a failure, in a child process.
func init() {
	// A Python thread that is not a daemon never ends: threading's
	// shutdown (inside Py_FinalizeEx) would wait for it for ever. Run waits
	// FinalizeTimeout, then gives up finalising and says why.
	children["nondaemon-thread"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.NonDaemon", NonUnique: true, FinalizeTimeout: time.Second})
		must(pygi.Exec(`
import threading, time
def poll():
    while True:
        time.sleep(0.05)
threading.Thread(target=poll, name="poller").start()
`, nil))
		must(a.OnActivate(func() {
			pyWindow(a, "with a poller")
			if os.Getenv("QUIT") != "" {
				eventloop.After(50*time.Millisecond, a.Quit)
			} else {
				fmt.Println("ready")
			}
		}))
		start := time.Now()
		status := a.Run(context.Background(), prog)
		fmt.Printf("Run returned %d after %.1f s\n", status, time.Since(start).Seconds())
		return status
	}
	// The same thread ends within the timeout: Python is finalised.
	children["nondaemon-thread-ends"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.NonDaemonEnds", NonUnique: true, FinalizeTimeout: 5 * time.Second})
		must(pygi.Exec(`
import threading, time
threading.Thread(target=time.sleep, args=(0.5,), name="short").start()
`, nil))
		must(a.OnActivate(func() { eventloop.After(50*time.Millisecond, a.Quit) }))
		status := a.Run(context.Background(), prog)
		fmt.Println("phase", lifetime.Current())
		return status
	}
	// Quit while one goroutine is in a 3 s Python call and four others call
	// Python in a loop: the long call finishes, Python is finalised, the
	// others see ErrFinalized, status 0.
	children["long-call-at-quit"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.LongCall", NonUnique: true, FinalizeTimeout: 5 * time.Second})
		var wg sync.WaitGroup
		var finalized sync.Map
		begin := func() {
			started := make(chan struct{})
			go func() {
				close(started)
				_, err := pygi.Eval("__import__('time').sleep(3)", nil)
				fmt.Println("long call:", err)
			}()
			<-started
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						r, err := pygi.Eval("sum(range(100))", nil)
						if errors.Is(err, pygi.ErrFinalized) {
							finalized.Store(i, true)
							return
						}
						if err != nil {
							fmt.Fprintln(os.Stderr, "looping goroutine:", err)
							return
						}
						r.Close()
					}
				}()
			}
		}
		must(a.OnActivate(func() {
			begin()
			eventloop.After(100*time.Millisecond, a.Quit)
		}))
		start := time.Now()
		status := a.Run(context.Background(), prog)
		took := time.Since(start)
		wg.Wait()
		n := 0
		finalized.Range(func(_, _ any) bool { n++; return true })
		fmt.Printf("status %d after %.1f s, phase %v, %d of 4 saw ErrFinalized\n", status, took.Seconds(), lifetime.Current(), n)
		return status
	}
	// GTK used after Run returned: an error dialog, a window. Nothing of
	// Python's may still be reachable from GTK's objects then.
	var adj, adj2 *gtk.Adjustment
	children["gtk-after-run"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.After", NonUnique: true, Census: true})
		must(pygi.Exec("import asyncio\n", nil))                           // asyncio's source on the loop
		_, err := eventloop.RouteLogs(slog.NewTextHandler(os.Stderr, nil)) // GLib's log handler
		must(err)
		must(a.OnActivate(func() {
			pyWindow(a, "first")
			// A Python window outside the application, with a Python
			// handler, and a Python timer still pending at the end.
			must(pygi.Exec(`
from gi.repository import GLib, Gtk
stray = Gtk.Window(title="not the app's")
stray.connect("destroy", lambda w: print("stray destroyed"))
stray.present()
GLib.timeout_add(150, lambda: print("tick", flush=True) or True)
# Python handlers on objects that outlive Python: GTK's settings, and an
# adjustment Go keeps.
Gtk.Settings.get_default().connect("notify::gtk-application-prefer-dark-theme", lambda *a: print("theme"))
`, nil))
			adj = gtk.NewAdjustment(0, 0, 10, 1, 1, 0)
			adjPy, err := widgets.ToPython(adj)
			must(err)
			onValue, err := pygi.Eval("lambda a: print('value', a.get_value())", nil)
			must(err)
			_, err = adjPy.CallMethod("connect", "value-changed", onValue)
			must(err)
			// A binding with a Python transform to another adjustment Go
			// keeps, and a class of the app's with a disconnect of its own.
			adj2 = gtk.NewAdjustment(0, 0, 100, 1, 1, 0)
			adj2Py, err := widgets.ToPython(adj2)
			must(err)
			g, err := pygi.NewGlobals()
			must(err)
			must(g.SetItem("a", adjPy))
			must(g.SetItem("b", adj2Py))
			must(pygi.Exec(`
from gi.repository import GObject
a.bind_property("value", b, "value", GObject.BindingFlags.DEFAULT, lambda binding, v: v * 2)
class Client(GObject.Object):
    def disconnect(self):
        raise RuntimeError("the app's own disconnect, not a handler's")
client = Client()
client.connect("notify", lambda *x: None)
keep = [client]
`, g))
			gw := gtk.NewApplicationWindow(a.Gtk())
			gw.SetTitle("made in Go")
			gw.Present()
			eventloop.After(100*time.Millisecond, a.Quit)
		}))
		status := a.Run(context.Background(), prog)
		fmt.Println("phase", lifetime.Current())
		time.Sleep(300 * time.Millisecond) // the Python timer is due
		gtk.SettingsGetDefault().SetObjectProperty("gtk-application-prefer-dark-theme", true)
		adj.SetValue(5) // its handler and its binding's transform are gone
		fmt.Println("bound value after Run:", adj2.Value())
		for range 3 {
			w := gtk.NewWindow()
			w.SetTitle("after the app")
			w.Present()
			lbl := gtk.NewLabel("error: something went wrong")
			w.SetChild(lbl)
			lifetime.FlushContext(1000)
			w.Destroy()
			lifetime.FlushContext(1000)
		}
		fmt.Println("toplevels left after Run:", len(gtk.WindowListToplevels()))
		fmt.Println("windows made after Run")
		return status
	}
	// HostSignals: SIGINT is the program's, even with PyGObject's own
	// Ctrl+C handling in Gtk.Application.run; the app goes on until the
	// program quits it.
	children["host-signals"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.HostSignals", NonUnique: true, HostSignals: true, SkipFinalize: true})
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT)
		must(a.OnActivate(func() {
			pyWindow(a, "the host decides")
			fmt.Println("ready")
			go func() {
				<-ch
				fmt.Println("host: got SIGINT, keeps running for now")
				time.Sleep(300 * time.Millisecond)
				a.Quit()
			}()
		}))
		status := a.Run(context.Background(), prog)
		r, err := pygi.Eval("__import__('signal').getsignal(2) is __import__('signal').default_int_handler", nil)
		if err == nil {
			fmt.Println("Python's SIGINT back to default_int_handler:", r.String())
		}
		return status
	}
	// stdout on /dev/full: Python's final flush fails, output is lost, and
	// the status says so (python3 exits 120).
	children["lost-output"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.Lost", NonUnique: true})
		must(a.OnActivate(func() {
			must(pygi.Exec("print('buffered, never written')\n", nil))
			eventloop.After(50*time.Millisecond, a.Quit)
		}))
		return a.Run(context.Background(), prog)
	}
}

func TestShutdownWithANonDaemonPythonThread(t *testing.T) {
	t.Run("SIGTERM", func(t *testing.T) {
		t.Parallel()
		r := runChild(t, "nondaemon-thread", func(cmd *exec.Cmd, out io.Reader) {
			buf := make([]byte, 6)
			if _, err := io.ReadFull(out, buf); err == nil && string(buf) == "ready\n" {
				cmd.Process.Signal(syscall.SIGTERM)
			}
		})
		assert.Equal(t, 143, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
		assert.Contains(t, r.err, "poller", "the message names the thread")
		assert.Contains(t, r.err, "not daemons")
		assert.NotContains(t, r.err, "not running")
		assert.Regexp(t, `Run returned 143 after [12]\.\d s`, r.out, "bounded by FinalizeTimeout")
	})
	t.Run("Quit", func(t *testing.T) {
		t.Parallel()
		r := runChild(t, "nondaemon-thread", nil, "QUIT=1")
		assert.Equal(t, 1, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
		assert.Contains(t, r.err, "Python not finalised")
		assert.Contains(t, r.err, "poller")
		assert.Regexp(t, `Run returned 1 after [12]\.\d s`, r.out)
	})
	t.Run("the thread ends in time", func(t *testing.T) {
		t.Parallel()
		r := runChild(t, "nondaemon-thread-ends", nil)
		assert.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
		assert.Contains(t, r.out, "phase finalized")
		assert.Empty(t, r.err)
	})
}

func TestShutdownWaitsForALongCall(t *testing.T) {
	r := runChild(t, "long-call-at-quit", nil)
	assert.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
	assert.Contains(t, r.out, "long call: <nil>")
	assert.Contains(t, r.out, "phase finalized, 4 of 4 saw ErrFinalized")
	assert.Empty(t, r.err)
}

func TestGTKAfterRun(t *testing.T) {
	r := runChild(t, "gtk-after-run", nil)
	assert.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%.4000s", r.out, r.err)
	assert.Contains(t, r.out, "phase finalized")
	assert.Contains(t, r.out, "toplevels left after Run: 0")
	assert.Contains(t, r.out, "windows made after Run")
}

func TestHostSignalsLeaveSIGINTToTheProgram(t *testing.T) {
	r := runChild(t, "host-signals", func(cmd *exec.Cmd, out io.Reader) {
		buf := make([]byte, 6)
		if _, err := io.ReadFull(out, buf); err == nil && string(buf) == "ready\n" {
			cmd.Process.Signal(syscall.SIGINT)
		}
	})
	assert.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
	assert.Contains(t, r.out, "host: got SIGINT, keeps running for now")
	assert.Contains(t, r.out, "Python's SIGINT back to default_int_handler: True")
}

func TestLostOutputIsAFailure(t *testing.T) {
	r := runChild(t, "lost-output", nil, "STDOUT_TO=/dev/full", "PYTHONUNBUFFERED=")
	assert.Equal(t, 120, r.code, "as python3 exits when its final flush fails; stderr:\n%s", r.err)
	assert.Contains(t, r.err, "output was lost")
}
