package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/internal/testutil/programpoll"
	"github.com/duet-gtk/duet/pygi"
)

// The awaiting coroutine resumes inside the settle (_duet_run_ready), not a
// GLib iteration later; nested in a callback of the loop (an iteration from
// inside a task), the settle leaves the resumption to that loop's own
// turn, and the results are the same either way.
func TestAGoSettleResumesItsTaskAtOnce(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var one *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		one, err = callbacks.Async(func(ctx context.Context, n int) int { return n + 1 }, callbacks.Name("one"))
		require.NoError(t, err)
	})
	main, _ := coroutine(t, `
import inspect, time
from gi.repository import GLib
def through():
    f, names = inspect.currentframe(), []
    while f is not None:
        names.append(f.f_code.co_name)
        f = f.f_back
    return "_duet_run_ready" in names
async def main():
    out = []
    for i in range(3):
        out.append((await one(i), through()))
    # Nested: the Go func's settle runs inside an iteration this task's
    # step makes itself, where resuming another task would break asyncio's
    # rules (one task steps at a time).
    t = asyncio.ensure_future(one(10))
    await asyncio.sleep(0)  # t's first step starts the Go func
    w = t._fut_waiter
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + 30
    while not w.done() and time.monotonic() < deadline:
        ctx.iteration(False)
    out.append(("nested", w.done(), t.done()))
    out.append(await t)
    return repr(out)
`, pygi.Kw{"one": one})
	assert.Equal(t, "[(1, True), (2, True), (3, True), ('nested', True, False), 11]", awaitText(t, main))
}

// Go funcs whose time spans the loop's spin window before poll (a few to a
// hundred microseconds): every await completes, with and without a spin
// catching the completion, so the spinner and the post never miss each
// other (a lost wake-up would hang an await: the loop sleeps on with the
// result queued). Counted: spins that found the post, and posts that wrote
// no wake-up because the loop spun.
func TestAwaitsAcrossTheSpinWindow(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var busy *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		busy, err = callbacks.Async(func(ctx context.Context, us int) int {
			for end := time.Now().Add(time.Duration(us) * time.Microsecond); time.Now().Before(end); {
			}
			return us
		}, callbacks.Name("busy"))
		require.NoError(t, err)
	})
	main, _ := coroutine(t, `
async def main(n):
    total = 0
    for i in range(n):
        total += await busy(i % 100)
    return total
`, pygi.Kw{"busy": busy})
	found0, _, unwoken0 := capi.SpinStats()
	var found, unwoken int
	for round := 0; round < 10; round++ {
		r := await(t, main, 1000)
		total, err := pygi.As[int](r)
		require.NoError(t, err)
		require.Equal(t, 10*(0+99)*100/2, total)
		f, e, u := capi.SpinStats()
		found, unwoken = f-found0, u-unwoken0
		t.Logf("after round %d: spins that found the post %d, ended empty %d (all time), posts without a wake-up %d", round, found, e, unwoken)
		if found > 0 && unwoken > 0 {
			break
		}
	}
	// On a machine with one CPU the loop never spins (the spinner would
	// take the CPU the goroutine needs).
	if capi.MultiCPU() {
		assert.Positive(t, found, "the loop never found a completion while spinning")
		assert.Positive(t, unwoken, "no post ever skipped the wake-up")
	}
}

