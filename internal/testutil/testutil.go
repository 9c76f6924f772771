// Package testutil holds the helpers duet's own tests share: a watchdog
// that turns a deadlock into a failure with every goroutine's stack, and a
// runner for scenarios re-executed in a child process.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Watchdog panics with every goroutine's stack if the test is still running
// after d, so that a deadlock fails CI instead of hanging it. Call the
// returned function when the guarded part is done.
func Watchdog(t testing.TB, d time.Duration) (stop func()) {
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("%s: no progress after %v (deadlock?)\n%s", name, d, buf[:n]))
	})
	return func() { timer.Stop() }
}

// RunChild re-executes the test binary with env (e.g. "PYGI_CHILD=name")
// and no tests selected, so that TestMain runs the named scenario instead.
// A child still running after a minute fails the test with what it wrote:
// it is sent SIGQUIT first, so that its Go runtime adds every goroutine's
// stack (and GOTRACEBACK=all its threads'), then killed if it is still
// there a few seconds later.
func RunChild(t testing.TB, env ...string) (stdout, stderr string, err error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := Command(ctx, exe, "-test.run=^$")
	cmd.Env = ChildEnv(t, env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("child %v hung (stopped after a minute)\nstdout: %s\nstderr: %s", env, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// ChildEnv is the environment for a child a test starts: this process's,
// with env added, and DUET_CRASH_REPORT pointing into the test's temporary
// directory (env may say otherwise). A child that crashes on purpose, as
// many do, would otherwise leave its report in the user's own state
// directory (looptest turns reports on), one more with each run; its
// stderr has the report too.
func ChildEnv(t testing.TB, env ...string) []string {
	t.Helper()
	report := "DUET_CRASH_REPORT=" + filepath.Join(t.TempDir(), "crash-report.txt")
	return append(append(os.Environ(), report), env...)
}

// Command is exec.CommandContext for a child that must not outlive the
// test binary: the kernel kills it when the parent dies, also when a test
// timeout ends the binary without running cleanups (a child left spinning
// would skew everything that runs after it).
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// ExitCode is a child's exit status from the error cmd.Run or cmd.Wait
// returned: 0 for nil, the status for an *exec.ExitError (-1 when a signal
// killed it); other errors fail the test.
func ExitCode(t testing.TB, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("child: %v", err)
	return 0
}

// GPointerPy is Python source defining addr(o): the address of a GObject
// wrapper's GObject, through its __gpointer__ capsule, for tests that hand
// it to C through ctypes (emitting on a thread, a C source of GLib's).
const GPointerPy = `
import ctypes as _ctypes
_api = _ctypes.pythonapi
_api.PyCapsule_GetName.restype = _ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [_ctypes.py_object]
_api.PyCapsule_GetPointer.restype = _ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [_ctypes.py_object, _ctypes.c_char_p]
def addr(o):
    cap = o.__gpointer__
    return _api.PyCapsule_GetPointer(cap, _api.PyCapsule_GetName(cap))
`
