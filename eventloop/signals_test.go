package eventloop_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	for name, fn := range signalChildren {
		lifetimeChildren[name] = fn
	}
}

// ready tells the parent the child is where the test wants the signal.
func ready() { fmt.Println("ready") }

var signalChildren = map[string]func() error{
	// Python's table of signal dispositions, as python3 has it.
	"signal-table": func() error {
		r, err := pygi.Eval(signalTable, nil)
		if err != nil {
			return err
		}
		fmt.Println("table", r.String())
		return pygi.Finalize(context.Background())
	},
	// No loop; Python code that asked for SIGINT (a handler of its own that
	// raises KeyboardInterrupt) busy on the main thread: SIGINT raises it
	// there, also in a blocking sleep.
	"sigint-busy-python": func() error {
		if err := pygi.Exec("import signal\ndef _ki(n, f):\n    raise KeyboardInterrupt\nsignal.signal(signal.SIGINT, _ki)\n", nil); err != nil {
			return err
		}
		for _, code := range []string{"while True: pass", "import time; time.sleep(60)"} {
			err := pygi.Exec("print('ready', flush=True)\n"+code+"\n", nil)
			var pe *pygi.Error
			if !errors.As(err, &pe) || !pe.Matches("KeyboardInterrupt") {
				return fmt.Errorf("%s: want KeyboardInterrupt, got %v", code, err)
			}
			fmt.Println("interrupted:", code)
		}
		return pygi.Finalize(context.Background())
	},
	// No loop: a handler Python code registers runs when its signal comes.
	"python-handler": func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		return pygi.Exec(`
import signal, time
got = []
signal.signal(signal.SIGUSR1, lambda n, f: got.append(n))
print("ready", flush=True)
deadline = time.monotonic() + 30
while not got and time.monotonic() < deadline:
    time.sleep(0.01)
assert got == [signal.SIGUSR1], got
print("handled", flush=True)
`, g)
	},
	// The loop idles; Python code registered a SIGUSR1 handler: it runs on
	// the UI thread, and the loop goes on until SIGINT shuts it down.
	"loop-python-handler": func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("import signal, threading\ngot = []\n"+
			"signal.signal(signal.SIGUSR1, lambda n, f: got.append(threading.current_thread() is threading.main_thread()))\n", g); err != nil {
			return err
		}
		eventloop.Invoke(ready)
		err = eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGINT {
			return fmt.Errorf("want a SIGINT SignalError, got %v", err)
		}
		r, err := pygi.Eval("got", g)
		if err != nil {
			return err
		}
		fmt.Println("handler ran on the main thread:", r.String())
		return pygi.Finalize(context.Background())
	},
	// The UI thread is stuck in Python code (a GLib idle handler written in
	// Python that never returns). SIGINT raises KeyboardInterrupt there,
	// which nothing catches: the app quits in order.
	"loop-busy-python-sigint": func() error {
		if err := pygi.Exec(`
from gi.repository import GLib
def busy():
    print("ready", flush=True)
    while True:
        pass
GLib.idle_add(busy)
`, nil); err != nil {
			return err
		}
		err := eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGINT {
			return fmt.Errorf("want a SIGINT SignalError, got %v", err)
		}
		return pygi.Finalize(context.Background())
	},
	// The UI thread is stuck in Python code that ignores KeyboardInterrupt
	// and SIGTERM has the default disposition: the ordered shutdown cannot
	// happen, so after the grace SIGTERM is handed back and ends the
	// process as it ends a Go program.
	"loop-stuck-sigterm": func() error {
		if err := pygi.Exec(`
from gi.repository import GLib
def stuck():
    print("ready", flush=True)
    while True:
        try:
            while True:
                pass
        except KeyboardInterrupt:
            pass
GLib.idle_add(stuck)
`, nil); err != nil {
			return err
		}
		eventloop.Run(context.Background(), eventloop.SignalGrace(time.Second))
		return errors.New("the loop returned")
	},
	// The UI thread is stuck in Go; a second SIGINT is handed back at once
	// and ends the process.
	"loop-stuck-second-signal": func() error {
		eventloop.Invoke(func() {
			ready()
			select {} // never comes back
		})
		eventloop.Run(context.Background(), eventloop.SignalGrace(time.Minute))
		return errors.New("the loop returned")
	},
	// No loop, the main thread busy in Go: SIGINT ends the process as it
	// ends a Go program, Python or not.
	"go-busy": func() error {
		if _, err := pygi.Eval("1", nil); err != nil {
			return err
		}
		ready()
		time.Sleep(30 * time.Second)
		return errors.New("not interrupted")
	},
	// Python code ignores SIGINT: so does the process.
	"sigint-ignored": func() error {
		if err := pygi.Exec("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n", nil); err != nil {
			return err
		}
		ready()
		time.Sleep(time.Second)
		fmt.Println("still here")
		return pygi.Finalize(context.Background())
	},
	// Python code runs its own GLib.MainLoop on the UI thread (inside a
	// handler): PyGObject's own SIGINT handling quits it and raises
	// KeyboardInterrupt, as under python3; coming out into Go, that ends
	// duet's loop too.
	"nested-python-mainloop": func() error {
		var got error
		eventloop.Invoke(func() {
			got = pygi.Exec("from gi.repository import GLib\nloop = GLib.MainLoop()\n"+
				"GLib.idle_add(lambda: print('ready', flush=True))\nloop.run()\n", nil)
		})
		err := eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGINT {
			return fmt.Errorf("want a SIGINT SignalError, got %v", err)
		}
		var pe *pygi.Error
		if !errors.As(got, &pe) || !pe.Matches("KeyboardInterrupt") {
			return fmt.Errorf("GLib.MainLoop.run: want KeyboardInterrupt, got %v", got)
		}
		fmt.Println("nested loop interrupted")
		return pygi.Finalize(context.Background())
	},
	// The same nested loop run by an asyncio task, after it awaited a Go
	// async func (it goes on inside the settle, where Invokes reach the
	// nested loop, the SIGINT's own among them) or asyncio.sleep(0).
	"nested-mainloop-after-go-await": func() error { return modalInTask(true) },
	"nested-mainloop-after-sleep0":   func() error { return modalInTask(false) },
}

