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
	"github.com/duet-gtk/duet/pygi"
)

// coroutine defines src (Python, with "import asyncio" done) on the loop
// and returns its function main, plus the globals.
func coroutine(t *testing.T, src string, vars pygi.Kw) (main, g *pygi.Object) {
	t.Helper()
	looptest.Do(t, func(t testing.TB) {
		var b pygi.Block
		g = b.Globals(vars)
		b.Exec("import asyncio, sys, os, gc\n"+src, g)
		main = b.Item(g, "main")
		require.NoError(t, b.Err())
	})
	return main, g
}

// await runs main() as a task on the loop and waits for its result.
func await(t *testing.T, main *pygi.Object, args ...any) *pygi.Object {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := eventloop.Await(ctx, main, args...)
	require.NoError(t, err)
	return r
}

func awaitText(t *testing.T, main *pygi.Object, args ...any) string {
	t.Helper()
	s, err := pygi.As[string](await(t, main, args...))
	require.NoError(t, err)
	return s
}

func TestAsyncioRunsOnTheLoop(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	// Code the loop dispatches sees a running loop: an Invoke, and a GLib
	// source Python added.
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval("(lambda l: (type(l).__name__, l.is_running()))(__import__('asyncio').get_running_loop())", nil)
		require.NoError(t, err)
		assert.Equal(t, "('GLibEventLoop', True)", r.String())
	})
	main, _ := coroutine(t, `
from gi.repository import GLib
async def main():
    seen = asyncio.get_running_loop().create_future()
    def from_glib():
        loop = asyncio.get_running_loop()
        asyncio.create_task(done(loop))
        return False
    async def done(loop):
        seen.set_result(type(loop).__name__)
    GLib.timeout_add(1, from_glib)
    return await seen
`, nil)
	assert.Equal(t, "GLibEventLoop", awaitText(t, main))
}

func TestAsyncioOrdering(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	main, _ := coroutine(t, `
import threading
async def main():
    loop = asyncio.get_running_loop()
    out, done = [], loop.create_future()
    loop.call_later(0.03, out.append, "later 30ms")
    loop.call_later(0.01, out.append, "later 10ms")
    loop.call_later(0.02, out.append, "later 20ms")
    loop.call_soon(out.append, "soon 1")
    loop.call_soon(out.append, "soon 2")
    threading.Thread(target=lambda: loop.call_soon_threadsafe(out.append, "threadsafe")).start()
    loop.call_later(0.06, done.set_result, None)
    t0 = loop.time()
    await done
    assert loop.time() - t0 >= 0.06
    return " | ".join(x for x in out if x != "threadsafe") + (" +threadsafe" if "threadsafe" in out else "")
`, nil)
	assert.Equal(t, "soon 1 | soon 2 | later 10ms | later 20ms | later 30ms +threadsafe", awaitText(t, main))
}

func TestAsyncioCancellationAndTimeouts(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	main, _ := coroutine(t, `
async def main():
    out = []
    async def sleeper():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            out.append("cancelled")
            raise
    t = asyncio.create_task(sleeper())
    await asyncio.sleep(0.01)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        out.append("awaited cancelled")
    try:
        await asyncio.wait_for(asyncio.sleep(10), 0.02)
    except asyncio.TimeoutError:
        out.append("timeout")
    return ", ".join(out)
`, nil)
	assert.Equal(t, "cancelled, awaited cancelled, timeout", awaitText(t, main))
}

