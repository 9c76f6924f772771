package pygi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/testutil"
)

// Child-process scenarios: behaviour that could hang or crash the process
// runs in a re-executed test binary, and the parent checks its exit.
var childScenarios = map[string]func() error{
	// A Close inside an operation (an error's description, a call's
	// temporaries) while Finalize waits for that operation: it entered
	// again, and waited for Finalize's outcome, which waited for it.
	"close-inside-an-entry-during-finalize": func() error {
		o, err := New([]any{1, 2, 3})
		if err != nil {
			return err
		}
		hung := time.AfterFunc(20*time.Second, func() {
			fmt.Fprintln(os.Stderr, "deadlocked")
			os.Exit(3)
		})
		defer hung.Stop()
		entered, closed := make(chan error, 1), make(chan struct{})
		go func() { // an operation in flight, on another goroutine
			defer close(closed)
			if err := enter(); err != nil {
				entered <- err
				return
			}
			entered <- nil
			for lifetime.Current() == lifetime.Ready {
				time.Sleep(time.Millisecond) // Finalize is waiting for this entry now
			}
			o.Close() // inside the entry, as newError's and a call's are
			exit()
		}()
		if err := <-entered; err != nil {
			return err
		}
		err = Finalize(context.Background()) // here, the thread that started Python
		<-closed
		return err
	},
	// The first use of gi from a goroutine holding the GIL (a Go callback,
	// WithGIL) while another goroutine's first use waits for the GIL: gi's
	// cache lock was held across the import, and each waited for the other.
	"gi-first-use-lock-order": func() error {
		if err := Init(Options{}); err != nil {
			return err
		}
		hung := time.AfterFunc(20*time.Second, func() {
			fmt.Fprintln(os.Stderr, "deadlocked")
			os.Exit(3)
		})
		defer hung.Stop()
		other := make(chan error, 1)
		go func() {
			time.Sleep(50 * time.Millisecond)
			other <- RequireVersion("Gdk", "4.0")
		}()
		if err := WithGIL(func() error {
			time.Sleep(300 * time.Millisecond) // the other goroutine waits for the GIL meanwhile
			return RequireVersion("Gtk", "4.0")
		}); err != nil {
			return err
		}
		if err := <-other; err != nil {
			return err
		}
		// After Finalize, gi says Python is finalized, not that PyGObject
		// is missing.
		if err := Finalize(context.Background()); err != nil {
			return err
		}
		if _, err := Import("gi.repository.GLib"); !errors.Is(err, ErrFinalized) || errors.Is(err, ErrNoGI) {
			return fmt.Errorf("import after Finalize: %v", err)
		}
		return nil
	},
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
			if err := Finalize(context.Background()); err != nil {
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
		if err := Init(Options{}); err != nil {
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
		if err := Finalize(context.Background()); err != nil {
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
		if err := Init(Options{}); err != nil {
			return err
		}
		errc := make(chan error)
		go func() { errc <- Finalize(context.Background()) }()
		if err := <-errc; !errors.Is(err, ErrWrongThread) {
			return fmt.Errorf("Finalize off the main thread: got %v", err)
		}
		if _, err := Eval("1", nil); err != nil {
			return fmt.Errorf("interpreter unusable after a refused Finalize: %v", err)
		}
		return Finalize(context.Background())
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
					if n, err = As[int64](r); err == nil && n != int64(2*i) {
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
		return Finalize(context.Background())
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
		return Finalize(context.Background())
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
	for _, name := range []string{"close-inside-an-entry-during-finalize", "gi-first-use-lock-order", "nonmain", "nonmain-finalize", "finalize-while-calling",
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

// threading's shutdown as python3 runs it, bounded: executors' idle
// workers and threads that wait for the main thread to end are told to
// stop; a call holding the GIL, or a thread started by a call still in
// flight, cannot stretch the bound; Finalize inside a call is refused on
// Python's own thread too.
func init() {
	finalizeIn := func(d time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		start := time.Now()
		err := Finalize(ctx)
		return time.Since(start), err
	}
	childScenarios["threads-stdlib"] = func() error {
		if err := Exec(`
import concurrent.futures, threading, time
pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
assert pool.submit(pow, 2, 10).result() == 1024
def watch():
    while threading.main_thread().is_alive():
        time.sleep(0.01)
threading.Thread(target=watch, name="watcher").start()
`, nil); err != nil {
			return err
		}
		took, err := finalizeIn(3 * time.Second)
		if err != nil || took > 2*time.Second {
			return fmt.Errorf("FinalizeContext: %v after %v", err, took)
		}
		fmt.Println("stdlib threads stopped")
		return nil
	}
	childScenarios["threads-bounded"] = func() error {
		started, ended := make(chan error, 1), make(chan error, 1)
		go func() {
			// Python's own thread, as a first Eval here would start it;
			// the globals made first, so the one entry left is the call's.
			g, err := NewGlobals()
			started <- err
			if err == nil {
				_, err = Eval("sum(range(10**10))", g) // holds the GIL in C for minutes
				ended <- err
			}
		}()
		if err := <-started; err != nil {
			return err
		}
		// Finalize once the call is in flight: one that came first would
		// reopen the gate for threading's shutdown, the call would take the
		// GIL then, and Finalize's wait for it is one ctx cannot cut short
		// (see Finalize's doc).
		for lifetime.InFlight() == 0 {
			select {
			case err := <-ended:
				return fmt.Errorf("the long call ended at once: %v", err)
			case <-time.After(100 * time.Microsecond):
			}
		}
		took, err := finalizeIn(time.Second)
		if err == nil || took > 3*time.Second || !strings.Contains(err.Error(), "1 calls in flight") {
			return fmt.Errorf("with the GIL held: %v after %v", err, took)
		}
		fmt.Println("bounded with the GIL held")
		return nil
	}
	childScenarios["threads-late"] = func() error {
		// Python started first: an entry counts itself before it backs out
		// to start Python, so InFlight below could see that count and let
		// Finalize come during the start (the Exec then ran only in
		// threading's shutdown, and its thread never started).
		if err := Exec("x = 1", nil); err != nil {
			return err
		}
		go Exec("import threading, time\ntime.sleep(0.3)\nthreading.Thread(target=time.sleep, args=(30,), name='late', daemon=False).start()\n", nil)
		// Once the Exec is inside (on a loaded machine Python's start
		// alone took more than a fixed 50 ms, and Finalize then came
		// first and refused the Exec, whose thread never started).
		if err := until("the Exec entered Python", func() bool { return lifetime.InFlight() > 0 }); err != nil {
			return err
		}
		took, err := finalizeIn(time.Second)
		if !errors.Is(err, ErrThreadsRunning) || !strings.Contains(err.Error(), "late") || took > 3*time.Second {
			return fmt.Errorf("a thread started late: %v after %v", err, took)
		}
		fmt.Println("late thread named")
		return nil
	}
	// Python starts on its own thread (first used from a goroutine) while
	// the main goroutine's Finalize waits for the start: that Finalize
	// must run Python's end on Python's thread, chosen once it started.
	childScenarios["finalize-while-starting"] = func() error {
		started := make(chan error, 1)
		go func() { started <- Exec("import time\ntime.sleep(0.2)\n", nil) }()
		time.Sleep(20 * time.Millisecond)
		if _, err := finalizeIn(10 * time.Second); err != nil {
			return fmt.Errorf("Finalize while Python started: %v", err)
		}
		if err := <-started; err != nil && !errors.Is(err, ErrFinalized) {
			return fmt.Errorf("the starting Exec: %v", err)
		}
		fmt.Println("finalised on Python's thread")
		return nil
	}
	// Two goroutines finalise Python on its own thread at once: both
	// succeed, and the thread is let go once (a second close panicked).
	childScenarios["finalize-twice-home"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := finalizeIn(10 * time.Second); errs <- err }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				return fmt.Errorf("one of two Finalizes: %v", err)
			}
		}
		fmt.Println("both finalised")
		return nil
	}
	// Goroutines keep posting to Python's own thread (as the signal path
	// does) while Python is finalised there: the posts end quietly, with
	// no send racing the thread's end (under -race this reported a data
	// race on the closed channel, and a send after it panicked, recovered).
	childScenarios["posts-while-finalizing"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					lifetime.OnPythonMain(func() {})
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		if _, err := finalizeIn(10 * time.Second); err != nil {
			return fmt.Errorf("Finalize: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		if lifetime.OnPythonMain(func() {}) {
			return errors.New("OnPythonMain still posts after Finalize")
		}
		if _, err := finalizeIn(time.Second); err != nil {
			return fmt.Errorf("a second Finalize: %v", err)
		}
		fmt.Println("posts ended")
		return nil
	}
	// A Finalize queued behind another that waits (for a call holding the
	// GIL in C) ends with its own ctx: the lock it waited on was a mutex,
	// and a 100 ms ctx took as long as the other's 2 s.
	childScenarios["finalize-queued-ctx"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		go Eval("sum(range(10**10))", nil) // holds the GIL in C for minutes
		if err := until("the Eval entered Python", func() bool { return lifetime.InFlight() > 0 }); err != nil {
			return err
		}
		first := make(chan error, 1)
		go func() { _, err := finalizeIn(3 * time.Second); first <- err }()
		if err := until("the first Finalize began", func() bool { return lifetime.Current() == lifetime.Closing }); err != nil {
			return err
		}
		took, err := finalizeIn(100 * time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) || took > 1500*time.Millisecond {
			return fmt.Errorf("the queued Finalize: %v after %v", err, took)
		}
		if err := <-first; !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the first Finalize, with the GIL held: %v", err)
		}
		fmt.Println("queued Finalize ended with its ctx")
		return nil
	}
	// A function posted to Python's own thread calls Finalize while
	// another Finalize runs and needs that thread for its next step: it is
	// refused at once (it waited for the other, which waited for the
	// thread: a deadlock), and the other then finishes there.
	childScenarios["finalize-busy-home"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		// A call in flight holds the other Finalize in its wait (Closing)
		// while the posted function calls Finalize; when the call ends,
		// the other goes on to post its next step to Python's thread.
		go Exec("import time\ntime.sleep(0.5)\n", nil)
		if err := until("the Exec entered Python", func() bool { return lifetime.InFlight() > 0 }); err != nil {
			return err
		}
		first := make(chan error, 1)
		go func() { _, err := finalizeIn(20 * time.Second); first <- err }()
		posted := make(chan error, 1)
		if !lifetime.OnPythonMain(func() {
			for lifetime.Current() == lifetime.Ready {
				time.Sleep(time.Millisecond)
			}
			posted <- Finalize(context.Background())
		}) {
			return errors.New("no Python thread to post to")
		}
		select {
		case err := <-posted:
			if !errors.Is(err, ErrFinalizeBusy) {
				return fmt.Errorf("Finalize posted to Python's thread: %v", err)
			}
		case <-time.After(15 * time.Second):
			return errors.New("Finalize posted to Python's thread hung")
		}
		if err := <-first; err != nil {
			return fmt.Errorf("the other Finalize: %v", err)
		}
		fmt.Println("busy Finalize refused on Python's thread")
		return nil
	}
	// Python's own thread busy with a function posted there (a signal
	// handler) when Finalize needs it: Finalize ends with its ctx, and
	// Python stays open (it waited for the thread without a bound).
	childScenarios["finalize-home-busy"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		release, running := make(chan struct{}), make(chan struct{})
		if !lifetime.OnPythonMain(func() { close(running); <-release }) {
			return errors.New("no Python thread to post to")
		}
		<-running
		took, err := finalizeIn(200 * time.Millisecond)
		close(release)
		if !errors.Is(err, context.DeadlineExceeded) || took > 1500*time.Millisecond || lifetime.Current() != lifetime.Ready {
			return fmt.Errorf("Finalize with Python's thread busy: %v after %v, phase %v", err, took, lifetime.Current())
		}
		if err := Exec("y = 2", nil); err != nil {
			return fmt.Errorf("Python after Finalize gave up: %v", err)
		}
		if _, err := finalizeIn(10 * time.Second); err != nil {
			return fmt.Errorf("Finalize once the thread is free: %v", err)
		}
		fmt.Println("busy thread: Finalize ended with its ctx")
		return nil
	}
	// A Finalize posted to Python's own thread from Python's last step (an
	// AtFinalize hook) is not refused as busy: it was, while the other
	// Finalize still held the lock after its last step. Finalize now keeps
	// the thread until it ends, so the post runs after it (nil) or is
	// dropped with the thread; either is right, a refusal is not.
	childScenarios["finalize-posted-at-end"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		posted := make(chan error, 1)
		lifetime.AtFinalize(func() {
			lifetime.OnPythonMain(func() { posted <- Finalize(context.Background()) })
		})
		if _, err := finalizeIn(10 * time.Second); err != nil {
			return fmt.Errorf("Finalize: %v", err)
		}
		select {
		case err := <-posted:
			if err != nil {
				return fmt.Errorf("Finalize posted from Python's last step: %v", err)
			}
		case <-time.After(500 * time.Millisecond): // dropped: Python's thread ended first
		}
		fmt.Println("posted at the end: not refused")
		return nil
	}
	// A ctx that ended just as the calls in flight did: Python's thread is
	// free, so Finalize takes it and finishes (it lost a coin flip between
	// the free thread and the ended ctx, 7 times in 10, and said the
	// thread was busy).
	childScenarios["finalize-ended-ctx"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		if err := Finalize(ctx); err != nil || lifetime.Current() != lifetime.Finalized {
			return fmt.Errorf("Finalize with an ended ctx and nothing in flight: %v, phase %v", err, lifetime.Current())
		}
		fmt.Println("ended ctx: finalised")
		return nil
	}
	// A Python signal handler that raises (sys.exit) while threading's
	// shutdown waits for a thread: python3 prints it, ignores it and
	// finishes; Finalize failed with the SystemExit and left Python open.
	childScenarios["signal-in-thread-shutdown"] = func() error {
		if err := startOnItsOwnThread(); err != nil {
			return err
		}
		set := make(chan error, 1)
		if !lifetime.OnPythonMain(func() {
			set <- Exec("import signal, sys\nsignal.signal(signal.SIGUSR1, lambda *a: sys.exit(0))\n", nil)
		}) {
			return errors.New("no Python thread to post to")
		}
		if err := <-set; err != nil {
			return err
		}
		if err := Exec("import threading, time\nthreading.Thread(target=time.sleep, args=(0.5,), name='slow', daemon=False).start()\n", nil); err != nil {
			return err
		}
		go func() { time.Sleep(150 * time.Millisecond); syscall.Kill(os.Getpid(), syscall.SIGUSR1) }()
		if _, err := finalizeIn(5 * time.Second); err != nil || lifetime.Current() != lifetime.Finalized {
			return fmt.Errorf("Finalize with a handler raising in threading's shutdown: %v, phase %v", err, lifetime.Current())
		}
		fmt.Println("signal in shutdown: ignored, finalised")
		return nil
	}
	childScenarios["finalize-inside-home"] = func() error {
		done := make(chan error)
		go func() {
			done <- WithGIL(func() error {
				if err := Finalize(context.Background()); !errors.Is(err, ErrInsideCall) {
					return fmt.Errorf("Finalize inside Do on Python's own thread: %v", err)
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				return err
			}
		case <-time.After(10 * time.Second):
			return errors.New("Finalize inside Do hung")
		}
		go func() { done <- Finalize(context.Background()) }()
		return <-done
	}
}

// startOnItsOwnThread starts Python from a goroutine, so that it lives on
// a thread of its own (pygi's home thread), and waits for it.
func startOnItsOwnThread() error {
	done := make(chan error, 1)
	go func() { done <- Exec("x = 1", nil) }()
	return <-done
}

// until polls cond every millisecond for up to 20 s; the error names what
// never happened.
func until(what string, cond func() bool) error {
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("never: " + what)
		}
	}
	return nil
}

func TestThreadingShutdown(t *testing.T) {
	for name, want := range map[string]string{
		"threads-stdlib":            "stdlib threads stopped",
		"threads-bounded":           "bounded with the GIL held",
		"threads-late":              "late thread named",
		"finalize-inside-home":      "ok",
		"finalize-while-starting":   "finalised on Python's thread",
		"finalize-twice-home":       "both finalised",
		"posts-while-finalizing":    "posts ended",
		"finalize-queued-ctx":       "queued Finalize ended with its ctx",
		"finalize-busy-home":        "busy Finalize refused on Python's thread",
		"finalize-home-busy":        "busy thread: Finalize ended with its ctx",
		"finalize-ended-ctx":        "ended ctx: finalised",
		"signal-in-thread-shutdown": "signal in shutdown: ignored, finalised",
		"finalize-posted-at-end":    "posted at the end: not refused",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%.2000s", out, errOut)
			assert.Contains(t, out, want)
		})
	}
}

// Values that hold themselves are errors, never a stack overflow: Go to
// Python (New, call arguments) and Python to Go (a list holding itself).
func init() {
	childScenarios["self-referential"] = func() error {
		l := []any{1, nil}
		l[1] = l
		m := map[string]any{"a": 1}
		m["self"] = m
		t := Tuple{1, nil}
		t[1] = t
		f, err := Eval("lambda *a, **k: None", nil)
		if err != nil {
			return err
		}
		for name, try := range map[string]func() error{
			"New([]any)":         func() error { _, err := New(l); return err },
			"New(map)":           func() error { _, err := New(m); return err },
			"New(Tuple)":         func() error { _, err := New(t); return err },
			"argument":           func() error { _, err := f.Call(l); return err },
			"keyword argument":   func() error { _, err := f.Call(Kw{"x": m}); return err },
			"map inside a slice": func() error { _, err := New([]map[string]any{m}); return err },
		} {
			err := try()
			var ce *ConversionError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "nested too deeply") {
				return fmt.Errorf("%s: want a ConversionError (nested too deeply), got %v", name, err)
			}
		}
		for _, code := range []string{"(lambda l: (l.append(l), l)[1])([])", "(lambda d: (d.__setitem__('d', d), d)[1])({})"} {
			o, err := Eval(code, nil)
			if err != nil {
				return err
			}
			if _, err := As[any](o); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
				return fmt.Errorf("As[any](%s): want an error, got %v", code, err)
			}
		}
		fmt.Println("self-referential values refused")
		return Finalize(context.Background())
	}
}

