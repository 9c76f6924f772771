package explore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
)

// The log handlers the explorer puts in are GLib's, the process's: a run
// whose ctx ends while they go in (InvokeWait returns at once, the visit
// on the UI thread going on) must take them out all the same. Here ctx
// ends inside watch_logs, once the handlers are in.
func TestLogHandlersOutWhenCtxEndsWhileTheyGoIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var g *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		m, err := explorerPy.Load()
		require.NoError(t, err)
		var b pygi.Block
		g = b.Globals(pygi.Kw{"m": m, "cancel": cancel})
		b.Exec(`import time
watch = m.watch_logs
def watch_logs():
    watch()
    cancel()
    time.sleep(0.05)  # the GIL let go: setUp sees ctx end before this returns
m.watch_logs = watch_logs
`, g)
		require.NoError(t, b.Err())
	})
	t.Cleanup(func() {
		looptest.Do(t, func(t testing.TB) { require.NoError(t, pygi.Exec("m.watch_logs = watch", g)) })
	})
	_, err := Run(ctx, Options{Duration: 10 * time.Second})
	require.ErrorIs(t, err, context.Canceled)
	looptest.Turn(t) // what Run left to the loop has run
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval("len(m._log_handlers)", g)
		require.NoError(t, err)
		n, err := pygi.As[int](r)
		require.NoError(t, err)
		assert.Zero(t, n, "GLib log handlers left in after Run returned")
	})
}
