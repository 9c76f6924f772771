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
	"github.com/duet-gtk/duet/pygi"
)

// A lazy handler on the UI thread that, before using Python itself, waits
// for a goroutine by iterating the main context (a modal wait): an Invoke
// that the nested iteration dispatches, posted by that goroutine, is not
// the handler's use of Python (it took the handler's hold, and the UI
// thread kept the GIL while it polled: the goroutine's next pygi call
// waited for the handler's end, which waited for it).
func TestLazyHandlerWaitingInANestedLoop(t *testing.T) {
	require.NoError(t, pygi.RequireVersion("GObject", "2.0"))
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec(`
from gi.repository import GObject, GLib
class E(GObject.Object):
    __gsignals__ = {"go": (GObject.SignalFlags.RUN_LAST, None, ())}
e = E()
def later():
    GLib.timeout_add(1, lambda: e.emit("go") and False)
`, g))
	e, err := pygi.Eval("e", g)
	require.NoError(t, err)
	defer e.Close()
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
				deadline := time.Now().Add(5 * time.Second)
				for !done.Load() && time.Now().Before(deadline) {
					capi.LoopIterate(false)
					time.Sleep(time.Millisecond)
				}
				if done.Load() {
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