// An exception nobody awaits goes to the Python exception hook (which duet
// routes to OnPythonException), with asyncio's description as a note.
func TestAsyncioExceptionsReachTheHook(t *testing.T) {
	excs := looptest.CatchPythonExceptions(t)
	main, _ := coroutine(t, `
async def main():
    loop = asyncio.get_running_loop()
    def bad_callback():
        raise ValueError("from a callback")
    loop.call_soon(bad_callback)
    async def bad_task():
        raise KeyError("from a task nobody awaits")
    asyncio.create_task(bad_task())
    await asyncio.sleep(0.02)
    gc.collect()  # the forgotten task says so when it goes
    await asyncio.sleep(0.01)
`, nil)
	await(t, main)
	var texts []string
	require.Eventually(t, func() bool {
		texts = texts[:0]
		for _, e := range excs.All() {
			texts = append(texts, e.Error()+"\n"+e.Traceback)
		}
		return len(texts) >= 2
	}, 5*time.Second, 10*time.Millisecond)
	all := strings.Join(texts, "\n---\n")
	assert.Contains(t, all, "ValueError: from a callback")
	assert.Contains(t, all, "from a task nobody awaits")
	assert.Contains(t, all, "asyncio: Task exception was never retrieved")
}

func TestAsyncioExecutorSocketsSubprocess(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	main, _ := coroutine(t, `
async def main():
    loop = asyncio.get_running_loop()
    out = []
    # run_in_executor: a thread of the default executor, the result back on the loop
    out.append(await loop.run_in_executor(None, sum, range(10)))
    # loopback sockets
    async def echo(reader, writer):
        line = await reader.readline()
        writer.write(b"echo " + line)
        await writer.drain()
        writer.close()
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"ping\n")
    out.append((await reader.readline()).decode().strip())
    writer.close()
    await writer.wait_closed()
    server.close()
    await server.wait_closed()
    # a subprocess, watched through a pidfd
    proc = await asyncio.create_subprocess_exec("/bin/echo", "hi", stdout=asyncio.subprocess.PIPE)
    stdout, _ = await proc.communicate()
    out.append((stdout.decode().strip(), proc.returncode))
    return repr(out)
`, nil)
	assert.Equal(t, "[45, 'echo ping', ('hi', 0)]", awaitText(t, main))
}

func TestAsyncioSignalHandler(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	main, _ := coroutine(t, `
import signal
async def main():
    loop = asyncio.get_running_loop()
    got = loop.create_future()
    loop.add_signal_handler(signal.SIGUSR1, lambda: got.done() or got.set_result("SIGUSR1"))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        return await asyncio.wait_for(got, 5)
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
`, nil)
	assert.Equal(t, "SIGUSR1", awaitText(t, main))
}

