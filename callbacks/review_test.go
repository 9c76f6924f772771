package callbacks_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
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

// From the review of the safety work, each in a child process.
func init() {
	// An exception in flight in a Python thread (Python at depth 0) while
	// the last reference to a GObject with a duet-connected handler goes:
	// the closure's invalidation is an entry that must leave the exception
	// as it found it.
	scenarios["exception-in-flight"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("from gi.repository import GObject\nimport threading\nholder = [GObject.Object()]\nout = []\n", g); err != nil {
			return err
		}
		h, _ := g.Item("holder")
		o, err := h.Item(0)
		if err != nil {
			return err
		}
		if _, err := callbacks.Connect(o, "notify", func() {}); err != nil {
			return err
		}
		o.Close()
		h.Close()
		if err := pygi.Exec(`
def boom():
    raise ValueError("the real error")
def f(*a): pass
def run():
    try:
        f(holder.pop(), boom())  # the popped object is a temporary when boom raises
    except ValueError as e:
        out.append(repr(e))
    except BaseException as e:
        out.append("something else: " + repr(e))
t = threading.Thread(target=run)
t.start()
t.join()
`, g); err != nil {
			return err
		}
		r, err := pygi.Eval("out", g)
		if err != nil {
			return err
		}
		fmt.Println("caught:", r.String(), "leaked:", capi.LeakedExceptions())
		return pygi.Finalize(context.Background())
	}
	// Threads that end with thread-local data whose __del__ calls Go.
	scenarios["thread-locals-call-go"] = func() error {
		var mu sync.Mutex
		calls := 0
		cb, err := callbacks.New(func() { mu.Lock(); calls++; mu.Unlock() }, callbacks.Name("from_del"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		g.SetItem("go_cb", cb)
		if err := pygi.Exec("import threading\nloc = threading.local()\nclass D:\n    def __del__(self):\n        go_cb()\n", g); err != nil {
			return err
		}
		for range 50 {
			done := make(chan error)
			go func() {
				runtime.LockOSThread() // the thread ends with the goroutine
				done <- pygi.Exec("loc.d = D()", g)
			}()
			if err := <-done; err != nil {
				return err
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			pygi.Drain() // where the ended threads' states are deleted
			mu.Lock()
			n := calls
			mu.Unlock()
			if n == 50 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		fmt.Println("__del__ called Go:", calls, "of 50")
		mu.Unlock()
		return pygi.Finalize(context.Background())
	}
	// C threads (ctypes pthreads) that call a Go callback making a duet
	// call: their temporary thread states are theirs, and go with them.
	scenarios["foreign-threads"] = func() error {
		cb, err := callbacks.New(func() error {
			o, err := pygi.Eval("1 + 1", nil)
			o.Close()
			return err
		}, callbacks.Name("go_cb"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		g.SetItem("go_cb", cb)
		before := capi.ThreadStates()
		if err := pygi.Exec(`
import ctypes
libc = ctypes.CDLL(None)
START = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
@START
def body(arg):
    go_cb()
    return None
for _ in range(200):
    tid = ctypes.c_ulong()
    assert libc.pthread_create(ctypes.byref(tid), None, body, None) == 0
    assert libc.pthread_join(tid, None) == 0
`, g); err != nil {
			return err
		}
		fmt.Printf("thread states: %d before, %d after 200 C threads\n", before, capi.ThreadStates())
		return pygi.Finalize(context.Background())
	}
	// A handler on the UI thread waits for asyncio.run in another thread,
	// which awaits a Go async func: it is settled on that loop directly.
	scenarios["foreign-loop-from-ui"] = func() error {
		double, err := callbacks.Async(func(ctx context.Context, n int) (int, error) { return 2 * n, nil })
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		g.SetItem("double", double)
		var got *pygi.Object
		eventloop.Invoke(func() {
			defer eventloop.Quit()
			got, err = pygi.Eval(`(lambda asyncio, cf: cf.ThreadPoolExecutor(1).submit(asyncio.run, double(21)).result(timeout=5))(
    __import__("asyncio"), __import__("concurrent.futures", fromlist=["x"]))`, g)
		})
		if rerr := eventloop.Run(context.Background()); rerr != nil {
			return rerr
		}
		if err != nil {
			return err
		}
		fmt.Println("the UI thread got:", got.String())
		return pygi.Finalize(context.Background())
	}
}

func TestSafetyReviewFindings(t *testing.T) {
	for name, want := range map[string]string{
		"exception-in-flight":   "caught: [\"ValueError('the real error')\"] leaked: 0",
		"thread-locals-call-go": "__del__ called Go: 50 of 50",
		"foreign-threads":       "thread states: 1 before, 1 after 200 C threads",
		"foreign-loop-from-ui":  "the UI thread got: 42",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := testutil.RunChild(t, "CALLBACKS_CHILD="+name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%.3000s", out, errOut)
			assert.Contains(t, out, want)
		})
	}
}
