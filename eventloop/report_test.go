package eventloop_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	// What the loop prints of errors nobody else is told of: a Python
	// signal handler that raised, and a panic in Invoke'd work whose value
	// is a Python exception.
	lifetimeChildren["signal-handler-raises"] = func() error {
		if err := pygi.Exec(`
import signal
def ratio(n):
    return n / 0
def on_usr1(signum, frame):
    ratio(signum)
signal.signal(signal.SIGUSR1, on_usr1)
`, nil); err != nil {
			return err
		}
		eventloop.Invoke(func() { syscall.Kill(os.Getpid(), syscall.SIGUSR1) })
		eventloop.After(300*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		return pygi.Finalize(context.Background())
	}
	// AsyncioGrace(0): the loop's end waits for nothing, and still leaves
	// no task pending to be destroyed with a warning.
	lifetimeChildren["asyncio-grace-zero"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import asyncio
async def forever():
    await asyncio.sleep(3600)
def start():
    asyncio.get_running_loop().create_task(forever())
`, g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			if err := pygi.Exec("start()", g); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		})
		eventloop.After(100*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background(), eventloop.AsyncioGrace(0)); err != nil {
			return err
		}
		return pygi.Finalize(context.Background())
	}
	lifetimeChildren["invoke-panics-with-python-error"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("def ratio(n):\n    return n / 0\n", g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			_, err := pygi.Eval("ratio(3)", g)
			panic(err)
		})
		eventloop.After(100*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		return pygi.Finalize(context.Background())
	}
}

func TestAsyncioGraceZeroLeavesNothingPending(t *testing.T) {
	_, errOut, code := runLifetimeChild(t, "asyncio-grace-zero")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Empty(t, errOut, "no task destroyed while pending, no coroutine never awaited")
}

func TestReportedErrorsCarryTheirTraceback(t *testing.T) {
	_, errOut, code := runLifetimeChild(t, "signal-handler-raises")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, errOut, "eventloop: Python signal handler: ZeroDivisionError: division by zero\nTraceback (most recent call last):\n")
	assert.Contains(t, errOut, ", in on_usr1\n")
	assert.Contains(t, errOut, ", in ratio\n")

	_, errOut, code = runLifetimeChild(t, "invoke-panics-with-python-error")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, errOut, "panic in eventloop.Invoke: ZeroDivisionError: division by zero\n")
	assert.Contains(t, errOut, ", in ratio\n", "the Python traceback")
	assert.Contains(t, errOut, "goroutine ", "and the Go stack")
}

// What reaches OnPythonException is described as python3 would print it,
// whatever the exception's class says of itself; what is no exception
// (sys.excepthook called by hand with an int) is left to Python's hook.
func TestOddExceptionsAreDescribed(t *testing.T) {
	got := make(chan *pygi.Error, 4)
	defer eventloop.OnPythonException(func(e *pygi.Error) { got <- e })()
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, pygi.Exec(`
import sys
from gi.repository import GLib
class Weird(Exception):
    pass
Weird.__module__ = 5
def boom():
    raise Weird("odd module")
GLib.idle_add(boom)
sys.excepthook(int, 5, None)
`, nil))
	})
	select {
	case e := <-got:
		assert.Equal(t, "odd module", e.Message)
		assert.True(t, e.Matches("Exception"), "MRO: %v", e.MRO)
		assert.Contains(t, e.Traceback, "in boom")
	case <-time.After(10 * time.Second):
		t.Fatal("the idle's exception never arrived")
	}
	looptest.Turn(t)
	select {
	case e := <-got:
		t.Fatalf("a non-exception was delivered: %+v", e)
	default:
	}
}