func init() {
	// What the loop owes when it stops is run then, on the UI thread,
	// once: a PostUI queued after the loop's last iteration (run returns
	// without iterating again) runs as Drive ends, and the Invoke it left
	// queued does nothing when the next loop runs it.
	lifetimeChildren["post-at-stop"] = func() error {
		var ran, onMain atomic.Int32
		post := func() {
			ran.Add(1)
			if eventloop.IsMain() {
				onMain.Add(1)
			}
		}
		run := func() {
			posted := make(chan struct{})
			go func() {
				lifetime.PostUI(post)
				close(posted)
			}()
			<-posted
			if ran.Load() != 0 {
				fmt.Println("ran before the loop stopped")
			}
		}
		if err := eventloop.Drive(context.Background(), run, func() {}); err != nil {
			return err
		}
		fmt.Printf("after the loop: ran %d, on the UI thread %d\n", ran.Load(), onMain.Load())
		// The stale Invoke runs first in the next loop (work queued before
		// a loop starts runs first), then the loop quits.
		eventloop.Invoke(eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		fmt.Printf("after the next loop: ran %d\n", ran.Load())
		// And with no loop running it runs at once, here.
		lifetime.PostUI(post)
		fmt.Printf("with no loop: ran %d\n", ran.Load())
		return pygi.Finalize(context.Background())
	}
	// The loop quits while a task awaits a Go func that blocks until its
	// context ends (the loop armed its spin when the call started): Run
	// returns, the task is cancelled with the loop's end, the Go func sees
	// its context cancelled, and its settle (which finds the loop closed)
	// runs.
	lifetimeChildren["quit-while-awaiting"] = func() error {
		started := make(chan struct{})
		ended := make(chan error, 1)
		block, err := callbacks.Async(func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			ended <- ctx.Err()
			return ctx.Err()
		}, callbacks.Name("block"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("block", block); err != nil {
			return err
		}
		if err := pygi.Exec(`
import asyncio
out = []
async def main():
    try:
        await block()
    except asyncio.CancelledError:
        out.append("cancelled")
        raise
`, g); err != nil {
			return err
		}
		main, err := g.Item("main")
		if err != nil {
			return err
		}
		go func() {
			for !eventloop.Running() {
				time.Sleep(time.Millisecond)
			}
			if _, err := eventloop.StartTask(main); err != nil {
				fmt.Println("StartTask:", err)
				eventloop.Quit()
				return
			}
			<-started
			eventloop.Quit()
		}()
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		fmt.Println("Run returned")
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("the Go func's context ended with %v", err)
			}
			fmt.Println("the Go func was cancelled")
		case <-time.After(20 * time.Second):
			return errors.New("the Go func's context was never cancelled")
		}
		r, err := pygi.Eval("out", g)
		if err != nil {
			return err
		}
		fmt.Println("task:", r.String())
		return pygi.Finalize(context.Background())
	}
}

func init() {
	// A KeyboardInterrupt raised in a task that a Go settle resumed leaves
	// the loop's asyncio source, printed as python3 prints it from a GLib
	// callback: where it leaves when asyncio's own iteration resumed the
	// task (KI_AFTER=sleep0), never through the settle, which would lose
	// it. (What follows is the same either way, and not this test's: the
	// source that raised is gone, PyGObject drops a source whose dispatch
	// raised, so the loop's asyncio stops; a timer ends the loop.)
	lifetimeChildren["ki-after-await"] = func() error {
		one, err := callbacks.Async(func(ctx context.Context) int { return 1 }, callbacks.Name("one"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("one", one); err != nil {
			return err
		}
		if err := pygi.Exec(`
import asyncio
async def after(what):
    if what == "go":
        await one()
    else:
        await asyncio.sleep(0)
    raise KeyboardInterrupt("after the " + what + " await")
`, g); err != nil {
			return err
		}
		after, err := g.Item("after")
		if err != nil {
			return err
		}
		started := make(chan error, 1)
		go func() {
			for !eventloop.Running() {
				time.Sleep(time.Millisecond)
			}
			_, err := eventloop.StartTask(after, os.Getenv("KI_AFTER"))
			started <- err
		}()
		eventloop.After(500*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background(), eventloop.AsyncioGrace(0)); err != nil {
			return fmt.Errorf("Run: %v", err)
		}
		if err := <-started; err != nil {
			return err
		}
		fmt.Println("Run returned")
		return pygi.Finalize(context.Background())
	}
}

func TestKeyboardInterruptAfterAGoAwait(t *testing.T) {
	for _, what := range []string{"go", "sleep0"} {
		t.Run(what, func(t *testing.T) {
			out, errOut, err := testutil.RunChild(t, "EVENTLOOP_CHILD=ki-after-await", "KI_AFTER="+what)
			require.Equal(t, 0, testutil.ExitCode(t, err), "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "Run returned")
			tb, _, ok := strings.Cut(errOut, "KeyboardInterrupt: after the "+what+" await")
			require.True(t, ok, "printed; stderr:\n%s", errOut)
			assert.Contains(t, tb, "in dispatch\n", "raised from the loop's asyncio source")
			assert.NotContains(t, tb, "in settle", "not through the Go func's settle")
		})
	}
}

func init() {
	// The loop's first set-up races with Invokes from goroutines (each sets
	// up what it needs): one invoke source, and, while the loop runs, one
	// poll wrapper around GLib's own (a wrapper around itself would spin
	// forever), given back when the loop ends.
	lifetimeChildren["setup-race"] = func() error {
		var ran atomic.Int32
		start := make(chan struct{})
		for range 8 {
			go func() {
				<-start
				eventloop.Invoke(func() { ran.Add(1) })
			}()
		}
		close(start)
		wrapped := false
		eventloop.After(50*time.Millisecond, func() { wrapped = capi.LoopPollWrapped() })
		eventloop.After(100*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		fmt.Printf("ran %d; poll wrapped once: %v; given back: %v\n", ran.Load(), wrapped, !capi.LoopPollWrapped())
		return pygi.Finalize(context.Background())
	}
}

func TestTheLoopIsSetUpOnce(t *testing.T) {
	for range 3 {
		out, errOut, code := runLifetimeChild(t, "setup-race")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, out, "ran 8; poll wrapped once: true; given back: true")
	}
}

func TestPostUIRunsOnceWhenTheLoopStopsFirst(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "post-at-stop")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.NotContains(t, out, "ran before the loop stopped")
	assert.Contains(t, out, "after the loop: ran 1, on the UI thread 1")
	assert.Contains(t, out, "after the next loop: ran 1")
	assert.Contains(t, out, "with no loop: ran 2")
}

func TestQuitWhileAwaitingAGoFunc(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "quit-while-awaiting")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "Run returned")
	assert.Contains(t, out, "the Go func was cancelled")
	assert.Contains(t, out, "task: ['cancelled']")
	assert.False(t, strings.Contains(errOut, "Traceback"), errOut)
}