func modalInTask(goFunc bool) error {
	one, err := callbacks.Async(func(ctx context.Context) int { return 1 }, callbacks.Name("one"))
	if err != nil {
		return err
	}
	var b pygi.Block
	g := b.Globals(pygi.Kw{"one": one})
	b.Exec(`
import asyncio
from gi.repository import GLib
async def main(go):
    if go:
        await one()
    else:
        await asyncio.sleep(0)
    ml = GLib.MainLoop()
    GLib.idle_add(lambda: print('ready', flush=True))
    try:
        ml.run()
    except KeyboardInterrupt:
        print('nested loop interrupted', flush=True)
        raise
def start(go):
    global task
    task = asyncio.get_running_loop().create_task(main(go))
`, g)
	start := b.Item(g, "start")
	if err := b.Err(); err != nil {
		return err
	}
	eventloop.Invoke(func() {
		if _, err := start.Call(goFunc); err != nil {
			fmt.Println("start:", err)
		}
	})
	err = eventloop.Run(context.Background())
	var se *eventloop.SignalError
	if !errors.As(err, &se) || se.Signal != syscall.SIGINT {
		return fmt.Errorf("want a SIGINT SignalError, got %v", err)
	}
	fmt.Println("the loop quit on SIGINT")
	return pygi.Finalize(context.Background())
}

// signalTable is every signal's disposition as Python sees it.
const signalTable = `(lambda signal: sorted((int(s), str(signal.getsignal(s))) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)))(__import__("signal"))`

type signalRun struct {
	out, err string
	code     int            // exit status; -1 when a signal ended it
	killedBy syscall.Signal // the signal that ended it, if one did
	took     time.Duration  // from the first signal to the exit
}

// signalChild starts a child, waits for its "ready" line, sends sigs (with
// a pause between them; the command may run under wrap, e.g. timeout).
func signalChild(t *testing.T, name string, sigs ...syscall.Signal) signalRun {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := testutil.Command(ctx, exe, "-test.run=^$")
	cmd.Env = testutil.ChildEnv(t, "EVENTLOOP_CHILD="+name)
	var errb strings.Builder
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rd := bufio.NewReader(pipe)
	var out strings.Builder
	for {
		line, err := rd.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait() // stderr is complete only now
			t.Fatalf("no ready line: %v; stdout %q; stderr:\n%s", err, out.String(), errb.String())
		}
		if line == "ready\n" {
			break
		}
	}
	time.Sleep(100 * time.Millisecond) // into the busy part
	start := time.Now()
	for i, s := range sigs {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(s))
	}
	rest := make(chan string)
	go func() {
		var b strings.Builder
		bufio.NewReader(rd).WriteTo(&b)
		rest <- b.String()
	}()
	err = cmd.Wait()
	took := time.Since(start)
	out.WriteString(<-rest)
	require.NoError(t, ctx.Err(), "child hung; stderr:\n%s", errb.String())
	code, killedBy := 0, syscall.Signal(0)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killedBy = ws.Signal()
		}
	}
	return signalRun{out.String(), errb.String(), code, killedBy, took}
}

func TestPythonSeesPython3sSignalTable(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "signal-table")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	want, err := exec.Command("/usr/bin/python3", "-c", "print("+signalTable+")").Output()
	require.NoError(t, err)
	assert.Contains(t, out, "table "+strings.TrimSpace(string(want)))
	assert.Contains(t, out, "<built-in function default_int_handler>")
}