func TestSelfReferentialValues(t *testing.T) {
	out, errOut, err := runChild(t, "self-referential")
	require.NoError(t, err, "stderr:\n%.2000s", errOut)
	assert.Contains(t, out, "self-referential values refused")
}

// A goroutine that ends while locked to its OS thread ends the thread; the
// Python thread state duet made for that thread goes with it.
func init() {
	childScenarios["thread-states"] = func() error {
		if err := Init(Options{}); err != nil {
			return err
		}
		before := capi.ThreadStates()
		for range 500 {
			done := make(chan error)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				r, err := Eval("1 + 1", nil)
				r.Close()
				done <- err
			}()
			if err := <-done; err != nil {
				return err
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for capi.ThreadStates() > before+4 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			Drain() // where the states of ended threads are reaped
		}
		fmt.Printf("thread states before %d, after 500 ended threads %d; freed %d\n", before, capi.ThreadStates(), capi.ThreadsFreed())
		if n := capi.ThreadStates(); n > before+4 {
			return fmt.Errorf("%d thread states left from ended threads", n-before)
		}
		return Finalize(context.Background())
	}
}

func TestThreadStatesOfEndedThreadsAreFreed(t *testing.T) {
	out, errOut, err := runChild(t, "thread-states")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%.2000s", out, errOut)
	assert.Contains(t, out, "freed ")
}