func init() {
	// An exception raised by __del__ while Py_FinalizeEx tears the modules
	// down reaches Go (OnPythonException) with its traceback, though
	// traceback can no longer be imported then.
	lifetimeChildren["del-at-exit"] = func() error {
		eventloop.OnPythonException(func(e *pygi.Error) {
			fmt.Printf("reported: %s: %s; traceback names the frame: %v\n", e.Type, e.Message,
				strings.Contains(e.Traceback, "in __del__"))
		})
		var runErr error
		eventloop.Invoke(func() {
			defer eventloop.Quit()
			runErr = pygi.Exec(`
import sys, types
m = types.ModuleType("del_at_exit")
sys.modules["del_at_exit"] = m
exec("""
class D:
    def __del__(self):
        raise ValueError("raised by __del__ at exit")
obj = D()
""", m.__dict__)
del m
`, nil)
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if runErr != nil {
			return runErr
		}
		return pygi.Finalize(context.Background())
	}
}

func TestAnErrorAtExitKeepsItsTraceback(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "del-at-exit")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "reported: ValueError: raised by __del__ at exit; traceback names the frame: true")
}

// A task resumed at once by a Go func's settle (inside the invoke source's
// dispatch) that iterates the context, by hand or with a nested
// GLib.MainLoop (a modal wait), does not enter asyncio again: another
// task running meanwhile is stepped as before, not refused and lost.
func TestATaskResumedBySettleMayIterateTheContext(t *testing.T) {
	exc := looptest.CatchPythonExceptions(t)
	var one *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		one, err = callbacks.Async(func(ctx context.Context, n int) int { return n + 1 }, callbacks.Name("one"))
		require.NoError(t, err)
	})
	main, _ := coroutine(t, `
from gi.repository import GLib
async def other():
    n = 0
    for _ in range(20):
        await asyncio.sleep(0)
        n += 1
    return n
async def main(modal):
    task = asyncio.ensure_future(other())
    await asyncio.sleep(0)
    await one(1)  # the rest of this step runs in the settle
    if modal:
        ml = GLib.MainLoop()
        GLib.timeout_add(30, lambda: (ml.quit(), False)[1])
        ml.run()
    else:
        ctx = GLib.MainContext.default()
        for _ in range(20):
            ctx.iteration(False)
    try:
        return repr(await asyncio.wait_for(task, 5))
    except Exception as e:
        return type(e).__name__
`, pygi.Kw{"one": one})
	for _, modal := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := eventloop.Await(ctx, main, modal)
		cancel()
		require.NoError(t, err, "modal %v", modal)
		assert.Equal(t, "20", r.String(), "modal %v: the other task ran to its end", modal)
	}
	for _, e := range exc.All() {
		t.Errorf("python exception:\n%s", e.Traceback)
	}
}

// A task that a Go func's settle resumed (inside the invoke source's
// dispatch) and that runs a nested main loop (a modal wait) still gets
// Invokes there, as after asyncio.sleep(0): here the very Invoke that ends
// the wait.
func TestANestedLoopAfterAnAwaitGetsInvokes(t *testing.T) {
	main := modalAfterAwait(t, 10000)
	for _, goFunc := range []bool{true, false} {
		assert.Equal(t, "quit by the Invoke", awaitText(t, main, goFunc), "after awaiting a Go func: %v", goFunc)
	}
}

