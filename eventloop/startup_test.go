package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

// lockedBuilder is a strings.Builder a slog handler may write to from the
// thread Python emits on.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func init() {
	// In a fresh process: what Python and the loop start without, and that
	// it comes when used.
	lifetimeChildren["lazy-imports"] = func() error {
		var runErr error
		eventloop.Invoke(func() {
			defer eventloop.Quit()
			runErr = lazyImports()
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		return runErr
	}
}

func lazyImports() error {
	imported := func(when string) error {
		return pygi.Exec(fmt.Sprintf("import sys\nprint(%q, 'traceback' in sys.modules, 'logging' in sys.modules)\n", when+":"), nil)
	}
	if err := imported("loop running"); err != nil {
		return err
	}
	_, err := pygi.Eval("1/0", nil)
	var pe *pygi.Error
	if !errors.As(err, &pe) {
		return fmt.Errorf("1/0: want a *pygi.Error, got %v", err)
	}
	if !strings.Contains(pe.Traceback, "ZeroDivisionError") {
		return fmt.Errorf("1/0: no traceback: %q", pe.Traceback)
	}
	if err := imported("after an error"); err != nil {
		return err
	}
	var out lockedBuilder
	stop, err := eventloop.RouteLogs(slog.NewTextHandler(&out, nil))
	if err != nil {
		return err
	}
	err = pygi.Exec("import logging\nlogging.getLogger('duet.test').warning('routed %d', 7)\n", nil)
	stop()
	if err != nil {
		return err
	}
	if !strings.Contains(out.String(), "routed 7") {
		return fmt.Errorf("the record was not routed: %q", out.String())
	}
	return imported("after RouteLogs")
}

// duet's start-up imports neither traceback (pygi formats errors with it)
// nor logging (RouteLogs routes its records): python3 does not, and they
// are a few milliseconds on the way to the first frame. Each is imported
// when first used, and what it is used for works then.
func TestStartUpLeavesOutWhatItDoesNotUse(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "lazy-imports")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "loop running: False False")
	assert.Contains(t, out, "after an error: True False")
	assert.Contains(t, out, "after RouteLogs: True True")
}