// Go awaits Python: the result, the exception, and a context that ends
// first cancels the task.
func TestGoAwaitsPython(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	main, g := coroutine(t, `
state = {}
async def main(kind, x):
    if kind == "ok":
        await asyncio.sleep(0.001)
        return x * 2
    if kind == "raise":
        await asyncio.sleep(0)
        raise ValueError("bad %d" % x)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        state["cancelled"] = True
        raise
def not_a_coroutine():
    return 1
`, nil)
	t.Run("result", func(t *testing.T) {
		n, err := pygi.As[int64](await(t, main, "ok", 21))
		require.NoError(t, err)
		assert.Equal(t, int64(42), n)
	})

	t.Run("exception", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := eventloop.Await(ctx, main, "raise", 7)
		var pe *pygi.Error
		require.ErrorAs(t, err, &pe)
		assert.True(t, pe.Matches("ValueError"))
		assert.Contains(t, err.Error(), "bad 7")
	})

	t.Run("the context ends first: the task is cancelled", func(t *testing.T) {
		short, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err := eventloop.Await(short, main, "hang", 0)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Eventually(t, func() bool {
			var ok bool
			looptest.Do(t, func(t testing.TB) {
				r, err := pygi.Eval("state.get('cancelled', False)", g)
				require.NoError(t, err)
				ok, _ = pygi.As[bool](r)
			})
			return ok
		}, 5*time.Second, 10*time.Millisecond, "the task saw CancelledError")
	})

	t.Run("the context ends while the task starts: the task is cancelled", func(t *testing.T) {
		// The coroutine function starts a goroutine that takes the GIL as
		// soon as the UI thread lets it go (the task made), keeps it 2 ms
		// and then ends Await's ctx: the UI thread is still in Await's
		// start, waiting for the GIL to release what it made, when
		// InvokeWait gives up. Such an Await returned ctx's error while
		// its task ran on, never cancelled.
		var cancelNow atomic.Pointer[context.CancelFunc]
		var x, start *pygi.Object
		looptest.Do(t, func(t testing.TB) {
			var b pygi.Block
			x = b.Globals(pygi.Kw{"fire": func() { (*cancelNow.Load())() }})
			b.Exec("import time\ndef spin():\n    t = time.perf_counter()\n    while time.perf_counter() - t < 0.002: pass\n    fire()\n", x)
			spin := b.Item(x, "spin")
			require.NoError(t, b.Err())
			require.NoError(t, g.SetItem("kick", func() { go spin.Call() }))
			b.Exec(`
ends = {}
async def slow(i):
    try:
        await asyncio.sleep(0.15)
        ends[i] = 'finished'
    except asyncio.CancelledError:
        ends[i] = 'cancelled'
        raise
def start(i):
    kick()
    return slow(i)
`, g)
			start = b.Item(g, "start")
			require.NoError(t, b.Err())
		})
		// The window is narrow: of the Awaits that give up, most do before
		// the task is made, and one or two in 150 gave up in it.
		var gaveUp []int
		for i := range 150 {
			ctx, cancel := context.WithCancel(context.Background())
			cancelNow.Store(&cancel)
			r, err := eventloop.Await(ctx, start, i)
			if err == nil {
				r.Close()
			} else {
				require.ErrorIs(t, err, context.Canceled)
				gaveUp = append(gaveUp, i)
			}
			cancel()
		}
		require.NotEmpty(t, gaveUp, "no Await gave up while its task started: the test missed the window")
		// Every task that was not cancelled ends in 0.15 s; one cancelled
		// before its first step never ran its body.
		time.Sleep(400 * time.Millisecond)
		looptest.Do(t, func(t testing.TB) {
			for _, i := range gaveUp {
				r, err := pygi.Eval(fmt.Sprintf("ends.get(%d, 'cancelled before it ran')", i), g)
				require.NoError(t, err)
				end, err := pygi.As[string](r)
				require.NoError(t, err)
				assert.NotEqual(t, "finished", end, "the task of Await %d, which returned ctx's error", i)
			}
		})
	})

	t.Run("refused", func(t *testing.T) {
		looptest.Do(t, func(t testing.TB) {
			fn, err := g.Item("not_a_coroutine")
			require.NoError(t, err)
			_, err = eventloop.StartTask(fn)
			assert.ErrorContains(t, err, "not an awaitable")
			// Waiting on the UI thread would wait for the thread itself.
			task, err := eventloop.StartTask(main, "ok", 1)
			require.NoError(t, err)
			_, err = task.Wait(context.Background())
			assert.ErrorContains(t, err, "on the UI thread")
		})
	})
}

var errSentinel = errors.New("a Go error")

// Python awaits Go: results, errors and panics as exceptions, and
// cancelling the Python task cancels the Go func's context.
func TestPythonAwaitsGo(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	ctxDone := make(chan error, 1)
	var add, fail, boom, block *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		add, err = callbacks.Async(func(ctx context.Context, a, b int) (int, error) { return a + b, nil })
		require.NoError(t, err)
		fail, err = callbacks.Async(func(ctx context.Context) error { return errSentinel })
		require.NoError(t, err)
		boom, err = callbacks.Async(func(ctx context.Context) string { panic("deliberate") }, callbacks.Name("boom"))
		require.NoError(t, err)
		block, err = callbacks.Async(func(ctx context.Context) error {
			<-ctx.Done()
			ctxDone <- ctx.Err()
			return ctx.Err()
		}, callbacks.Name("block"))
		require.NoError(t, err)
	})
	main, _ := coroutine(t, `
from duet_callbacks import GoError, GoPanic
async def main():
    out = [await add(2, 3)]
    try:
        await fail()
    except GoError as e:
        out.append("GoError: " + str(e))
    try:
        await boom()
    except GoPanic as e:
        out.append("GoPanic: " + str(e).splitlines()[0])
    t = asyncio.create_task(block())
    await asyncio.sleep(0.02)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        out.append("cancelled")
    out.append(asyncio.iscoroutinefunction(add))
    return repr(out)
`, pygi.Kw{"add": add, "fail": fail, "boom": boom, "block": block})
	assert.Equal(t, "[5, 'GoError: a Go error', 'GoPanic: panic in Go async func boom: deliberate', 'cancelled', True]", awaitText(t, main))
	select {
	case err := <-ctxDone:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the Go func's context was not cancelled")
	}
	// The Go error comes back to Go intact through Python.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := eventloop.Await(ctx, fail)
	assert.ErrorIs(t, err, errSentinel)
}

