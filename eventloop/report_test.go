package eventloop_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
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
