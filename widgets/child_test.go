package widgets_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// Child programs that run without a loop, on the main thread.
var children = map[string]func() error{
	// gotk4's box finalizer queues the removal of its toggle reference with
	// g_main_context_invoke while holding its own lock. With no loop
	// running and nobody owning the default context, GLib would run the
	// removal at once on the finalizer goroutine, which takes the same lock
	// again: a deadlock that stops every finalizer in the process. duet
	// keeps the UI thread the owner of the default context, so the removal
	// waits for the next Flush, on the UI thread.
	"gotk4-finalizers-without-loop": func() error {
		if err := widgets.InitGTK(); err != nil {
			return err
		}
		// The mechanism itself: g_main_context_invoke from another thread,
		// with no loop running, is queued for the UI thread instead of
		// running on the caller there and then.
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import threading
from gi.repository import GLib
ran = []
def fn(*args):
    ran.append(threading.get_ident())
    return False
t = threading.Thread(target=lambda: GLib.MainContext.default().invoke_full(GLib.PRIORITY_DEFAULT, fn))
t.start(); t.join()
queued = not ran
`, g); err != nil {
			return err
		}
		if _, err := lifetime.FlushContext(100); err != nil {
			return err
		}
		if err := pygi.Exec("assert queued, 'ran synchronously on the calling thread'\n"+
			"assert ran == [threading.main_thread().ident], ran\n", g); err != nil {
			return err
		}
		for round := range 5 {
			box := gtk.NewBox(gtk.OrientationVertical, 0)
			for range 200 {
				l := gtk.NewLabel("x")
				box.Append(l)
				box.Remove(l) // GTK lets go: gotk4's toggle reference is the last one
			}
			box = nil
			for range 4 {
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
			// Finalizers still run: a fresh one must, promptly.
			ran := make(chan struct{})
			s := new([16]byte)
			runtime.SetFinalizer(s, func(*[16]byte) { close(ran) })
			s = nil
			runtime.GC()
			select {
			case <-ran:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("round %d: Go's finalizers stopped (deadlocked in gotk4's box finalizer?)", round)
			}
			if _, err := widgets.Reap(); err != nil {
				return err
			}
			if _, err := lifetime.FlushContext(10000); err != nil {
				return err
			}
		}
		return nil
	},
}

func init() {
	// gotk4's typed handlers on Go-made widgets whose signals fire when
	// the widget is disposed (destroy, unrealize, notify): duet releases
	// gotk4's references once gotk4 has let go of its box, the widget's
	// dispose then emits, and gotk4's trampoline, finding no box, panicked
	// inside GLib's emission (SIGSEGV: a Go panic across C frames).
	children["gotk4-handlers-at-dispose"] = func() error {
		if err := widgets.InitGTK(); err != nil {
			return err
		}
		var watches []*widgets.Watch
		fired, destroyed := 0, 0
		build := func() error {
			win := gtk.NewWindow()
			win.ConnectDestroy(func() { destroyed++ })
			box := gtk.NewBox(gtk.OrientationVertical, 0)
			box.ConnectUnrealize(func() { fired++ })
			button := gtk.NewButtonWithLabel("from Go")
			button.ConnectDestroy(func() { fired++ })
			button.NotifyProperty("parent", func() { fired++ })
			button.Connect("unmap", func() { fired++ }) // gotk4's untyped closure
			box.Append(button)
			win.SetChild(box)
			win.Present()
			for _, o := range []coreglibObjector{win, box, button} {
				w, err := widgets.WatchFinalize(o)
				if err != nil {
					return err
				}
				watches = append(watches, w)
			}
			eventloop.After(20*time.Millisecond, win.Destroy)
			return nil
		}
		var runErr error
		for i := range 10 {
			eventloop.After(time.Duration(i)*30*time.Millisecond, func() {
				if err := build(); err != nil && runErr == nil {
					runErr = err
				}
			})
		}
		gc := eventloop.Every(10*time.Millisecond, func() { runtime.GC() })
		deadline := time.Now().Add(20 * time.Second)
		eventloop.Every(50*time.Millisecond, func() {
			done := len(watches) == 30
			for _, w := range watches {
				done = done && w.Finalized()
			}
			if done || time.Now().After(deadline) || runErr != nil {
				gc.Cancel()
				eventloop.Quit()
			}
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if runErr != nil {
			return runErr
		}
		alive := 0
		for _, w := range watches {
			if !w.Finalized() {
				alive++
			}
		}
		if alive > 0 {
			return fmt.Errorf("%d of %d gotk4-made widgets never finalised", alive, len(watches))
		}
		// gotk4's own handlers on a released window do not run (gotk4 let
		// go of them); before the fix they panicked. Those that fired
		// while gotk4 held the widgets (unrealize, unmap) did run.
		fmt.Println("destroy handlers that ran:", destroyed, "others:", fired)
		return nil
	}
}

type coreglibObjector = coreglib.Objector

func init() {
	// A destroyed window stays a window: presented again it works, with its
	// child and its handlers, as under gotk4 or PyGObject alone (duet once
	// disposed destroyed windows gotk4 held: a Dialog's add_button then
	// crashed, an ApplicationWindow's present too).
	children["destroyed-windows-stay-usable"] = func() error {
		if err := widgets.InitGTK(); err != nil {
			return err
		}
		m, err := widgets.LoadSource("destroyed_dialog", `
from gi.repository import Gtk
log = []
d = Gtk.Dialog(title="d", use_header_bar=1)
d.add_button("OK", 1)
d.connect("close-request", lambda w: log.append("close-request") or False)
`)
		if err != nil {
			return err
		}
		d, err := m.Object.Attr("d")
		if err != nil {
			return err
		}
		if _, err := widgets.Cast[gtk.Widgetter](d); err != nil { // Go has seen it
			return err
		}
		gw := gtk.NewWindow()
		gw.SetChild(gtk.NewLabel("kept"))
		var runErr error
		step := func(f func() error) func() {
			return func() {
				if err := f(); err != nil && runErr == nil {
					runErr = err
				}
			}
		}
		eventloop.Invoke(step(func() error {
			gw.Present()
			_, err := d.CallMethod("present")
			return err
		}))
		eventloop.After(100*time.Millisecond, step(func() error {
			gw.Destroy()
			_, err := d.CallMethod("destroy")
			return err
		}))
		gc := eventloop.Every(10*time.Millisecond, func() { runtime.GC() })
		eventloop.After(400*time.Millisecond, step(func() error {
			gw.Present()
			if gw.Child() == nil {
				return fmt.Errorf("the destroyed gotk4 window lost its child")
			}
			if _, err := d.CallMethod("present"); err != nil {
				return err
			}
			if _, err := d.CallMethod("close"); err != nil {
				return err
			}
			if _, err := d.CallMethod("add_button", "Again", 2); err != nil {
				return err
			}
			log, err := m.Object.Attr("log")
			if err != nil {
				return err
			}
			if n, _ := log.Len(); n != 1 {
				return fmt.Errorf("the dialog's Python close-request handler ran %d times, want 1", n)
			}
			return nil
		}))
		eventloop.After(600*time.Millisecond, func() { gc.Cancel(); eventloop.Quit() })
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		return runErr
	}
}

func childMain(name string) int {
	fn, ok := children[name]
	if !ok {
		return 2
	}
	if err := fn(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

func TestGotk4HandlersThatFireAtDisposeAreSafe(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "WIDGETS_CHILD=gotk4-handlers-at-dispose")
	require.Equal(t, 0, testutil.ExitCode(t, err), "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok")
	assert.NotContains(t, errOut, "cannot be resurrected")
}

func TestDestroyedWindowsStayUsable(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "WIDGETS_CHILD=destroyed-windows-stay-usable")
	require.Equal(t, 0, testutil.ExitCode(t, err), "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok")
}

func TestGotk4FinalizersWithoutALoop(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "WIDGETS_CHILD=gotk4-finalizers-without-loop")
	require.Equal(t, 0, testutil.ExitCode(t, err), "stderr:\n%s", errOut)
	assert.Contains(t, out, "ok")
}