// 10 000 awaits each way under forced collections: callbacks and tasks
// back to the baseline.
func TestAwaitsUnderGCReturnToBaseline(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := looptest.Settle(t)
	var tasks0 int64
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval("len(__import__('asyncio').all_tasks())", nil)
		require.NoError(t, err)
		tasks0, _ = pygi.As[int64](r)
	})
	stop := make(chan struct{})
	var gcs atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.GC()
				gcs.Add(1)
			}
		}
	}()
	func() {
		defer close(stop)
		var inc *pygi.Object
		looptest.Do(t, func(t testing.TB) {
			var err error
			inc, err = callbacks.Async(func(ctx context.Context, n int) int { return n + 1 })
			require.NoError(t, err)
		})
		main, g := coroutine(t, `
async def main(n):
    x = 0
    for i in range(n):
        x = await inc(x)
        if i % 1000 == 0:
            gc.collect()
    return x
async def echo(x):
    await asyncio.sleep(0)
    return x
`, pygi.Kw{"inc": inc})
		n, err := pygi.As[int64](await(t, main, 10000))
		require.NoError(t, err)
		assert.Equal(t, int64(10000), n)
		var echo *pygi.Object
		looptest.Do(t, func(t testing.TB) {
			var err error
			echo, err = g.Item("echo")
			require.NoError(t, err)
		})
		for i := range 10000 {
			r, err := eventloop.Await(ctx, echo, i)
			require.NoError(t, err)
			r.Close()
		}
		inc.Close()
		main.Close()
		echo.Close()
	}()
	assert.Positive(t, gcs.Load())
	assert.LessOrEqual(t, looptest.Settle(t), base, "callbacks back to the baseline")
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval("len(__import__('asyncio').all_tasks())", nil)
		require.NoError(t, err)
		n, _ := pygi.As[int64](r)
		assert.Equal(t, tasks0, n, "tasks back to the baseline")
	})
}

