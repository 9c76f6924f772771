package pygi

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/internal/testutil"
)

// Child-process scenarios: behaviour that could hang or crash the process
// runs in a re-executed test binary, and the parent checks its exit.
var childScenarios = map[string]func() error{
	// The pycall.rb hang: Python used only from a non-main goroutine.
	"nonmain": func() error {
		done := make(chan error)
		go func() {
			sys, err := Import("sys")
			if err == nil {
				_, err = sys.Attr("path")
			}
			done <- err
		}()
		return <-done
	},
	// The same, finalising from that goroutine (Python lives on its own thread).
	"nonmain-finalize": func() error {
		done := make(chan error)
		go func() {
			if _, err := Eval("sum(range(10))", nil); err != nil {
				done <- err
				return
			}
			if err := Finalize(); err != nil {
				done <- err
				return
			}
			if _, err := Eval("1", nil); !errors.Is(err, ErrFinalized) {
				done <- fmt.Errorf("after Finalize: got %v, want ErrFinalized", err)
				return
			}
			done <- nil
		}()
		return <-done
	},
	// Finalize while 8 goroutines keep calling: they see ErrFinalized and stop.
	"finalize-while-calling": func() error {
		if err := Init(); err != nil {
			return err
		}
		f, err := Eval("lambda x: x * 2", nil)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var calls atomic.Int64
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					r, err := f.Call(21)
					if errors.Is(err, ErrFinalized) {
						errs <- nil
						return
					}
					if err != nil {
						errs <- err
						return
					}
					r.Close() // after Finalize this is a no-op
					calls.Add(1)
				}
			}()
		}
		time.Sleep(200 * time.Millisecond)
		if err := Finalize(); err != nil {
			return err
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		f.Close()
		fmt.Println("calls before finalize:", calls.Load())
		return nil
	},
	// Finalize from the wrong thread is refused, not a crash.
	"finalize-wrong-thread": func() error {
		if err := Init(); err != nil {
			return err
		}
		errc := make(chan error)
		go func() { errc <- Finalize() }()
		if err := <-errc; !errors.Is(err, ErrWrongThread) {
			return fmt.Errorf("Finalize off the main thread: got %v", err)
		}
		if _, err := Eval("1", nil); err != nil {
			return fmt.Errorf("interpreter unusable after a refused Finalize: %v", err)
		}
		return Finalize()
	},
	// Exit while goroutines are inside Python, without finalising.
	"exit-while-calling": func() error {
		f, err := Eval("lambda: sum(range(1000))", nil)
		if err != nil {
			return err
		}
		for range 4 {
			go func() {
				for {
					r, err := f.Call()
					if err != nil {
						return
					}
					r.Close()
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		return nil
	},
	// First use from 8 goroutines at once: one initialisation, all succeed.
	"concurrent-init": func() error {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := Eval(fmt.Sprintf("%d * 2", i), nil)
				if err == nil {
					var n int64
					if n, err = r.Int(); err == nil && n != int64(2*i) {
						err = fmt.Errorf("got %d", n)
					}
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return Finalize()
	},
	// A Python thread still running at Finalize: Py_FinalizeEx joins it.
	"python-thread-at-finalize": func() error {
		g, err := NewGlobals()
		if err != nil {
			return err
		}
		if err := Exec("import threading, time\nt = threading.Thread(target=time.sleep, args=(0.2,))\nt.start()", g); err != nil {
			return err
		}
		g.Close()
		return Finalize()
	},
}

func childMain(name string) int {
	fn, ok := childScenarios[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown scenario", name)
		return 2
	}
	if err := fn(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

func runChild(t *testing.T, name string, env ...string) (stdout, stderr string, err error) {
	return testutil.RunChild(t, append([]string{"PYGI_CHILD=" + name}, env...)...)
}

func TestChildProcesses(t *testing.T) {
	for _, name := range []string{"nonmain", "nonmain-finalize", "finalize-while-calling",
		"finalize-wrong-thread", "exit-while-calling", "python-thread-at-finalize", "concurrent-init"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "exit status; stderr:\n%s", errOut)
			assert.Contains(t, out, "ok")
			assert.Empty(t, errOut)
		})
	}
}
