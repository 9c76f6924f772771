package pygi

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
)

func init() {
	for name, fn := range lifetimeScenarios {
		childScenarios[name] = fn
	}
}

// Scenarios about the interpreter's life; each runs in a child process.
var lifetimeScenarios = map[string]func() error{
	// FinalizeContext gives up while a call is in flight. What goroutines saw
	// must match what happened: entries made while Finalize was deciding
	// waited and then ran (Python stayed), and a Close made then really
	// released its reference.
	"finalize-gives-up": func() error {
		g, err := NewGlobals()
		if err != nil {
			return err
		}
		if err := Exec("import sys\nx = object()\n", g); err != nil {
			return err
		}
		x, err := g.Item("x")
		if err != nil {
			return err
		}
		count := func() (int64, error) {
			r, err := Eval("sys.getrefcount(x)", g)
			if err != nil {
				return 0, err
			}
			return As[int64](r)
		}
		before, err := count()
		if err != nil {
			return err
		}
		release, inFlight := make(chan struct{}), make(chan struct{})
		go WithGIL(func() error {
			close(inFlight)
			WithoutGIL(func() { <-release }) // in flight, GIL free
			return nil
		})
		<-inFlight
		closing := func() {
			for lifetime.Current() != lifetime.Closing {
				time.Sleep(100 * time.Microsecond)
			}
		}
		closed, entered := make(chan error, 1), make(chan error, 1)
		go func() { closing(); closed <- x.Close() }()
		go func() {
			closing()
			r, err := Eval("6 * 7", nil)
			if err == nil {
				r.Close()
			}
			entered <- err
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err = Finalize(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 calls in flight") {
			return fmt.Errorf("FinalizeContext: want a deadline error naming 1 call in flight, got %v", err)
		}
		if p := lifetime.Current(); p != lifetime.Ready {
			return fmt.Errorf("phase after giving up: %v, want ready", p)
		}
		if err := <-entered; err != nil {
			return fmt.Errorf("an entry made while Finalize decided saw %v, though Python stayed", err)
		}
		if err := <-closed; err != nil {
			return err
		}
		close(release)
		after, err := count()
		if err != nil {
			return err
		}
		if after != before-1 {
			return fmt.Errorf("Close during the attempt: refcount %d -> %d, want %d", before, after, before-1)
		}
		return Finalize(context.Background())
	},
	// Finalize from inside a Do scope is refused; the interpreter stays usable.
	"finalize-inside-do": func() error {
		err := WithGIL(func() error { return Finalize(context.Background()) })
		if !errors.Is(err, ErrInsideCall) {
			return fmt.Errorf("Finalize inside Do: got %v, want ErrInsideCall", err)
		}
		if _, err := Eval("1", nil); err != nil {
			return err
		}
		return Finalize(context.Background())
	},
	// Once a sub-interpreter exists, PyGILState_Check answers 1 on every
	// thread. WithoutGIL must still know whether duet holds the GIL here.
	"subinterpreter-withoutgil": func() error {
		g, err := NewGlobals()
		if err != nil {
			return err
		}
		if err := Exec("import _xxsubinterpreters as si\nsid = si.create()\n", g); err != nil {
			return err
		}
		done := make(chan error)
		go func() { // holds nothing: WithoutGIL just runs fn
			ran := false
			WithoutGIL(func() { ran = true })
			if !ran {
				done <- errors.New("fn did not run")
				return
			}
			done <- nil
		}()
		if err := <-done; err != nil {
			return err
		}
		// Inside Do it really detaches: another goroutine uses Python meanwhile.
		err = WithGIL(func() error {
			var inner error
			WithoutGIL(func() {
				go func() {
					r, err := Eval("2 + 2", nil)
					if err == nil {
						r.Close()
					}
					done <- err
				}()
				select {
				case inner = <-done:
				case <-time.After(10 * time.Second):
					inner = errors.New("another goroutine could not enter Python while this one was detached")
				}
			})
			if inner != nil {
				return inner
			}
			_, err := Eval("3 + 3", nil) // attached again
			return err
		})
		if err != nil {
			return err
		}
		if err := Exec("si.destroy(sid)\n", g); err != nil {
			return err
		}
		g.Close()
		return Finalize(context.Background())
	},
}

func TestLifetimeChildProcesses(t *testing.T) {
	for _, name := range []string{"finalize-gives-up", "finalize-inside-do", "subinterpreter-withoutgil"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "exit status; stderr:\n%s", errOut)
			assert.Contains(t, out, "ok")
			assert.Empty(t, errOut)
		})
	}
}

// Releasing a reference runs arbitrary code (here a GObject weak-reference
// callback, written in Python, at dispose). It must not run with a Python
// exception pending, and must leave a pending exception as it found it:
// a Go callback that is about to raise may release references first.
func TestReleaseKeepsAPendingException(t *testing.T) {
	g, err := NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, Exec(`
from gi.repository import GObject
ran = []
def make():
    o = GObject.Object()
    o.weak_ref(lambda: ran.append(1))
    return o
`, g))
	for _, name := range []string{"Close", "Drain"} {
		t.Run(name, func(t *testing.T) {
			o, err := Eval("make()", g) // Go holds the only reference
			require.NoError(t, err)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			st := capi.Attach()
			capi.RaiseMessage(capi.RuntimeError, "pending while releasing")
			o.closed.Store(true)
			o.cleanup.Stop()
			if name == "Close" {
				capi.Close(o.ref)
			} else {
				capi.Drain([]capi.Ref{o.ref})
			}
			pending := capi.PendingException(true)
			capi.Detach(st)
			assert.True(t, pending, "the pending exception survives the release")
			n, err := Eval("len(ran)", g)
			require.NoError(t, err)
			got, _ := As[int64](n)
			assert.Equal(t, int64(1), got, "the dispose-time Python callback ran")
			require.NoError(t, Exec("ran.clear()", g))
		})
	}
}

// Objects duet caches for the process are shared: one caller closing its
// copy must not break the others.
func TestSharedModuleSurvivesClose(t *testing.T) {
	mod, err := gi()
	require.NoError(t, err)
	require.NoError(t, mod.Close())
	assert.False(t, mod.Closed(), "Close on a shared object does nothing")
	again, err := gi()
	require.NoError(t, err)
	name, err := again.Attr("__name__")
	require.NoError(t, err)
	s, _ := As[string](name)
	assert.Equal(t, "gi", s)
}

// Entries counted by the gate come back to zero, also across errors.
func TestEntriesAreCounted(t *testing.T) {
	var fails atomic.Int64
	for range 100 {
		if _, err := Eval("1/0", nil); err != nil {
			fails.Add(1)
		}
	}
	assert.Equal(t, int64(100), fails.Load())
	assert.Eventually(t, func() bool { return inFlight() == 0 }, 5*time.Second, time.Millisecond)
}

func inFlight() int64 { return lifetime.InFlight() }