func init() {
	// asyncio outside the loop behaves as under python3; inside, the loop
	// is GLib's; at the loop's end, tasks left are cancelled (their finally
	// blocks run); and a second run of the loop gets a fresh asyncio loop.
	lifetimeChildren["asyncio-outside"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if _, err := eventloop.Await(context.Background(), g); !errors.Is(err, eventloop.ErrNotRunning) {
			return fmt.Errorf("Await with no loop: want ErrNotRunning, got %v", err)
		}
		if err := pygi.Exec(`
import asyncio, sys
from gi.repository import GLib
async def f():
    await asyncio.sleep(0)
    return 7
print("before:", asyncio.run(f()))
async def forever():
    try:
        await asyncio.sleep(100)
    finally:
        print("cleanup ran")
def inside():
    loop = asyncio.get_running_loop()
    print("inside:", type(loop).__name__)
    c = f()
    try:
        asyncio.run(c)
    except RuntimeError as e:
        print("nested:", e)
        c.close()
    asyncio.create_task(forever())
`, g); err != nil {
			return err
		}
		for run := range 2 {
			eventloop.Invoke(func() {
				if err := pygi.Exec("inside()", g); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
				eventloop.After(30*time.Millisecond, eventloop.Quit)
			})
			if err := eventloop.Run(context.Background()); err != nil {
				return err
			}
			fmt.Println("loop run", run+1, "returned")
		}
		return pygi.Exec(`
print("after:", asyncio.run(f()))
try:
    asyncio.get_running_loop()
except RuntimeError as e:
    print("after, no running loop:", e)
`, g)
	}
	// A program that never imports asyncio does not pay for it; one that
	// imports it while the loop runs finds it running.
	lifetimeChildren["asyncio-lazy"] = func() error {
		eventloop.Invoke(func() {
			err := pygi.Exec(`
import sys
print("imported at start:", "asyncio" in sys.modules)
import asyncio
print("after import:", type(asyncio.get_running_loop()).__name__)
`, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			eventloop.Quit()
		})
		return eventloop.Run(context.Background())
	}
	// Go awaiting a coroutine can be the program's first use of asyncio.
	lifetimeChildren["asyncio-await-first"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("async def main(x):\n    return x + 1\n", g); err != nil {
			return err
		}
		main, err := g.Item("main")
		if err != nil {
			return err
		}
		var runErr error
		go func() {
			defer eventloop.Quit()
			for !eventloop.Running() {
				time.Sleep(time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r, err := eventloop.Await(ctx, main, 41)
			if err != nil {
				runErr = err
				return
			}
			fmt.Println("awaited:", r)
		}()
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		return runErr
	}
	// An idle loop with asyncio in use (a listening server, a far timer)
	// dispatches nothing: GLib sleeps in its poll.
	lifetimeChildren["asyncio-idle"] = func() error {
		eventloop.Invoke(func() {
			err := pygi.Exec(`
import asyncio, time
from gi.repository import GLib
async def serve():
    async def handle(r, w):
        w.close()
    global server
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    asyncio.get_running_loop().call_later(3600, print, "an hour later")
task = asyncio.get_running_loop().create_task(serve())
ctx = GLib.MainContext.default()
deadline = time.monotonic() + 5
while not task.done() and time.monotonic() < deadline:
    ctx.iteration(False)
assert task.done(), "the server did not start"
while ctx.iteration(False):
    pass
time.sleep(0.05)
assert not ctx.iteration(False), "an idle asyncio loop dispatched something"
print("idle: nothing dispatched")
`, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			eventloop.Quit()
		})
		return eventloop.Run(context.Background())
	}
}

func TestAsyncioOutsideAndAcrossLoopRuns(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "asyncio-outside")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, out, "before: 7")
	assert.Equal(t, 2, strings.Count(out, "inside: GLibEventLoop"))
	assert.Equal(t, 2, strings.Count(out, "nested: asyncio.run() cannot be called from a running event loop"))
	assert.Equal(t, 2, strings.Count(out, "cleanup ran"), "the loop's end cancels the tasks left")
	assert.Contains(t, out, "loop run 2 returned")
	assert.Contains(t, out, "after: 7")
	assert.Contains(t, out, "after, no running loop: no running event loop")
	assert.Empty(t, errOut)
}

func TestAsyncioIsLazyAndIdle(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "asyncio-lazy")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, out, "imported at start: False")
	assert.Contains(t, out, "after import: GLibEventLoop")

	out, errOut, code = runLifetimeChild(t, "asyncio-await-first")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, out, "awaited: 42")

	out, errOut, code = runLifetimeChild(t, "asyncio-idle")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	assert.Contains(t, out, "idle: nothing dispatched", "stderr:\n%s", errOut)
}

