package pygi

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/internal/testutil"
)

func watchdog(t *testing.T, d time.Duration) func() { return testutil.Watchdog(t, d) }

func TestConcurrentMixedCalls(t *testing.T) {
	defer watchdog(t, 3*time.Minute)()
	g := globals(t, "shared = {}\ndef add(a, b): return a + b\nclass Box:\n    def __init__(self, v): self.v = v\n")
	add, err := g.Item("add")
	require.NoError(t, err)
	box, err := g.Item("Box")
	require.NoError(t, err)
	shared, err := g.Item("shared")
	require.NoError(t, err)

	const goroutines, calls = 16, 10000
	var wg sync.WaitGroup
	var ops atomic.Int64
	errs := make(chan error, goroutines+1)
	worker := func(id int, n int) error {
		for i := range n {
			switch i % 6 {
			case 0:
				r, err := add.Call(id, i)
				if err != nil {
					return err
				}
				v, err := As[int64](r)
				if err != nil {
					return err
				}
				if v != int64(id+i) {
					return fmt.Errorf("add(%d, %d) = %d", id, i, v)
				}
				r.Close()
			case 1:
				b, err := box.Call(Kw{"v": []any{id, "x"}})
				if err != nil {
					return err
				}
				v, err := b.Attr("v")
				if err != nil {
					return err
				}
				l, err := As[[]any](v)
				if err != nil || len(l) != 2 {
					return fmt.Errorf("box: %v %v", l, err)
				}
				// Dropped without Close: exercises the GC queue concurrently.
			case 2:
				if err := shared.SetItem(fmt.Sprint(id), i); err != nil {
					return err
				}
			case 3:
				o, err := New(map[string]any{"i": i})
				if err != nil {
					return err
				}
				if _, err := o.Len(); err != nil {
					return err
				}
				o.Close()
			case 4:
				if err := WithGIL(func() error {
					for k := range 3 {
						r, err := add.Call(k, k)
						if err != nil {
							return err
						}
						r.Close()
					}
					return nil
				}); err != nil {
					return err
				}
			case 5:
				if i%600 == 5 {
					runtime.GC()
				}
				s, err := add.Repr()
				if err != nil || s == "" {
					return fmt.Errorf("repr: %q %v", s, err)
				}
			}
			ops.Add(1)
		}
		return nil
	}
	for id := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := worker(id, calls); err != nil {
				errs <- err
			}
		}()
	}
	// The main thread calls in at the same time.
	mainDone := make(chan struct{})
	go runOnMainThread(func() {
		defer close(mainDone)
		if err := worker(99, 2000); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	<-mainDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, int64(goroutines*calls+2000), ops.Load())
	n, err := shared.Len()
	require.NoError(t, err)
	assert.Equal(t, goroutines+1, n)
}

func TestCloseRacesWithUse(t *testing.T) {
	defer watchdog(t, time.Minute)()
	// Closing while other goroutines use the same Object must give either a
	// result or ErrClosed, never a crash.
	for range 200 {
		o, err := Eval("[1, 2, 3]", nil)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					n, err := o.Len()
					if err != nil {
						assert.ErrorIs(t, err, ErrClosed)
						return
					}
					assert.Equal(t, 3, n)
				}
			}()
		}
		o.Close()
		wg.Wait()
	}
}
