package pygi

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/lifetime"
)

func init() {
	// Keep main on the process's main OS thread: GTK, GApplication and
	// Py_InitializeEx all belong there.
	runtime.LockOSThread()
	// DUET_CRASH_REPORT turns crash reports on for any duet program (see
	// package forensics).
	diag.CrashReportsFromEnv()
}

// interp is the one embedded interpreter of the process; its phase and the
// gate every operation passes live in internal/lifetime.
var interp struct {
	// initTID and home are written while Python starts, under the gate's
	// lock, and read by Finalize, which another goroutine may call then:
	// mu orders the two.
	mu      sync.Mutex
	initTID int         // OS thread that ran Py_Initialize
	home    chan func() // serves Finalize on the thread startHome made
	// homeDone ends that thread's loop. home itself is never closed:
	// posts (SetPythonMain's) may still be sending when Python is gone,
	// and they select on homeDone instead of racing a close.
	homeDone chan struct{}
	// homeBusy says the home thread runs a function posted to it (not
	// merely between two): how Finalize tells a busy thread from one it
	// may take whatever its ctx says.
	homeBusy atomic.Bool

	none    *Object // the None singleton
	yes, no *Object // True and False, what calls returning them give (capi.True, capi.False)
	helper  *Object // the _duet helper module
	version string
}

func init() { lifetime.SetStarter(start) }

// pyFiles holds pygi's Python: helper.py, the _duet module. It is the
// interpreter's bootstrap, run by startHere before any operation can run,
// so it cannot go through internal/pysrc's loader (which runs on
// operations); pysrc still lists it (bridge.PythonFiles), so the test
// that compiles every embedded file covers it.
//
//go:embed *.py
var pyFiles embed.FS

// Options configure the interpreter; they take effect when it starts.
type Options struct {
	// Args become sys.argv and sys.orig_argv (default os.Args): the app's
	// command line, not parsed as Python's options.
	Args []string
	// Venv is a virtual environment (a directory made by python3 -m venv)
	// the interpreter behaves as, as that environment's python3 would: its
	// site-packages (and the system's, with --system-site-packages),
	// sys.prefix and sys.executable. Empty means none: sys.executable is
	// the system python3 that goes with the embedded libpython, never the
	// app. $VIRTUAL_ENV is not read (python3 ignores it too: PATH picks the
	// interpreter), so the environment a user's shell has activated does
	// not change what an installed app imports; an app that wants it says
	// so: Venv: os.Getenv("VIRTUAL_ENV").
	Venv string
}

var options struct {
	mu  sync.Mutex
	set Options
}

// ErrStarted: Init was given options after Python started.
var ErrStarted = errors.New("pygi: Init's options must come before Python starts (before the first call into Python)")

// configure sets the interpreter's options before it starts. A Venv that
// is not a virtual environment is an error here, not a surprise later.
func configure(o Options) error {
	if o.Venv != "" {
		if _, err := venvPython(o.Venv); err != nil {
			return err
		}
	}
	options.mu.Lock()
	defer options.mu.Unlock()
	switch lifetime.Current() {
	case lifetime.New:
	case lifetime.Closing, lifetime.Finalizing, lifetime.Finalized:
		// Whether or not it ever started, no Python can be given them
		// now: what any operation would say.
		return ErrFinalized
	default:
		if o.Venv != "" || o.Args != nil {
			return ErrStarted
		}
		return nil
	}
	options.set = o
	return nil
}

// venvPython returns the python program of the virtual environment dir.
func venvPython(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "pyvenv.cfg")); err != nil {
		return "", fmt.Errorf("pygi: %s is not a virtual environment (no pyvenv.cfg): %w", dir, err)
	}
	for _, name := range []string{"python3", "python"} {
		p := filepath.Join(dir, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("pygi: virtual environment %s has no bin/python3", dir)
}

// startOptions resolves the options at start-up.
func startOptions() (args []string, venv string, err error) {
	options.mu.Lock()
	o := options.set
	options.mu.Unlock()
	args = o.Args
	if args == nil {
		args = os.Args
	}
	if len(args) == 0 {
		args = []string{"duet"}
	}
	if o.Venv != "" {
		venv, err = venvPython(o.Venv)
	}
	return args, venv, err
}

// Init starts the embedded interpreter, with options o, if it is not
// running yet. Every operation starts it implicitly, with the zero
// Options; call Init explicitly from main to give options, to pick the
// main OS thread and to see start-up errors early. Options given once
// Python has started are ErrStarted (the zero Options are not). Concurrent
// callers wait for the one initialisation.
//
// Called on the main thread, or from anywhere while the event loop runs, the
// interpreter starts on the main thread. Otherwise it starts on a dedicated
// OS thread that stays until Finalize.
func Init(o Options) error {
	if err := configure(o); err != nil {
		return err
	}
	return lifetime.Start()
}

// start runs under the gate's lock (see lifetime.Start).
func start() error {
	var err error
	switch {
	case lifetime.IsMain():
		err = startHere()
	case lifetime.LoopRunning():
		if xerr := lifetime.OnUI(func() error { err = startHere(); return nil }); xerr != nil {
			err = xerr
		}
	default:
		err = startHome()
	}
	return err
}

// startHome starts the interpreter on a goroutine locked to a fresh OS
// thread that then serves Finalize.
func startHome() error {
	errc := make(chan error, 1)
	home, done := make(chan func()), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: this thread is the interpreter's
		err := startHere()
		errc <- err
		if err != nil {
			return
		}
		for {
			select {
			case fn := <-home:
				interp.homeBusy.Store(true)
				fn()
				interp.homeBusy.Store(false)
			case <-done:
				return
			}
		}
	}()
	if err := <-errc; err != nil {
		return err
	}
	interp.mu.Lock()
	interp.home, interp.homeDone = home, done
	interp.mu.Unlock()
	lifetime.SetPythonMain(func(fn func()) {
		go func() {
			select {
			case home <- fn:
			case <-done: // Python is gone: the post is dropped
			}
		}()
	})
	return nil
}

