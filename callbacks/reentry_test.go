package callbacks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// Python code that runs in the middle of a decode (the cycle collector
// running __del__ while the decoder builds objects) and calls a Go
// callback whose arguments are decoded on the same thread: the outer
// decode must not read what the inner one reused or freed.
func init() {
	scenarios["reentrant-decode"] = func() error {
		seen := 0
		cb, err := callbacks.New(func(xs []int) { seen += len(xs) }, callbacks.Name("takes_a_list"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("cb", cb); err != nil {
			return err
		}
		if err := pygi.Exec(`
import gc
class Bomb:
    def __del__(self):
        cb(list(range(70000)))  # large: the thread's scratch grows, and is freed on reset
def arm(n):
    for _ in range(n):
        b = Bomb()
        b.me = b  # only the cycle collector frees it
gc.set_threshold(50, 1, 1)
data = {"k%d" % i: [[j, str(j)] for j in range(50)] for i in range(400)}
`, g); err != nil {
			return err
		}
		data, err := g.Item("data")
		if err != nil {
			return err
		}
		arm, err := g.Item("arm")
		if err != nil {
			return err
		}
		for round := range 10 {
			if _, err := arm.Call(30); err != nil {
				return err
			}
			m, err := pygi.As[map[string]*pygi.Object](data)
			if err != nil {
				return err
			}
			for k, v := range m {
				n, err := v.Len()
				if err != nil || n != 50 {
					return fmt.Errorf("round %d: %s rebuilt with %d items (%v)", round, k, n, err)
				}
				v.Close()
			}
		}
		fmt.Println("collector ran Go callbacks:", seen > 0)
		return pygi.Finalize(context.Background())
	}
}

func TestReentrantDecode(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "CALLBACKS_CHILD=reentrant-decode")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%.3000s", out, errOut)
	assert.Contains(t, out, "collector ran Go callbacks: true")
}

// A failure inside an entry is that entry's error: never an exception left
// set for the next, unrelated call to trip over.
func TestNoExceptionLeftPending(t *testing.T) {
	cb, err := callbacks.New(func() {}, callbacks.Module("bad\xff\xfe"))
	require.Error(t, err, "a module name that is not UTF-8 is an error")
	assert.Nil(t, cb)
	r, err := pygi.Eval("1 + 1", nil)
	require.NoError(t, err, "the next call is not poisoned")
	n, _ := pygi.As[int64](r)
	assert.Equal(t, int64(2), n)
	assert.Zero(t, capi.LeakedExceptions())
}
