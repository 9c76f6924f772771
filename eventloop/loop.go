package eventloop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	runtime.LockOSThread() // main stays on the main OS thread: the UI thread
	capi.SetLoopHandlers(dispatch, fireTimer)
}

var (
	// ErrNotMainThread: the loop must run on the process's main OS thread.
	ErrNotMainThread = errors.New("eventloop: the loop must run on the main OS thread (call it from main, or from TestMain through looptest)")
	// ErrRunning: the loop is already running.
	ErrRunning = errors.New("eventloop: the loop is already running")
)

// SignalError reports that SIGINT or SIGTERM ended the loop.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "eventloop: quit on " + e.Signal.String() }

// loop state: one loop at a time, on the main thread.
var state struct {
	mu      sync.Mutex
	running atomic.Bool
	quit    func() // quits whatever drives the loop now
}

// Running reports whether the loop is running.
func Running() bool { return state.running.Load() }

// IsMain reports whether the caller runs on the main (UI) OS thread. Code
// called from the loop always does.
func IsMain() bool { return pygi.IsMainThread() }

// MustBeMain panics with a clear message when the caller is not on the UI
// thread; what names the operation. GTK is not thread-safe: use Invoke.
func MustBeMain(what string) {
	if !IsMain() {
		panic(fmt.Sprintf("duet: %s must run on the UI (main) thread, not on a goroutine: wrap it in eventloop.Invoke", what))
	}
}

// Run runs GLib's default main context on the main thread until Quit is
// called, ctx ends, or SIGINT/SIGTERM arrives (a graceful quit: the error
// is then a *SignalError). It returns nil after Quit.
func Run(ctx context.Context) error {
	l := capi.NewMainLoop()
	defer l.Unref()
	return Drive(ctx, l.Run, l.Quit)
}

// Drive makes run, a call that blocks iterating the default main context
// (GLib's main loop, or g_application_run), the event loop: while it runs,
// Invoke, timers, the release of Python references Go dropped and the
// signal handling all work through it, and quit ends it. app uses it to run
// a GApplication. Same rules as Run: main thread, one at a time.
func Drive(ctx context.Context, run func(), quit func()) error {
	if !IsMain() {
		return ErrNotMainThread
	}
	state.mu.Lock()
	if state.running.Load() {
		state.mu.Unlock()
		return ErrRunning
	}
	state.running.Store(true)
	var once sync.Once
	var cause error
	stop := func(err error) {
		once.Do(func() {
			cause = err
			quit()
		})
	}
	state.quit = func() { stop(nil) }
	state.mu.Unlock()
	defer func() {
		state.mu.Lock()
		state.running.Store(false)
		state.quit = nil
		state.mu.Unlock()
	}()

	capi.LoopSetup()
	if err := pygi.Init(); err != nil {
		return err
	}
	if err := installExceptionHooks(); err != nil {
		return err
	}
	pygi.SetMainThreadExecutor(func(fn func()) bool {
		return InvokeWait(context.Background(), func() error { fn(); return nil }) == nil
	})
	defer pygi.SetMainThreadExecutor(nil)
	pygi.SetReleaseHook(func() { Invoke(drainReleases) })
	defer pygi.SetReleaseHook(nil)
	// GTK objects must be finalised on this thread: Python references are
	// released here, and Python's cycle collector runs here too.
	pygi.SetReleaseOnUIThread(true)
	defer pygi.SetReleaseOnUIThread(false)
	stopGC, err := collectOnUIThread()
	if err != nil {
		return err
	}
	defer stopGC()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sigs:
			stop(&SignalError{Signal: s})
		case <-ctx.Done():
			stop(ctx.Err())
		case <-done:
		}
	}()
	// Work queued before the loop started runs first.
	capi.LoopPost()
	run()
	// Release what Go dropped while the loop ran, before anyone finalises.
	drainReleases()
	return cause
}

// Quit ends the running loop; safe from any goroutine. It does nothing when
// no loop runs.
func Quit() {
	state.mu.Lock()
	q := state.quit
	state.mu.Unlock()
	if q != nil {
		q()
	}
}

func drainReleases() {
	if err := pygi.Drain(); err != nil && !errors.Is(err, pygi.ErrFinalized) {
		reportPanic(fmt.Sprintf("eventloop: releasing Python references: %v", err), nil)
	}
}