func startHere() error {
	args, venv, err := startOptions()
	if err != nil {
		return err
	}
	src, err := pyFiles.ReadFile("helper.py")
	if err != nil {
		return fmt.Errorf("pygi: the _duet helper module: %w", err)
	}
	if err := capi.Init(args, venv); err != nil {
		return fmt.Errorf("pygi: cannot start the embedded Python: %v", err)
	}
	interp.mu.Lock()
	interp.initTID = syscall.Gettid()
	interp.mu.Unlock()
	interp.none = &Object{ref: capi.SingletonRef(capi.None), kind: permanent}
	interp.yes = &Object{ref: capi.SingletonRef(capi.True), kind: permanent}
	interp.no = &Object{ref: capi.SingletonRef(capi.False), kind: permanent}
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
	if _, st, exc = capi.Run(string(src), "<duet pygi/helper.py>", false, dict); st != capi.OK && st != capi.None {
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

func enter() error { return lifetime.Enter() }
func exit()        { lifetime.Exit() }

// WithGIL runs fn with the calling goroutine attached to Python for the whole
// call: every pygi operation inside it reuses the attachment, which makes
// many small operations cheaper. fn must not block on other goroutines
// that need Python (they would wait for the GIL fn holds); use
// WithoutGIL around such waits.
func WithGIL(fn func() error) error {
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

// WithoutGIL runs fn with the calling thread detached from Python when duet
// holds the GIL on it (inside WithGIL or a callback from Python), so that other
// goroutines can use Python while fn blocks. Elsewhere it just runs fn
// (inside a lazy signal handler that has not used Python yet, the calls fn
// makes take the GIL each, and the handler's first use stays to come: see
// package callbacks).
func WithoutGIL(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	switch was := capi.WithoutGILBegin(); {
	case was < 0: // attached: detach
		d := capi.SaveThread()
		defer capi.RestoreThread(d)
	case was == 1: // inside a lazy handler not attached yet: paused
		defer capi.LazyResume(was)
	}
	fn()
}

// Finalize shuts the interpreter down: it refuses new operations, waits for
// those in flight, releases every reference Go still queues and runs
// Py_FinalizeEx on the thread that started Python. Afterwards every
// operation returns ErrFinalized and every release is a no-op. Calling it
// again returns nil.
//
// The interpreter's life has one owner: Finalize is refused with
// ErrLoopRunning while the event loop runs (app.Run and looptest.Main
// finalise after their loop has returned), with ErrWrongThread off the
// thread that started Python, and from inside a Python call or WithGIL.
// Goroutines that enter Python while Finalize waits for the calls in flight
// wait until the gate opens again: when Finalize gives up, or when it
// reopens it for threading's shutdown (they run then, as Python's threads
// may, and Finalize waits for them before its last step); after that last
// step has begun they get ErrFinalized.
//
// ctx bounds its waits: for another Finalize that runs (on Python's own
// thread, a function posted there, it does not wait: ErrFinalizeBusy),
// for the calls in flight, then for Python's threads
// that are not daemons (threading's shutdown, as python3 runs it at exit).
// It waits, too, for Python's own thread (when Python started there) to
// finish what runs there now (a signal handler posted to it). When ctx
// ends first, the interpreter stays open (unless the other Finalize this
// one waited for goes on to finish it) and the error says what held it
// up: it wraps ctx's error and counts the calls in flight, or it
// is ErrThreadsRunning and names the threads. threading's shutdown has
// begun by then (its atexit functions ran, executors take no new work), as
// it would have in python3.
//
// ctx cannot cut short a wait for the GIL itself: a thread that holds it
// in C code that never lets go (a C extension's long loop, sum over a huge
// range) holds Finalize up as it holds python3's exit up.
//
// A Python thread that is inside a Go function (a daemon thread's loop
// over a Go callable) counts as a call in flight for each operation that
// function makes, and those are let in while Finalize waits, as anything
// nested in a call is: a thread that keeps calling holds Finalize back
// until ctx ends. python3 abandons daemon threads at exit, and CPython
// ends one that asks for the GIL back after Py_FinalizeEx: a daemon
// thread inside a Go function that let go of the GIL (WithoutGIL) when
// Python is finalised ends there, and the rest of the Go function, its
// deferred calls included, never runs. So such a thread must be told to
// stop (an Event it checks, a sentinel on its queue) before Finalize, or
// not be a daemon (Finalize waits for those). Note that a thread Python
// code starts on a goroutine's thread is a daemon by CPython's rule (it
// inherits the daemon flag of the thread that starts it, and CPython
// takes a thread it did not start for a daemon) unless the code says
// daemon=False; one started on Python's main thread is not.
func Finalize(ctx context.Context) error {
	if lifetime.LoopRunning() {
		return ErrLoopRunning
	}
	if p := lifetime.Current(); (p == lifetime.Ready || p == lifetime.Closing || p == lifetime.Finalizing) && capi.Nested() {
		// On any thread: this scope holds the GIL, or a Go callback (a
		// bare signal handler holds none) returns into an emission whose
		// other handlers may be Python's, or it is detached (WithoutGIL)
		// from an entry that Finalize would wait for. In every phase
		// while Python lives: inside a call while another Finalize decides
		// (Closing), that one waits for this call; inside Python's own
		// shutdown (an atexit function calling Go, Finalizing), this
		// thread's Finalize is the one running. Either would wait for
		// itself.
		return ErrInsideCall
	}
	// On Python's own thread (a function posted there), a Finalize must
	// not queue behind another: that one would post its last step to this
	// thread, which waits for it.
	interp.mu.Lock()
	onHome := interp.home != nil && syscall.Gettid() == interp.initTID
	interp.mu.Unlock()
	// The thread is chosen under the gate's lock: a Finalize that came
	// while Python started, or while another Finalize decided and then
	// gave up, sees where Python lives now.
	err := lifetime.Finalize(ctx, onHome, func() (lifetime.Reserve, error) {
		interp.mu.Lock()
		home, initTID := interp.home, interp.initTID
		interp.mu.Unlock()
		switch {
		case syscall.Gettid() == initTID:
			return func(context.Context) (func(func()), func(), error) {
				return func(f func()) { f() }, func() {}, nil
			}, nil
		case home != nil:
			return reserveHome(home), nil
		}
		return nil, ErrWrongThread
	})
	// The home thread ends once, whichever Finalize saw Python finalised
	// first: two that both return nil must not both close it.
	interp.mu.Lock()
	if interp.home != nil && lifetime.Current() == lifetime.Finalized {
		lifetime.SetPythonMain(nil)
		close(interp.homeDone)
		interp.home, interp.homeDone = nil, nil
	}
	interp.mu.Unlock()
	return err
}

// reserveHome takes Python's own thread for Finalize: it posts a function
// that serves Finalize's work there until released, waiting while ctx lasts
// for what runs there now (a signal handler posted to it, say).
func reserveHome(home chan<- func()) lifetime.Reserve {
	return func(ctx context.Context) (func(func()), func(), error) {
		jobs, quit := make(chan func()), make(chan struct{})
		serve := func() {
			for {
				select {
				case job := <-jobs:
					job()
				case <-quit:
					return
				}
			}
		}
		busy := func() error {
			return fmt.Errorf("pygi: Finalize gave up waiting for Python's own thread (busy with a function posted there): %w", ctx.Err())
		}
		select {
		case home <- serve:
		case <-ctx.Done():
			// A free thread is taken whatever an ended ctx says (with a
			// ctx that ended as the calls in flight did, Finalize lost a
			// coin flip between the two, and said the thread was busy).
			if interp.homeBusy.Load() {
				return nil, nil, busy()
			}
			t := time.NewTimer(100 * time.Millisecond) // free, on its way back to its receive
			defer t.Stop()
			select {
			case home <- serve:
			case <-t.C:
				return nil, nil, busy()
			}
		}
		run := func(f func()) {
			done := make(chan struct{})
			jobs <- func() { f(); close(done) }
			<-done
		}
		return run, func() { close(quit) }, nil
	}
}

// ErrThreadsRunning: Finalize gave up because Python threads that
// are not daemons were still running when its context ended (Py_FinalizeEx
// would wait for them for ever, as python3 waits at exit).
var ErrThreadsRunning = errors.New("pygi: Python threads that are not daemons are still running")

func init() { lifetime.SetThreadShutdown(shutdownThreads) }

// shutdownThreads runs threading's shutdown (its atexit functions, then
// the wait for non-daemon threads) while ctx lasts, on the finalizing
// thread, attached, once no Go call is in flight.
func shutdownThreads(ctx context.Context) error {
	for {
		slice := 100 * time.Millisecond
		if d, ok := ctx.Deadline(); ok {
			slice = min(slice, time.Until(d))
		}
		names, err := interp.helper.CallMethod("shutdown_threads", max(slice, 0).Seconds())
		if err != nil {
			return fmt.Errorf("pygi: Finalize: threading's shutdown: %w", err)
		}
		left, err := As[[]string](names)
		if err != nil || len(left) == 0 {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%s); Finalize gave up waiting for them: %w", ErrThreadsRunning, strings.Join(left, ", "), ctx.Err())
		}
	}
}