func init() {
	// A signal for a Python handler that comes while Finalize decides
	// (Closing) reaches the handler: Finalize gives up here, Python runs
	// on, and the handler runs once. It used to be dropped, for good.
	childScenarios["signal-while-finalize-decides"] = func() error {
		g, err := NewGlobals()
		if err != nil {
			return err
		}
		if err := Exec("import signal, time\nhits = []\nsignal.signal(signal.SIGUSR1, lambda *a: hits.append(1))\n", g); err != nil {
			return err
		}
		inflight := make(chan struct{})
		go func() { Exec("import time\ntime.sleep(0.6)\n", nil); close(inflight) }()
		if err := until("a call in flight", func() bool { return lifetime.InFlight() > 0 }); err != nil {
			return err
		}
		go func() {
			for lifetime.Current() != lifetime.Closing {
				time.Sleep(50 * time.Microsecond)
			}
			syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err = Finalize(ctx)
		cancel()
		if err == nil || lifetime.Current() != lifetime.Ready {
			return fmt.Errorf("Finalize: %v, phase %v; want it to give up", err, lifetime.Current())
		}
		<-inflight
		// Handlers run on Python's main thread, at its next bytecode.
		if err := Exec("for i in range(100):\n    if hits: break\n    time.sleep(0.002)\n", g); err != nil {
			return err
		}
		r, err := Eval("len(hits)", g)
		if err != nil {
			return err
		}
		if n, _ := As[int](r); n != 1 {
			return fmt.Errorf("the handler ran %d times, want 1", n)
		}
		return Finalize(context.Background())
	}
	// Init with options after a Finalize that found Python never started
	// says Python is finalised, as any operation would (not ErrStarted).
	childScenarios["init-after-finalize"] = func() error {
		if err := Finalize(context.Background()); err != nil {
			return err
		}
		if err := Init(Options{Args: []string{"app", "-v"}}); !errors.Is(err, ErrFinalized) {
			return fmt.Errorf("Init(Args) after Finalize: %v, want ErrFinalized", err)
		}
		return nil
	}
}

func TestSignalsAndInitAroundFinalize(t *testing.T) {
	for _, name := range []string{"signal-while-finalize-decides", "init-after-finalize"} {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := runChild(t, name)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "ok")
		})
	}
}
