package looptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/pygi"
)

// Timeout bounds each Do, Turn and Settle; a test that waits longer fails
// instead of hanging CI.
var Timeout = 60 * time.Second

const xvfbEnv = "DUET_UNDER_XVFB"

// Main runs the tests and exits. Call it from TestMain, which runs on the
// main OS thread.
func Main(m *testing.M) {
	if code, ok := reexecUnderXvfb(); ok {
		os.Exit(code)
	}
	// A GLib or GTK critical fails the test run that caused it, as in
	// PyGObject's own suite (G_DEBUG=fatal-criticals; child processes the
	// tests start inherit it). DUET_ALLOW_CRITICALS=1 turns that off.
	if os.Getenv("DUET_ALLOW_CRITICALS") == "" {
		if g := os.Getenv("G_DEBUG"); !strings.Contains(g, "fatal-criticals") {
			os.Setenv("G_DEBUG", strings.TrimPrefix(g+",fatal-criticals", ","))
		}
		capi.FatalCriticals()
	}
	// A test that crashes says why (see package forensics), unless
	// DUET_CRASH_REPORT says otherwise.
	if _, set := os.LookupEnv("DUET_CRASH_REPORT"); !set {
		if _, err := diag.EnableCrashReports(""); err != nil {
			report.Print("looptest", err)
		}
	}
	if err := pygi.Init(pygi.Options{}); err != nil {
		report.Print("looptest", err)
		os.Exit(1)
	}
	code := 0
	go func() {
		// Wait until the loop runs and has dispatched once, so that tests
		// never race its start (which imports Python modules of its own:
		// a test importing gi.repository meanwhile met a half-imported
		// GLib).
		for !eventloop.Running() {
			time.Sleep(time.Millisecond)
		}
		eventloop.InvokeWait(context.Background(), func() error { return nil })
		code = m.Run()
		eventloop.Quit()
	}()
	if err := eventloop.Run(context.Background()); err != nil {
		report.Print("looptest: loop", err)
		if code == 0 {
			code = 1
		}
	}
	if n := capi.LeakedExceptions(); n > 0 {
		fmt.Fprintf(os.Stderr, "looptest: %d duet entries left a Python exception set (a bug of duet's; each was reported as unraisable above)\n", n)
		if code == 0 {
			code = 1
		}
	}
	if err := pygi.Finalize(context.Background()); err != nil {
		report.Print("looptest: Finalize", err)
		if code == 0 {
			code = 1
		}
	}
	diag.CloseCrashReports()
	os.Exit(code)
}

// reexecUnderXvfb runs this binary again under xvfb-run when there is no
// display; ok is false when it did not (a display exists, or no xvfb-run).
func reexecUnderXvfb() (int, bool) {
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" || os.Getenv(xvfbEnv) != "" {
		return 0, false
	}
	xvfb, err := exec.LookPath("xvfb-run")
	if err != nil {
		return 0, false
	}
	args := append([]string{"-a", "-s", "-screen 0 1280x800x24", os.Args[0]}, os.Args[1:]...)
	cmd := exec.Command(xvfb, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), xvfbEnv+"=1")
	if os.Getenv("GTK_A11Y") == "" {
		// No session bus under Xvfb: keep GTK's accessibility bridge quiet.
		cmd.Env = append(cmd.Env, "GTK_A11Y=none")
	}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), true
		}
		fmt.Fprintln(os.Stderr, "looptest: xvfb-run:", err)
		return 1, true
	}
	return 0, true
}

// Do runs fn on the loop and waits for it. fn gets a testing.TB to use for
// its checks: FailNow, Fatal and Skip on it (and so require.*) stop fn and
// then the test, which they could not do directly on the UI thread. A panic
// in fn fails the test with its stack; so does a wait longer than Timeout.
func Do(t testing.TB, fn func(t testing.TB)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	inner := &loopTB{TB: t}
	err := eventloop.InvokeWait(ctx, func() error { fn(inner); return nil })
	var pe *pygi.PanicError
	switch {
	case errors.As(err, &pe):
		if _, ok := pe.Value.(stopNow); ok {
			if inner.skipped {
				t.SkipNow()
			}
			t.FailNow()
		}
		t.Fatalf("panic on the loop: %v\n%s", pe.Value, pe.Stack)
	case errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("the loop did not run the work within %v (blocked?)", Timeout)
	case err != nil:
		t.Fatal(err)
	}
}

// Turn returns once the loop has run everything Invoke'd before the call:
// the loop runs posted work in order, so one turn is a barrier between what
// a test posted and the checks that follow. Call it from the test, not on
// the loop (there it would wait for nothing).
func Turn(t testing.TB) {
	t.Helper()
	Do(t, func(testing.TB) {})
}

// loopTB is the testing.TB a function on the loop gets: stopping it panics
// (recovered by the loop) instead of calling runtime.Goexit on the UI thread.
type loopTB struct {
	testing.TB
	skipped bool
}

type stopNow struct{}

func (l *loopTB) FailNow()                  { l.TB.Fail(); panic(stopNow{}) }
func (l *loopTB) Fatal(args ...any)         { l.TB.Error(args...); l.FailNow() }
func (l *loopTB) Fatalf(f string, a ...any) { l.TB.Errorf(f, a...); l.FailNow() }
func (l *loopTB) SkipNow()                  { l.skipped = true; panic(stopNow{}) }
func (l *loopTB) Skip(args ...any)          { l.TB.Log(args...); l.SkipNow() }
func (l *loopTB) Skipf(f string, a ...any)  { l.TB.Logf(f, a...); l.SkipNow() }

// Exceptions collects the Python exceptions nobody caught during a test.
type Exceptions struct {
	mu   sync.Mutex
	errs []*pygi.Error
}

// All returns what was collected so far.
func (e *Exceptions) All() []*pygi.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*pygi.Error(nil), e.errs...)
}

// CatchPythonExceptions collects the uncaught Python exceptions (from GTK
// signal handlers, GLib sources, Python threads) until the test ends.
func CatchPythonExceptions(t testing.TB) *Exceptions {
	e := &Exceptions{}
	remove := eventloop.OnPythonException(func(err *pygi.Error) {
		e.mu.Lock()
		e.errs = append(e.errs, err)
		e.mu.Unlock()
	})
	t.Cleanup(remove)
	return e
}

// FailOnPythonExceptions makes the test fail if any Python exception goes
// uncaught while it runs.
func FailOnPythonExceptions(t testing.TB) {
	e := CatchPythonExceptions(t)
	t.Cleanup(func() {
		errs := e.All()
		if len(errs) == 0 {
			return
		}
		var b strings.Builder
		for _, err := range errs {
			fmt.Fprintf(&b, "\n%s", err.Traceback)
		}
		t.Errorf("%d uncaught Python exception(s):%s", len(errs), b.String())
	})
}
