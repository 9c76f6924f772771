package explore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
)

// The log handlers the explorer puts in are GLib's, the process's: a run
// whose ctx ends while they go in (InvokeWait returns at once, the visit
// on the UI thread going on) must take them out all the same.

// endCtxInWatchLogs makes the explorer module's watch_logs end ctx once
// the handlers are in, and let go of the GIL a while, so that setUp sees
// ctx end before the visit returns; on the UI thread. It returns globals
// holding the module as m and the original watch_logs as watch.
func endCtxInWatchLogs(cancel func()) (*pygi.Object, error) {
	m, err := explorerPy.Load()
	if err != nil {
		return nil, err
	}
	var b pygi.Block
	g := b.Globals(pygi.Kw{"m": m, "cancel": cancel})
	b.Exec(`import time
watch = m.watch_logs
def watch_logs():
    watch()
    cancel()
    time.sleep(0.05)
m.watch_logs = watch_logs
`, g)
	return g, b.Err()
}

// handlersIn is how many GLib log handlers the explorer module has in.
func handlersIn(g *pygi.Object) (int, error) {
	r, err := pygi.Eval("len(m._log_handlers)", g)
	if err != nil {
		return 0, err
	}
	return pygi.As[int](r)
}

func TestLogHandlersOutWhenCtxEndsWhileTheyGoIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var g *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		g, err = endCtxInWatchLogs(cancel)
		require.NoError(t, err)
	})
	t.Cleanup(func() {
		looptest.Do(t, func(t testing.TB) { require.NoError(t, pygi.Exec("m.watch_logs = watch", g)) })
	})
	_, err := Run(ctx, Options{Duration: 10 * time.Second})
	require.ErrorIs(t, err, context.Canceled)
	looptest.Turn(t) // the visit has returned
	looptest.Do(t, func(t testing.TB) {
		n, err := handlersIn(g)
		require.NoError(t, err)
		assert.Zero(t, n, "GLib log handlers left in after Run returned")
	})
}

// CtxEndsThenTheLoopStops is the child "ctx-ends-then-the-loop-stops"
// (see child_test.go): the same, and the loop quits as soon as Run has
// returned (as an app's does when its ctx, which the explorer's derives
// from, ends). It prints how many handlers are in once the loop is over.
func CtxEndsThenTheLoopStops() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var g *pygi.Object
	runErr := make(chan error, 1)
	go func() {
		err := eventloop.InvokeWait(context.Background(), func() (err error) {
			g, err = endCtxInWatchLogs(cancel)
			return err
		})
		if err == nil {
			_, err = Run(ctx, Options{Duration: 10 * time.Second})
		}
		eventloop.Quit()
		runErr <- err
	}()
	if err := eventloop.Run(context.Background()); err != nil {
		fmt.Println("loop:", err)
		return 1
	}
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		fmt.Println("Run:", err)
		return 1
	}
	n, err := handlersIn(g)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("handlers in after the loop:", n)
	return 0
}