// ---- Invoke ---------------------------------------------------------------------

// queue holds functions waiting for the loop. A mutex-protected slice: one
// lock per post, and the loop takes the whole batch at once.
var queue struct {
	mu    sync.Mutex
	items []func()
	spare []func()
}

// Invoke queues fn to run on the loop, in order with every other Invoke
// from the same goroutine. It never blocks and is safe from any goroutine.
// A panic in fn is recovered and reported (see SetPanicHandler); the loop
// keeps running. Work queued while no loop runs waits for the next one.
func Invoke(fn func()) {
	if fn == nil {
		return
	}
	queue.mu.Lock()
	first := len(queue.items) == 0
	queue.items = append(queue.items, fn)
	queue.mu.Unlock()
	if first {
		capi.LoopSetup()
		capi.LoopPost()
	}
}

// InvokeWait runs fn on the loop and waits for it, returning its error (or
// a *PanicError). Called on the loop itself it runs fn at once. When ctx
// ends first, InvokeWait returns ctx's error and fn will not run if it has
// not started.
func InvokeWait(ctx context.Context, fn func() error) error {
	if IsMain() {
		// Either inside the loop, or the loop is not running: waiting for
		// it on this thread could only deadlock.
		return runGuarded(fn)
	}
	var cancelled atomic.Bool
	done := make(chan error, 1)
	Invoke(func() {
		if cancelled.Load() {
			return
		}
		done <- runGuarded(fn)
	})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cancelled.Store(true)
		// It may have finished just now: prefer its result.
		select {
		case err := <-done:
			return err
		default:
		}
		return ctx.Err()
	}
}

// dispatch runs on the loop (from the invoke source) and drains the queue.
func dispatch() {
	queue.mu.Lock()
	batch := queue.items
	queue.items, queue.spare = queue.spare[:0], nil // never share an array between the two
	queue.mu.Unlock()
	for i, fn := range batch {
		if err := runGuarded(func() error { fn(); return nil }); err != nil {
			reportPanic(err.Error(), err)
		}
		batch[i] = nil
	}
	if cap(batch) <= 1024 {
		queue.mu.Lock()
		queue.spare = batch[:0]
		queue.mu.Unlock()
	}
}

// PanicError is a panic recovered from work run on the loop.
type PanicError struct {
	Value any
	Stack string
}

func (p *PanicError) Error() string { return fmt.Sprintf("eventloop: panic: %v", p.Value) }

// Unwrap returns the panic value when it is an error.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

func runGuarded(fn func() error) (err error) {
	returned := false
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
			return
		}
		if !returned && IsMain() {
			// runtime.Goexit (t.FailNow, require.*) on the UI thread would
			// unwind the loop itself and leave the process hung: stop loudly.
			fmt.Fprintf(os.Stderr, "eventloop: runtime.Goexit (t.FailNow? require?) on the UI thread; "+
				"in tests use the testing.TB that looptest.Do passes to its function\n%s\n", debug.Stack())
			os.Exit(3)
		}
	}()
	err = fn()
	returned = true
	return err
}

var panicHandler atomic.Pointer[func(*PanicError)]

// SetPanicHandler sets what happens to a panic recovered from Invoke work or
// a timer (the default prints it with its stack to stderr). nil restores
// the default.
func SetPanicHandler(h func(*PanicError)) {
	if h == nil {
		panicHandler.Store(nil)
		return
	}
	panicHandler.Store(&h)
}

func reportPanic(msg string, err error) {
	var pe *PanicError
	if errors.As(err, &pe) {
		if h := panicHandler.Load(); h != nil {
			(*h)(pe)
			return
		}
		fmt.Fprintf(os.Stderr, "%s\n%s\n", pe.Error(), pe.Stack)
		return
	}
	fmt.Fprintln(os.Stderr, msg)
}

// Flush dispatches whatever the default main context has ready, without
// blocking, at most max times; it must run on the main thread while no loop
// runs (app uses it during shutdown, so that destroyed widgets finish
// disposing while Python is still alive). It returns how many iterations
// dispatched something.
func Flush(max int) int {
	MustBeMain("eventloop.Flush")
	n := 0
	for n < max && capi.LoopIterate(false) {
		n++
	}
	return n
}
