package widgets_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

func TestGotk4FinalizersWithoutALoop(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "WIDGETS_CHILD=gotk4-finalizers-without-loop")
	require.Equal(t, 0, testutil.ExitCode(t, err), "stderr:\n%s", errOut)
	assert.Contains(t, out, "ok")
}