// The same behind a flood of Invokes: the settle's dispatch had cleared the
// invoke source's flag when it began, and what it left (the rest of its
// batch, the Invokes queued before it) was flagged again only when it
// ended; an Invoke queued behind them flags nothing (only the first into an
// empty queue does), so the nested loop saw no work and the modal waited
// for its own timeout (15 of 20 with a busy timer, a review found; 5 of 5
// here without the fix). The flood's order holds throughout.
func TestANestedLoopAfterAnAwaitGetsInvokesBehindAFlood(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	main := modalAfterAwait(t, 3000)
	var posted, ran, outOfOrder atomic.Int64
	next := int64(0) // the loop thread's only
	stop, flooded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flooded)
		for i := int64(0); ; {
			select {
			case <-stop:
				return
			default:
			}
			if posted.Load()-ran.Load() >= 60 {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			seq := i
			i++
			posted.Add(1)
			eventloop.Invoke(func() {
				if seq != next {
					outOfOrder.Add(1)
				}
				next = seq + 1
				work(300 * time.Microsecond)
				ran.Add(1)
			})
		}
	}()
	for i := range 5 {
		assert.Equal(t, "quit by the Invoke", awaitText(t, main, true), "await %d", i)
	}
	close(stop)
	<-flooded
	looptest.Turn(t)
	assert.Equal(t, posted.Load(), ran.Load(), "every Invoke of the flood ran")
	assert.Zero(t, outOfOrder.Load(), "in order")
}

// modalAfterAwait is a coroutine main(go) that awaits a Go func (go true)
// or asyncio.sleep(0), then runs a modal wait that an Invoke from a
// goroutine ends after 20 ms, or its own timeout after timeoutMS. It
// returns which.
func modalAfterAwait(t *testing.T, timeoutMS int) *pygi.Object {
	var one, quitLater *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		one, err = callbacks.Async(func(ctx context.Context) int { return 1 }, callbacks.Name("one"))
		require.NoError(t, err)
		quitLater, err = callbacks.New(func(ml *pygi.Object) {
			ml, err := ml.Clone()
			if err != nil {
				panic(err)
			}
			go func() {
				time.Sleep(20 * time.Millisecond)
				eventloop.Invoke(func() {
					if _, err := ml.CallMethod("quit"); err != nil {
						panic(err)
					}
				})
			}()
		}, callbacks.Name("quit_later"))
		require.NoError(t, err)
	})
	main, _ := coroutine(t, fmt.Sprintf(`
from gi.repository import GLib
def modal():
    ml = GLib.MainLoop()
    quit_later(ml)
    def fallback():
        ml.quit()
        modal.timed_out = True
        return False
    modal.timed_out = False
    src = GLib.timeout_add(%d, fallback)
    ml.run()
    if not modal.timed_out:
        GLib.source_remove(src)
    return "timed out" if modal.timed_out else "quit by the Invoke"
async def main(go):
    if go:
        await one()  # the rest of this step runs in the settle, an Invoke
    else:
        await asyncio.sleep(0)
    return modal()
`, timeoutMS), pygi.Kw{"one": one, "quit_later": quitLater})
	return main
}

func init() {
	// A program that sets its own poll while duet's loop runs (saving
	// duet's as the one it calls) and runs the loop again: the loop must
	// not wrap the program's poll (each would call the other for ever).
	lifetimeChildren["program-poll"] = func() error {
		// The timer starts once the program's poll is in: started before
		// the run, it may be due by the first dispatch on a slow machine
		// (the sanitizers' build), and the run end before its next poll.
		eventloop.Invoke(func() {
			programpoll.Install()
			eventloop.After(50*time.Millisecond, eventloop.Quit)
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		first := programpoll.Calls()
		eventloop.After(50*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		fmt.Printf("the program's poll ran in both runs: %v\n", first > 0 && programpoll.Calls() > first)
		return pygi.Finalize(context.Background())
	}
}

func TestAProgramsOwnPollIsNotWrapped(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "program-poll")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "the program's poll ran in both runs: true")
}

// runtime.Goexit in a Go async func (t.FailNow or require.* in a test's
// func) ends its await with GoPanic instead of leaving it waiting for ever.
func TestGoexitInAnAsyncFuncEndsItsAwait(t *testing.T) {
	var bye *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		bye, err = callbacks.Async(func(ctx context.Context) int { runtime.Goexit(); return 0 }, callbacks.Name("bye"))
		require.NoError(t, err)
	})
	main, _ := coroutine(t, `
async def main():
    try:
        await asyncio.wait_for(bye(), 10)
        return "returned"
    except BaseException as e:
        return "%s: %s" % (type(e).__name__, e)
`, pygi.Kw{"bye": bye})
	got := awaitText(t, main)
	assert.Contains(t, got, "GoPanic")
	assert.Contains(t, got, "runtime.Goexit")
}
