package eventloop

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// asyncio on the loop: see asyncio.py for how, and the package doc for what
// it gives.

// asyncioPy is loaded by the hooks module's import watch when the program
// first imports asyncio while the loop runs (or at the loop's start, when
// it had before): compiling it costs milliseconds of start-up, and a
// program that never imports asyncio has nothing of it.
var asyncioPy = python.Module("duet_asyncio", "asyncio.py")

// asyncioGrace is the running (or last) loop's AsyncioGrace.
var asyncioGrace atomic.Int64

// startAsyncio runs on the UI thread when the loop starts; the function it
// returns runs when the loop is about to return.
func startAsyncio() (stop func(), err error) {
	hooks, err := hooksPy.Load()
	if err != nil {
		return nil, fmt.Errorf("eventloop: asyncio: %w", err)
	}
	r, err := hooks.CallMethod("watch", "asyncio", asyncioPy.Name())
	if err != nil {
		return nil, fmt.Errorf("eventloop: asyncio: %w", err)
	}
	r.Close()
	return func() {
		var b pygi.Block
		b.CallMethod(hooks, "unwatch", "asyncio")
		if m := asyncioPy.Loaded(); m != nil {
			b.CallMethod(m, "uninstall", time.Duration(asyncioGrace.Load()).Seconds())
		}
		if err := b.Err(); err != nil {
			reportError("eventloop: closing the asyncio loop", err)
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
		// the loop's asyncio (through the hooks module's import watch).
		// Once loaded, each loop start installs it.
		if asyncioPy.Loaded() == nil {
			a, err := pygi.Import("asyncio")
			if err != nil {
				return err
			}
			a.Close()
		}
		m, err := asyncioPy.Load()
		if err != nil {
			return err
		}
		done, err := callbacks.New(t.finished, callbacks.Name("task_done"))
		if err != nil {
			return err
		}
		defer done.Close()
		t.task, err = m.CallMethod("start_task", fn, args, done)
		if pe := (*pygi.Error)(nil); errors.As(err, &pe) && pe.Matches(asyncioPy.Name()+".NotRunning") {
			return ErrNotRunning // the loop is ending (see NotRunning)
		}
		return err
	})
	if err != nil && ctx.Err() != nil {
		switch {
		case runContext().Err() == nil:
			// When ctx ends, InvokeWait returns at once, also while fn
			// runs on (waiting for the GIL to release a temporary, say): a
			// task fn made after all is one nobody will wait for,
			// cancelled as ending ctx promises. Invokes run in order, so
			// this one runs after fn.
			Invoke(t.cancel)
		case !errors.Is(err, ErrNotRunning):
			// The loop stopped before the task could start (and cancels
			// the tasks left as it ends).
			return nil, ErrNotRunning
		}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// finished runs on the UI thread when the task is done.
func (t *Task) finished(task *pygi.Object) {
	defer close(t.done)
	if c, err := task.CallMethod("cancelled"); err == nil {
		cancelled, _ := pygi.As[bool](c)
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
// first, Wait asks the loop to cancel the task and returns ctx's error at
// once; the coroutine sees CancelledError at its next await. A task whose
// last step runs as ctx ends may finish before the request reaches it: it
// ends as it would have, and its result is dropped (as a Go call that
// returns when its ctx ends may have done its work). Never on the UI
// thread while the task runs there: it would wait for itself.
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
func (t *Task) Cancel() { Invoke(t.cancel) }

// cancel is Cancel on the UI thread; a Task whose start failed has no task.
func (t *Task) cancel() {
	if t.task == nil {
		return
	}
	if r, err := t.task.CallMethod("cancel"); err == nil {
		r.Close()
	}
}

// Await calls the coroutine function fn(args...) as a task on the loop and
// waits for its result, or until ctx ends (which cancels the task, as
// Task.Wait says). From a goroutine; the loop must be running: a loop that
// has stopped, or is ending, gives ErrNotRunning.
func Await(ctx context.Context, fn *pygi.Object, args ...any) (*pygi.Object, error) {
	t, err := startTask(ctx, fn, args)
	if err != nil {
		return nil, err
	}
	if IsMain() {
		select {
		case <-t.done:
		default:
			t.Cancel()
			return nil, fmt.Errorf("eventloop: Await on the UI thread would block the loop the task runs on (start it with StartTask and let it finish)")
		}
	}
	return t.Wait(ctx)
}