func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sigs     []syscall.Signal
		code     int            // the exit status, when killedBy is 0
		killedBy syscall.Signal // else the signal that must end it
		out      string
		maxTook  time.Duration
	}{
		{"python-handler", []syscall.Signal{syscall.SIGUSR1}, 0, 0, "handled", 10 * time.Second},
		{"loop-python-handler", []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT}, 0, 0, "handler ran on the main thread: [True]", 10 * time.Second},
		{"loop-busy-python-sigint", []syscall.Signal{syscall.SIGINT}, 0, 0, "", 10 * time.Second},
		{"loop-stuck-sigterm", []syscall.Signal{syscall.SIGTERM}, 0, syscall.SIGTERM, "", 10 * time.Second},
		{"loop-stuck-second-signal", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 0, syscall.SIGINT, "", 10 * time.Second},
		{"nested-python-mainloop", []syscall.Signal{syscall.SIGINT}, 0, 0, "nested loop interrupted", 10 * time.Second},
		// The KeyboardInterrupt leaves the asyncio source (which drops it,
		// as await_test.go says), so the loop's end waits its asyncio grace
		// for tasks that cannot run: about 5 s, not a hang.
		{"nested-mainloop-after-go-await", []syscall.Signal{syscall.SIGINT}, 0, 0, "nested loop interrupted\nthe loop quit on SIGINT", 10 * time.Second},
		{"nested-mainloop-after-sleep0", []syscall.Signal{syscall.SIGINT}, 0, 0, "nested loop interrupted\nthe loop quit on SIGINT", 10 * time.Second},
		{"go-busy", []syscall.Signal{syscall.SIGINT}, 0, syscall.SIGINT, "", 10 * time.Second},
		{"sigint-ignored", []syscall.Signal{syscall.SIGINT}, 0, 0, "still here", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := signalChild(t, tc.name, tc.sigs...)
			if tc.killedBy != 0 {
				assert.Equal(t, tc.killedBy, r.killedBy, "exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
			} else {
				assert.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
			}
			assert.Contains(t, r.out, tc.out)
			assert.Less(t, r.took, tc.maxTook)
		})
	}
}

// No loop, Python busy on the main thread, twice: in a loop of its own and
// in a blocking sleep. Each SIGINT raises KeyboardInterrupt there, promptly.
func TestSIGINTInterruptsPythonOnTheMainThread(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := testutil.Command(context.Background(), exe, "-test.run=^$")
	cmd.Env = testutil.ChildEnv(t, "EVENTLOOP_CHILD=sigint-busy-python")
	var errb strings.Builder
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rd := bufio.NewReader(pipe)
	var lines []string
	start := time.Now()
	for range 4 {
		line, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, line)
		if line == "ready\n" {
			time.Sleep(100 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	require.NoError(t, cmd.Wait(), "stderr:\n%s", errb.String())
	assert.Equal(t, []string{"ready\n", "interrupted: while True: pass\n", "ready\n", "interrupted: import time; time.sleep(60)\n"}, lines)
	assert.Less(t, time.Since(start), 30*time.Second, "the sleep was interrupted, not waited out")
}

// timeout -s TERM on an app whose UI thread is stuck in Python: the process
// ends, promptly, killed by SIGTERM (timeout reports 143).
func TestTimeoutTermOnAStuckUIThread(t *testing.T) {
	timeoutCmd, err := exec.LookPath("timeout")
	if err != nil {
		t.Skip("no timeout(1)")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	start := time.Now()
	cmd := exec.Command(timeoutCmd, "--preserve-status", "-s", "TERM", "3", exe, "-test.run=^$")
	cmd.Env = testutil.ChildEnv(t, "EVENTLOOP_CHILD=loop-stuck-sigterm")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "want a failing status, got %v\n%s", err, out)
	assert.Equal(t, 143, ee.ExitCode(), "%s", out)
	// timeout(1) signals the child and then its process group: the second
	// copy may arrive before the grace is over, or coalesce with the first.
	assert.Regexp(t, "did not come back|again before the UI thread came back", string(out))
	assert.Less(t, time.Since(start), 20*time.Second)
}

// signal's and faulthandler's wrapped functions look and fail as python3's.
func TestSignalWrappersLookLikePython3s(t *testing.T) {
	const src = `import faulthandler, signal
r = []
for f in (signal.signal, signal.getsignal, faulthandler.enable, faulthandler.disable, faulthandler.register, faulthandler.unregister):
    r.append((f.__name__, f.__qualname__, f.__module__))
for call in (lambda: signal.getsignal("x"), lambda: signal.getsignal(10**30), lambda: signal.signal("x", signal.SIG_DFL), lambda: signal.signal(signal.SIGKILL, signal.SIG_IGN)):
    try:
        call()
        r.append("no error")
    except BaseException as e:
        r.append(type(e).__name__)
print(r)
`
	want, err := exec.Command("/usr/bin/python3", "-c", src).Output()
	require.NoError(t, err)
	out, errOut, err := testutil.RunChild(t, "EVENTLOOP_CHILD=exec-src", "DUET_SRC="+src)
	require.NoError(t, err, "stderr:\n%s", errOut)
	assert.Equal(t, string(want)+"ok\n", out, "python3's, then duet's (and the child harness's ok)")
}

func init() {
	// Python source to run, in a child of its own (DUET_SRC).
	lifetimeChildren["exec-src"] = func() error { return pygi.Exec(os.Getenv("DUET_SRC"), nil) }
}
