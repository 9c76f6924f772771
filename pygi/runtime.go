package pygi

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/internal/capi"
)

func init() {
	// Keep main on the process's main OS thread: GTK, GApplication and
	// Py_InitializeEx all belong there.
	runtime.LockOSThread()
}

// Interpreter phases.
const (
	phaseNew int32 = iota
	phaseReady
	phaseClosing
	phaseFinalized
	phaseFailed
)

// interp is the one embedded interpreter of the process. Its fields that a
// test could want to reset are only the counters (see Stats).
var interp struct {
	phase    atomic.Int32
	inflight atomic.Int64

	initMu  sync.Mutex
	initErr error
	initTID int // OS thread that ran Py_Initialize
	home    chan func()

	none    *Object // the None singleton
	helper  *Object // the _duet helper module
	version string
}

// mainExec, when set, runs a function on the main OS thread (the event loop
// registers it while it runs). It lets Init and Finalize called from other
// goroutines still run on the main thread.
var mainExec atomic.Pointer[func(func()) bool]

// SetMainThreadExecutor registers a function that runs fn on the main OS
// thread and reports whether it could. The event loop registers one while
// it runs; pass nil to remove it.
func SetMainThreadExecutor(exec func(fn func()) bool) {
	if exec == nil {
		mainExec.Store(nil)
		return
	}
	mainExec.Store(&exec)
}

// IsMainThread reports whether the caller runs on the process's main OS
// thread. Only meaningful for a goroutine locked to its thread (main is).
func IsMainThread() bool { return syscall.Gettid() == os.Getpid() }

//go:embed helper.py
var helperSource string

// Init starts the embedded interpreter if it is not running yet. Every
// operation calls it implicitly; call it explicitly from main to pick the
// main OS thread and to see start-up errors early. Concurrent callers wait
// for the one initialisation.
//
// Called on the main thread, or from anywhere while the event loop runs, the
// interpreter starts on the main thread. Otherwise it starts on a dedicated
// OS thread that stays until Finalize.
func Init() error {
	switch interp.phase.Load() {
	case phaseReady:
		return nil
	case phaseClosing, phaseFinalized:
		return ErrFinalized
	}
	interp.initMu.Lock()
	defer interp.initMu.Unlock()
	switch interp.phase.Load() {
	case phaseReady:
		return nil
	case phaseClosing, phaseFinalized:
		return ErrFinalized
	case phaseFailed:
		return interp.initErr
	}
	var err error
	switch {
	case IsMainThread():
		err = startHere()
	case runOnMain(func() { err = startHere() }):
	default:
		err = startHome()
	}
	if err != nil {
		interp.initErr = err
		interp.phase.Store(phaseFailed)
		return err
	}
	interp.phase.Store(phaseReady)
	return nil
}

func runOnMain(fn func()) bool {
	exec := mainExec.Load()
	if exec == nil {
		return false
	}
	return (*exec)(fn)
}

// startHome starts the interpreter on a goroutine locked to a fresh OS
// thread that then serves Finalize.
func startHome() error {
	errc := make(chan error, 1)
	home := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked: this thread is the interpreter's
		err := startHere()
		errc <- err
		if err != nil {
			return
		}
		for fn := range home {
			fn()
		}
	}()
	if err := <-errc; err != nil {
		return err
	}
	interp.home = home
	return nil
}

func startHere() error {
	argv0 := "duet"
	if len(os.Args) > 0 {
		argv0 = os.Args[0]
	}
	if err := capi.Init(argv0); err != nil {
		return fmt.Errorf("pygi: cannot start the embedded Python: %v", err)
	}
	interp.initTID = syscall.Gettid()
	interp.none = &Object{ref: capi.NoneRef(), kind: permanent}
	// The helper module backs error formatting; it must exist before any
	// operation can fail. Operations are not open yet, so run it directly.
	g, _ := capi.NewGlobals()
	defer capi.Drain([]capi.Ref{g})
	if _, st, exc := capi.Run("import sys, types\nm = types.ModuleType('_duet')\nsys.modules['_duet'] = m\n",
		"<duet>", false, g); st != capi.OK && st != capi.None {
		capi.Drain([]capi.Ref{exc})
		return errors.New("pygi: cannot create the _duet helper module")
	}
	mod, st, exc := capi.Import("_duet")
	if st != capi.OK {
		capi.Drain([]capi.Ref{exc})
		return errors.New("pygi: cannot import the _duet helper module")
	}
	dict, _, _ := capi.GetAttr(mod, "__dict__")
	defer capi.Drain([]capi.Ref{dict})
	if _, st, exc = capi.Run(helperSource, "<duet helper>", false, dict); st != capi.OK && st != capi.None {
		msg := "pygi: the _duet helper module failed"
		if text, s2, _ := capi.Str(exc, false); s2 == capi.OK {
			msg += ": " + text
		}
		capi.Drain([]capi.Ref{exc, mod})
		return errors.New(msg)
	}
	interp.helper = &Object{ref: mod, kind: permanent}
	return nil
}

