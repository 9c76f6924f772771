package eventloop

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// asyncio on the loop: see asyncio.py for how, and the package doc for what
// it gives.

//go:embed asyncio.py
var asyncioSource string

// AsyncioGrace bounds how long the loop's end waits for the asyncio tasks
// it cancels (and the default executor) to finish.
var AsyncioGrace = 2 * time.Second

var aio struct {
	once sync.Once
	err  error
	mod  *pygi.Object // the duet_asyncio module
}

func asyncioModule() (*pygi.Object, error) {
	aio.once.Do(func() {
		var b pygi.Block
		g := b.Globals(pygi.Kw{"src": asyncioSource})
		b.Exec("import sys, types\nm = types.ModuleType('duet_asyncio')\n"+
			"exec(compile(src, '<duet asyncio>', 'exec'), m.__dict__)\nsys.modules['duet_asyncio'] = m\n", g)
		aio.mod = b.Import("duet_asyncio")
		aio.err = b.Err()
	})
	return aio.mod, aio.err
}

// startAsyncio runs on the UI thread when the loop starts; the function it
// returns runs when the loop is about to return.
func startAsyncio() (stop func(), err error) {
	m, err := asyncioModule()
	if err != nil {
		return nil, fmt.Errorf("eventloop: asyncio: %w", err)
	}
	r, err := m.CallMethod("install")
	if err != nil {
		return nil, fmt.Errorf("eventloop: asyncio: %w", err)
	}
	r.Close()
	return func() {
		r, err := m.CallMethod("uninstall", AsyncioGrace.Seconds())
		if err != nil {
			reportPanic(fmt.Sprintf("eventloop: closing the asyncio loop: %v", err), nil)
			return
		}
		r.Close()
	}, nil
}

// ErrNotRunning is returned by what needs the loop running.
var ErrNotRunning = errors.New("eventloop: the loop is not running")

// A Task is a Python coroutine running as an asyncio task on the loop,
// started from Go.
type Task struct {
	task *pygi.Object // the asyncio.Task; touched on the UI thread only
	done chan struct{}
	res  *pygi.Object
	err  error
}

// StartTask calls fn(args...), a Python coroutine function (or any callable
// returning an awaitable), and runs the coroutine as an asyncio task on the
// loop. Safe from any goroutine; the loop must be running.
func StartTask(fn *pygi.Object, args ...any) (*Task, error) {
	if !Running() {
		return nil, ErrNotRunning
	}
	t := &Task{done: make(chan struct{})}
	err := InvokeWait(context.Background(), func() error {
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
		return err
	})
	if err != nil {
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
	t, err := StartTask(fn, args...)
	if err != nil {
		return nil, err
	}
	return t.Wait(ctx)
}
