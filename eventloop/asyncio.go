package eventloop

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// asyncio on the loop: see asyncio.py for how, and the package doc for what
// it gives.

//go:embed asyncio.py
var asyncioSource string

// asyncioGrace is the running (or last) loop's AsyncioGrace.
var asyncioGrace atomic.Int64

var aio struct {
	once   sync.Once
	err    error
	mod    *pygi.Object // the duet_asyncio module
	loaded atomic.Bool  // mod was loaded (the first import may be on any thread)

	bootOnce sync.Once
	bootErr  error
	boot     *pygi.Object // the bootstrap's globals
}

// asyncioBoot is what runs when the loop starts: a finder that loads
// asyncio.py (compiling it costs milliseconds of start-up) only when the
// program imports asyncio, or the load now if it already has.
const asyncioBoot = `
import sys, _thread

class DuetAsyncioFinder:
    def find_spec(self, name, path=None, target=None):
        if name != "asyncio":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        m = load()
        m.install(ui)
        f = m._state["finder"]
        return f.find_spec(name, path, target) if f is not None else None

def boot():
    global ui
    ui = _thread.get_ident()
    if "asyncio" in sys.modules:
        load().install(ui)
        return None
    f = DuetAsyncioFinder()
    sys.meta_path.insert(0, f)
    return f

def unboot(f):
    try:
        sys.meta_path.remove(f)
    except ValueError:
        pass
`

func asyncioModule() (*pygi.Object, error) {
	aio.once.Do(func() {
		aio.mod, aio.err = pygi.ExecModule("duet_asyncio", asyncioSource, "<duet asyncio>")
		aio.loaded.Store(aio.err == nil)
	})
	return aio.mod, aio.err
}

// startAsyncio runs on the UI thread when the loop starts; the function it
// returns runs when the loop is about to return.
func startAsyncio() (stop func(), err error) {
	aio.bootOnce.Do(func() {
		var b pygi.Block
		load := func() (*pygi.Object, error) { return asyncioModule() }
		aio.boot = b.Globals(pygi.Kw{"load": load})
		b.Exec(asyncioBoot, aio.boot)
		aio.bootErr = b.Err()
	})
	if aio.bootErr != nil {
		return nil, fmt.Errorf("eventloop: asyncio: %w", aio.bootErr)
	}
	var b pygi.Block
	finder := b.CallMethod(b.Item(aio.boot, "boot"), "")
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("eventloop: asyncio: %w", err)
	}
	return func() {
		var b pygi.Block
		if !finder.IsNone() {
			b.CallMethod(b.Item(aio.boot, "unboot"), "", finder)
		}
		if aio.loaded.Load() {
			m, _ := asyncioModule()
			b.CallMethod(m, "uninstall", time.Duration(asyncioGrace.Load()).Seconds())
		}
		if err := b.Err(); err != nil {
			reportPanic(fmt.Sprintf("eventloop: closing the asyncio loop: %v", err), nil)
		}
	}, nil
}

// ErrNotRunning is returned by what needs the loop running.
var ErrNotRunning = errors.New("eventloop: the loop is not running")

// A Task is a Python coroutine running as an asyncio task on the loop,
// started from Go.
type Task struct {
	task *pygi.Object // the asyncio.Task, owned by this Task (released with it); used on the UI thread only
	done chan struct{}
	res  *pygi.Object
	err  error
}

// StartTask calls fn(args...), a Python coroutine function (or any callable
// returning an awaitable), and runs the coroutine as an asyncio task on the
// loop. Safe from any goroutine; the loop must be running.
func StartTask(fn *pygi.Object, args ...any) (*Task, error) {
	return startTask(context.Background(), fn, args)
}

// startTask starts the task unless ctx ends, or the loop stops, first.
func startTask(ctx context.Context, fn *pygi.Object, args []any) (*Task, error) {
	if !Running() {
		return nil, ErrNotRunning
	}
	ctx, cancel := untilLoopStops(ctx)
	defer cancel()
	t := &Task{done: make(chan struct{})}
	err := InvokeWait(ctx, func() error {
		// The first use of asyncio may be this one: importing it starts
		// the loop's asyncio (through the bootstrap's finder). Once loaded,
		// each loop start installs it.
		if !aio.loaded.Load() {
			a, err := pygi.Import("asyncio")
			if err != nil {
				return err
			}
			a.Close()
		}
		m, err := asyncioModule()
		if err != nil {
			return err
		}
		done, err := callbacks.New(t.finished, callbacks.Name("task_done"))
		if err != nil {
			return err
		}
		defer done.Close()
		t.task, err = m.CallMethod("start_task", fn, args, done)
		if err == nil && ctx.Err() != nil {
			// The caller has stopped waiting (InvokeWait returned ctx's
			// error): a task nobody will wait for is cancelled, as ending
			// ctx promises.
			if r, cerr := t.task.CallMethod("cancel"); cerr == nil {
				r.Close()
			}
		}
		return err
	})
	if err != nil {
		if ctx.Err() != nil && runContext().Err() != nil && !errors.Is(err, ErrNotRunning) {
			return nil, ErrNotRunning // the loop stopped before the task could start
		}
		return nil, err
	}
	return t, nil
}

// finished runs on the UI thread when the task is done.
func (t *Task) finished(task *pygi.Object) {
	defer close(t.done)
	if c, err := task.CallMethod("cancelled"); err == nil {
		cancelled, _ := c.Bool()
		c.Close()
		if cancelled {
			t.err = context.Canceled
			return
		}
	}
	t.res, t.err = task.CallMethod("result")
}

// Done is closed when the task has ended.
func (t *Task) Done() <-chan struct{} { return t.done }

// Wait waits for the task's result: the coroutine's return value, or its
// exception as a *pygi.Error (a GoError raised from a Go error unwraps to
// that error), or context.Canceled if the task was cancelled. When ctx ends
// first, the task is cancelled and Wait returns ctx's error at once; the
// coroutine sees CancelledError at its next await. Never on the UI thread
// while the task runs there: it would wait for itself.
func (t *Task) Wait(ctx context.Context) (*pygi.Object, error) {
	select {
	case <-t.done:
		return t.res, t.err
	default:
	}
	if IsMain() {
		return nil, fmt.Errorf("eventloop: Task.Wait on the UI thread would block the loop the task runs on")
	}
	select {
	case <-t.done:
		return t.res, t.err
	case <-ctx.Done():
		t.Cancel()
		return nil, ctx.Err()
	case <-runContext().Done():
		// The loop stopped; its end cancels the tasks left and settles
		// them while it still iterates, so done comes, or nothing will.
		select {
		case <-t.done:
			return t.res, t.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(asyncioGrace.Load()) + time.Second):
			return nil, ErrNotRunning
		}
	}
}

// Cancel asks the task to stop (asyncio's Task.cancel). Safe from any
// goroutine.
func (t *Task) Cancel() {
	Invoke(func() {
		if r, err := t.task.CallMethod("cancel"); err == nil {
			r.Close()
		}
	})
}

// Await calls the coroutine function fn(args...) as a task on the loop and
// waits for its result, or until ctx ends (which cancels the task). From a
// goroutine; the loop must be running.
func Await(ctx context.Context, fn *pygi.Object, args ...any) (*pygi.Object, error) {
	t, err := startTask(ctx, fn, args)
	if err != nil {
		return nil, err
	}
	return t.Wait(ctx)
}