// enter opens an operation: it starts Python on first use, refuses entries
// after Finalize began, and drains released references. Every successful
// enter is paired with exit.
func enter() error {
	interp.inflight.Add(1)
	if interp.phase.Load() != phaseReady {
		interp.inflight.Add(-1)
		if err := Init(); err != nil {
			return err
		}
		interp.inflight.Add(1)
		// Finalize may have started between Init and the increment.
		if interp.phase.Load() != phaseReady {
			interp.inflight.Add(-1)
			return ErrFinalized
		}
	}
	// While the loop runs it drains the queue itself (on the UI thread); an
	// attempt here would cost a cgo crossing per operation only to find out
	// whether this is the UI thread.
	if releases.dirty.Load() && !releaseOnUI.Load() {
		releases.drain()
	}
	return nil
}

func exit() { interp.inflight.Add(-1) }

// Do runs fn with the calling goroutine attached to Python for the whole
// call: every pygi operation inside it reuses the attachment, which makes
// many small operations cheaper. fn must not block on other goroutines
// that need Python (they would wait for the GIL fn holds); use
// WithoutGIL around such waits.
func Do(fn func() error) error {
	if err := enter(); err != nil {
		return err
	}
	defer exit()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := capi.Attach()
	defer capi.Detach(st)
	return fn()
}

// WithoutGIL runs fn with the calling thread detached from Python when it
// is attached (inside Do or a callback from Python), so that other
// goroutines can use Python while fn blocks. Outside an attachment it just
// runs fn.
func WithoutGIL(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if interp.phase.Load() != phaseReady || !capi.HoldsGIL() {
		fn()
		return
	}
	ts := capi.SaveThread()
	defer capi.RestoreThread(ts)
	fn()
}

// Finalize shuts the interpreter down: it refuses new operations, waits for
// those in flight, releases every reference Go still queues and runs
// Py_FinalizeEx on the thread that started Python. Afterwards every
// operation returns ErrFinalized and every release is a no-op. Calling it
// again returns nil.
func Finalize() error { return FinalizeContext(context.Background()) }

// FinalizeContext is Finalize with a bound on the wait for calls in flight.
// When ctx ends first, the interpreter is reopened and ctx's error returned.
func FinalizeContext(ctx context.Context) error {
	interp.initMu.Lock()
	defer interp.initMu.Unlock()
	switch interp.phase.Load() {
	case phaseNew, phaseFailed:
		interp.phase.Store(phaseFinalized)
		return nil
	case phaseFinalized:
		return nil
	}
	onHome := syscall.Gettid() == interp.initTID
	if onHome && capi.HoldsGIL() {
		return errors.New("pygi: Finalize called from inside a Python call or Do scope")
	}
	interp.phase.Store(phaseClosing)
	for backoff := time.Microsecond; interp.inflight.Load() != 0; {
		select {
		case <-ctx.Done():
			interp.phase.Store(phaseReady)
			return fmt.Errorf("pygi: Finalize: waiting for %d calls in flight: %w", interp.inflight.Load(), ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Millisecond)
	}
	finish := func() {
		releases.drain() // no operation is in flight: Finalize waited for them
		capi.Finalize()
		interp.phase.Store(phaseFinalized)
	}
	switch {
	case onHome:
		finish()
	case interp.home != nil:
		done := make(chan struct{})
		interp.home <- func() { finish(); close(done) }
		<-done
		close(interp.home)
		interp.home = nil
	case interp.initTID == os.Getpid() && runOnMain(finish):
	default:
		interp.phase.Store(phaseReady)
		return ErrWrongThread
	}
	return nil
}

// Initialized reports whether the interpreter is running and open.
func Initialized() bool { return interp.phase.Load() == phaseReady }

// Finalized reports whether Finalize has completed (or begun).
func Finalized() bool {
	p := interp.phase.Load()
	return p == phaseClosing || p == phaseFinalized
}
