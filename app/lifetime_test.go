package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	// Hold and Release from a goroutine: refused, not run behind GTK's back.
	children["hold-from-goroutine"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.HoldGoroutine", NonUnique: true})
		must(a.OnActivate(func() {
			pyWindow(a, "hold")
			go func() {
				defer a.Quit()
				for name, call := range map[string]func() error{"app.Hold": a.Hold, "app.Release": a.Release} {
					err := call()
					if !errors.Is(err, eventloop.ErrNotMain) {
						fmt.Fprintf(os.Stderr, "%s from a goroutine: got %v, want ErrNotMain\n", name, err)
						os.Exit(6)
					}
				}
				fmt.Println("refused")
			}()
		}))
		return a.Run(context.Background(), prog)
	}
	// A shutdown that cannot finalise Python in time (a goroutine is still
	// inside a call): Run says so and returns non-zero, and Python is
	// really still there, as goroutines then find.
	children["finalize-timeout"] = func() int {
		a := mustNew(app.Options{ID: "org.duet.Timeout", NonUnique: true, FinalizeTimeout: 300 * time.Millisecond})
		release, inFlight := make(chan struct{}), make(chan struct{})
		go pygi.WithGIL(func() error {
			close(inFlight)
			pygi.WithoutGIL(func() { <-release })
			return nil
		})
		<-inFlight
		must(a.OnActivate(func() { eventloop.After(50*time.Millisecond, a.Quit) }))
		status := a.Run(context.Background(), prog)
		fmt.Println("status", status, "phase", lifetime.Current())
		close(release)
		r, err := pygi.Eval("'still here'", nil)
		must(err)
		s, _ := pygi.As[string](r)
		fmt.Println(s)
		return status
	}
}

func TestUIThreadOnlyAppFunctions(t *testing.T) {
	r := runChild(t, "hold-from-goroutine", nil)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.err)
	assert.Contains(t, r.out, "refused")
	assert.Empty(t, r.err)
}

func TestShutdownThatCannotFinalize(t *testing.T) {
	r := runChild(t, "finalize-timeout", nil)
	assert.Equal(t, 1, r.code, "a failed shutdown is not a success; stderr:\n%s", r.err)
	assert.Contains(t, r.err, "Python not finalised")
	assert.Contains(t, r.err, "1 calls in flight")
	assert.Contains(t, r.out, "phase ready", "what goroutines see matches what happened")
	assert.Contains(t, r.out, "still here")
}