// Every asyncio wait honours its context, and a Go async func awaited from
// an asyncio loop that is not duet's settles on that loop.
func init() {
	lifetimeChildren["await-loop-stops"] = func() error {
		coro, err := pygi.Eval("(lambda: __import__('asyncio').sleep(0.01))", nil)
		if err != nil {
			return err
		}
		res := make(chan error, 1)
		go func() {
			for !eventloop.Running() {
				time.Sleep(time.Millisecond)
			}
			// The loop stops before the Await's work reaches it: the Await
			// is queued while the batch that quits the loop runs.
			quitting := make(chan struct{})
			eventloop.Invoke(func() { eventloop.Quit(); close(quitting); time.Sleep(100 * time.Millisecond) })
			<-quitting
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := eventloop.Await(ctx, coro)
			if time.Since(start) > 3*time.Second {
				err = fmt.Errorf("Await took %v", time.Since(start))
			} else if !errors.Is(err, eventloop.ErrNotRunning) {
				err = fmt.Errorf("Await on a stopped loop: %v, want ErrNotRunning", err)
			} else {
				err = nil
			}
			res <- err
		}()
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		select {
		case err := <-res:
			if err != nil {
				return err
			}
		case <-time.After(10 * time.Second):
			return errors.New("Await hung after the loop stopped")
		}
		fmt.Println("Await returned")
		return pygi.Finalize(context.Background())
	}
	// An Await whose start the loop's end runs (the end iterates GLib while
	// it lets the tasks it cancelled settle) is told ErrNotRunning, not
	// Python's error for a loop that is not running.
	lifetimeChildren["await-while-the-loop-ends"] = func() error {
		coro, err := pygi.Eval("(lambda: __import__('asyncio').sleep(0.01))", nil)
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		res := make(chan error, 1)
		// Called as the loop's end cancels linger: the Await's start is
		// queued then, and the end's iterations run it.
		if err := g.SetItem("await_now", func() {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := eventloop.Await(ctx, coro)
				res <- err
			}()
		}); err != nil {
			return err
		}
		if err := pygi.Exec(`import asyncio
async def linger():
    try:
        await asyncio.sleep(100)
    except asyncio.CancelledError:
        await_now()
        await asyncio.sleep(0.2)
        raise
`, g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			if err := pygi.Exec("task = asyncio.get_running_loop().create_task(linger())", g); err != nil {
				panic(err)
			}
			eventloop.After(20*time.Millisecond, eventloop.Quit)
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if err := <-res; !errors.Is(err, eventloop.ErrNotRunning) {
			return fmt.Errorf("Await while the loop ends: %v, want ErrNotRunning", err)
		}
		fmt.Println("Await while the loop ends: ErrNotRunning")
		return pygi.Finalize(context.Background())
	}
	lifetimeChildren["await-foreign-loop"] = func() error {
		double, err := callbacks.Async(func(ctx context.Context, n int) (int, error) { return 2 * n, nil })
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("double", double); err != nil {
			return err
		}
		if err := pygi.Exec(`
import asyncio, threading
result = []
def in_thread():
    import time
    async def main():
        return await asyncio.wait_for(double(21), 30)
    start = time.monotonic()
    try:
        r = asyncio.run(main())
        result.append(r if time.monotonic() - start < 3 else "took %.1f s" % (time.monotonic() - start))
    except BaseException as e:
        result.append(repr(e))
def go():
    t = threading.Thread(target=in_thread)
    t.start()
    return t
`, g); err != nil {
			return err
		}
		// With duet's loop not running, then running.
		t, err := pygi.Eval("go()", g)
		if err != nil {
			return err
		}
		if _, err := t.CallMethod("join", 40); err != nil {
			return err
		}
		var second error
		eventloop.Invoke(func() {
			t, err := pygi.Eval("go()", g)
			if err != nil {
				second = err
				eventloop.Quit()
				return
			}
			go func() {
				_, second = t.CallMethod("join", 40)
				eventloop.Quit()
			}()
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if second != nil {
			return second
		}
		r, err := pygi.Eval("result", g)
		if err != nil {
			return err
		}
		fmt.Println("results:", r.String())
		return pygi.Finalize(context.Background())
	}
}

func TestAsyncioWaitsHonourTheirContext(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "await-loop-stops")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "Await returned")

	out, errOut, code = runLifetimeChild(t, "await-while-the-loop-ends")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "Await while the loop ends: ErrNotRunning")
}

func TestGoAsyncAwaitedFromAnotherAsyncioLoop(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "await-foreign-loop")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "results: [42, 42]")
}
