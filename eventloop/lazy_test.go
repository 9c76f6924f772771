package eventloop_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// lazyEmitterNS: a namespace with e, a GObject whose "go" signal later()
// emits from a GLib timeout (so from the loop), and what more holds.
func lazyEmitterNS(t *testing.T, more string) (g, e *pygi.Object) {
	t.Helper()
	require.NoError(t, pygi.RequireVersion("GObject", "2.0"))
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	require.NoError(t, pygi.Exec(more+`
from gi.repository import GObject, GLib
class E(GObject.Object):
    __gsignals__ = {"go": (GObject.SignalFlags.RUN_LAST, None, ())}
e = E()
def later():
    GLib.timeout_add(1, lambda: e.emit("go") and False)
`, g))
	e, err = pygi.Eval("e", g)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return g, e
}

// modalWait iterates the main context, as a modal dialog's wait does,
// until done or d has passed; it reports done.
func modalWait(done *atomic.Bool, d time.Duration) bool {
	for deadline := time.Now().Add(d); !done.Load() && time.Now().Before(deadline); {
		capi.LoopIterate(false)
		time.Sleep(time.Millisecond)
	}
	return done.Load()
}

// A lazy handler on the UI thread that, before using Python itself, waits
// for a goroutine by iterating the main context (a modal wait): an Invoke
// that the nested iteration dispatches, posted by that goroutine, is not
// the handler's use of Python (it took the handler's hold, and the UI
// thread kept the GIL while it polled: the goroutine's next pygi call
// waited for the handler's end, which waited for it).
func TestLazyHandlerWaitingInANestedLoop(t *testing.T) {
	g, e := lazyEmitterNS(t, "")
	for _, invoke := range []bool{false, true} {
		t.Run(map[bool]string{true: "invoke", false: "no invoke"}[invoke], func(t *testing.T) {
			result := make(chan string, 1)
			id, err := callbacks.Connect(e, "go", func(self *pygi.Object) {
				var done atomic.Bool
				go func() {
					if invoke {
						eventloop.Invoke(func() {
							if r, err := pygi.Eval("1", nil); err == nil {
								r.Close()
							}
						})
					}
					time.Sleep(50 * time.Millisecond) // the Invoke has run by now
					if r, err := pygi.Eval("2", nil); err == nil {
						r.Close()
					}
					done.Store(true)
				}()
				if modalWait(&done, 5*time.Second) {
					result <- "goroutine done"
				} else {
					result <- "goroutine stuck (handler attached: " + map[bool]string{true: "yes", false: "no"}[capi.Attached()] + ")"
				}
			})
			require.NoError(t, err)
			defer callbacks.Disconnect(e, id)
			require.NoError(t, pygi.Exec("later()", g))
			select {
			case r := <-result:
				assert.Equal(t, "goroutine done", r)
			case <-time.After(20 * time.Second):
				t.Fatal("no result")
			}
		})
	}
}

// A lazy handler in a modal wait (a nested loop) that, before its own
// first use of Python, waits for a goroutine using Python, while the
// nested loop dispatches a GLib idle written in C that emits a signal to a
// Go handler run holding the GIL: that handler is not the lazy one's use
// of Python (its entry took the lazy handler's hold, and the UI thread
// kept the GIL while it polled: the goroutine waited for the handler,
// which waited for it).
func TestLazyHandlerWaitingInANestedLoopThatRunsAHandler(t *testing.T) {
	g, e := lazyEmitterNS(t, testutil.GPointerPy+`
import ctypes
from gi.repository import Gio
c2 = Gio.Cancellable()
glib = ctypes.CDLL("libglib-2.0.so.0")
gio = ctypes.CDLL("libgio-2.0.so.0")
glib.g_idle_add_once.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
cancel = ctypes.cast(gio.g_cancellable_cancel, ctypes.c_void_p)
def arm():
    c2.reset()
    glib.g_idle_add_once(cancel, addr(c2))  # a C source: cancels c2 from the loop
`)
	c2, err := pygi.Eval("c2", g)
	require.NoError(t, err)
	defer c2.Close()
	var ran atomic.Int32
	hid, err := callbacks.Connect(c2, "cancelled", func(self *pygi.Object) bool { ran.Add(1); return false })
	require.NoError(t, err)
	defer callbacks.Disconnect(c2, hid)

	result := make(chan string, 1)
	id, err := callbacks.Connect(e, "go", func(self *pygi.Object) {
		t.Logf("lazy handler start: attached=%v", capi.Attached())
		var done atomic.Bool
		go func() {
			if err := pygi.Exec("arm()", g); err != nil { // the goroutine arms the C idle
				t.Log(err)
			}
			for i := 0; i < 500 && ran.Load() == 0; i++ {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			if r, err := pygi.Eval("2", nil); err == nil {
				r.Close()
			}
			done.Store(true)
		}()
		ok := modalWait(&done, 3*time.Second)
		att := capi.Attached()
		result <- map[bool]string{true: "goroutine done", false: "goroutine stuck"}[ok] +
			map[bool]string{true: " (attached after nested loop)", false: ""}[att]
	})
	require.NoError(t, err)
	defer callbacks.Disconnect(e, id)
	require.NoError(t, pygi.Exec("later()", g))
	select {
	case r := <-result:
		assert.Equal(t, "goroutine done", r)
		assert.EqualValues(t, 1, ran.Load(), "GIL-path handler ran from the nested loop")
	case <-time.After(20 * time.Second):
		t.Fatal("no result")
	}
}
