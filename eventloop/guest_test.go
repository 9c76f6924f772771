package eventloop_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// duet is a guest in its host's process: the host's signal subscriptions,
// its exit path and what its child processes inherit stay the host's.

// hostSignals are the signals a Go program may subscribe to that duet or
// Python code might have wanted too.
var hostSignals = []syscall.Signal{
	syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGWINCH,
	syscall.SIGCHLD, syscall.SIGPIPE, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGQUIT,
	syscall.SIGTERM, syscall.SIGINT,
}

// hostGetsEach sends each signal to the process and waits for ch to see it.
func hostGetsEach(ch chan os.Signal, when string) error {
	for _, s := range hostSignals {
		if err := syscall.Kill(os.Getpid(), s); err != nil {
			return err
		}
		select {
		case got := <-ch:
			if got != s {
				return fmt.Errorf("%s: sent %v, the host got %v", when, s, got)
			}
		case <-time.After(5 * time.Second):
			return fmt.Errorf("%s: the host's signal.Notify never got %v", when, s)
		}
	}
	return nil
}

func init() {
	for name, fn := range guestChildren {
		lifetimeChildren[name] = fn
	}
}

var guestChildren = map[string]func() error{
	// The host subscribed before Python started; starting Python, Python
	// code taking signals and giving them back, and finalising keep every
	// subscription of the host's.
	"host-notify": func() error {
		ch := make(chan os.Signal, 32)
		for _, s := range hostSignals {
			signal.Notify(ch, s)
		}
		if err := pygi.Init(pygi.Options{}); err != nil {
			return err
		}
		if err := hostGetsEach(ch, "after pygi.Init"); err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import signal
got = []
names = ("SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGWINCH", "SIGCHLD", "SIGTERM", "SIGINT")
for n in names:
    signal.signal(getattr(signal, n), lambda s, f: got.append(s))
`, g); err != nil {
			return err
		}
		if err := hostGetsEach(ch, "with Python handlers"); err != nil {
			return err
		}
		// Python's handlers ran too (at the next check of the main thread).
		r, err := pygi.Eval("(__import__('time').sleep(0.05), sorted(set(got)))[1]", g)
		if err != nil {
			return err
		}
		fmt.Println("Python got", r.String())
		if err := pygi.Exec("for n in names:\n    signal.signal(getattr(signal, n), signal.SIG_DFL)\n"+
			"signal.signal(signal.SIGINT, signal.default_int_handler)\n", g); err != nil {
			return err
		}
		if err := hostGetsEach(ch, "after Python gave them back"); err != nil {
			return err
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		return hostGetsEach(ch, "after pygi.Finalize")
	},
	// A daemon that reloads its configuration on SIGHUP, with Python in it.
	"host-sighup": func() error {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGHUP)
		if _, err := pygi.Eval("1 + 1", nil); err != nil {
			return err
		}
		ready()
		select {
		case <-ch:
			fmt.Println("got hangup - config reloaded")
			return pygi.Finalize(context.Background())
		case <-time.After(20 * time.Second):
			return errors.New("no SIGHUP")
		}
	},
	// A host with its own graceful shutdown on SIGTERM, Python used and
	// finalised: the host finishes its work and its output is complete.
	"host-graceful": func() error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if _, err := pygi.Eval("sum(range(10))", nil); err != nil {
			return err
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		return gracefulHost(ctx)
	},
	// The same with duet's loop running, declining its SIGTERM handling.
	"host-graceful-loop": func() error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		eventloop.Invoke(ready)
		if err := eventloop.Run(ctx, eventloop.HostSignals()); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Run: want context.Canceled, got %v", err)
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		w := bufio.NewWriter(os.Stdout)
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintln(w, "graceful shutdown finished")
		return w.Flush()
	},
	// And with the loop keeping its own handling: both quit, nobody exits
	// the process under the other's feet.
	"host-graceful-both": func() error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		eventloop.Invoke(ready)
		err := eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGTERM {
			return fmt.Errorf("Run: want a SIGTERM SignalError, got %v", err)
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		return gracefulHost(ctx)
	},
	// No handler of the host's: after Finalize, SIGTERM ends the process as
	// it ends any Go program, and duet says nothing.
	"after-finalize": func() error {
		if _, err := pygi.Eval("1", nil); err != nil {
			return err
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		ready()
		time.Sleep(30 * time.Second)
		return errors.New("still alive")
	},
	// The loop's UI thread stuck, a host handler of its own: the grace ends,
	// duet hands SIGTERM back, and the host decides (here: status 7).
	"host-stuck-handback": func() error {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGTERM)
		go func() {
			<-ch // the signal itself
			<-ch // handed back by duet
			fmt.Println("the host decides")
			os.Exit(7)
		}()
		eventloop.Invoke(func() {
			ready()
			select {} // never comes back
		})
		eventloop.Run(context.Background(), eventloop.SignalGrace(300*time.Millisecond))
		return errors.New("the loop returned")
	},
	// Signals Python handles (not SIGINT, SIGTERM) while the UI thread is
	// busy for longer than the grace: the handler runs, twice as often as
	// the signal came or coalesced as CPython coalesces, and the app goes on.
	"loop-usr1-busy": func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("import signal\ngot = []\nsignal.signal(signal.SIGUSR1, lambda n, f: got.append(n))\n", g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			ready()
			time.Sleep(2 * time.Second) // busy in Go, well past the grace
		})
		eventloop.After(2500*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background(), eventloop.SignalGrace(500*time.Millisecond)); err != nil {
			return err
		}
		r, err := pygi.Eval("len(got)", g)
		if err != nil {
			return err
		}
		fmt.Println("handler runs:", r.String())
		return pygi.Finalize(context.Background())
	},
	// PyGObject's own test_ossig pattern: signal.alarm with a handler while
	// Python code on the UI thread is busy past the grace.
	"loop-alarm-busy": func() error {
		var got error
		eventloop.Invoke(func() {
			ready()
			got = pygi.Exec(`
import signal, time
fired = []
signal.signal(signal.SIGALRM, lambda n, f: fired.append(time.monotonic()))
signal.alarm(1)
end = time.monotonic() + 2
while time.monotonic() < end:
    pass
assert fired, "the alarm's handler did not run"
`, nil)
			eventloop.Quit()
		})
		if err := eventloop.Run(context.Background(), eventloop.SignalGrace(300*time.Millisecond)); err != nil {
			return err
		}
		if got != nil {
			return got
		}
		fmt.Println("alarm handled")
		return pygi.Finalize(context.Background())
	},
}

// gracefulHost is a host's shutdown: it waits for its signal, takes its
// time, and writes buffered output that must not be lost.
func gracefulHost(ctx context.Context) error {
	w := bufio.NewWriter(os.Stdout)
	ready()
	<-ctx.Done()
	time.Sleep(300 * time.Millisecond)
	fmt.Fprintln(w, "graceful shutdown finished")
	return w.Flush()
}

// KeyboardInterrupt swallowed by Go code: a Go timer, an Invoke and a Go
// callback Python called each call Python on the UI thread and ignore the
// error. SIGINT's KeyboardInterrupt comes out into Go there, and the loop
// ends anyway, on the first Ctrl+C.
func init() {
	busy := func() {
		if r, err := pygi.Eval("sum(range(300000))", nil); err == nil {
			r.Close()
		}
	}
	for name, start := range map[string]func(){
		"ki-timer": func() { eventloop.Every(5*time.Millisecond, busy) },
		"ki-invoke": func() {
			var again func()
			again = func() { busy(); eventloop.Invoke(again) }
			eventloop.Invoke(again)
		},
		"ki-handler": func() {
			tick, err := callbacks.New(func() bool { busy(); return true }, callbacks.Name("tick"))
			g, gerr := pygi.NewGlobals()
			err = errors.Join(err, gerr)
			if err == nil {
				err = g.SetItem("tick", tick)
			}
			if err == nil {
				err = pygi.Exec("from gi.repository import GLib\nGLib.timeout_add(5, tick)\n", g)
			}
			if err != nil {
				panic(err)
			}
		},
	} {
		lifetimeChildren[name] = func() error {
			start()
			eventloop.After(300*time.Millisecond, ready)
			err := eventloop.Run(context.Background())
			var se *eventloop.SignalError
			if !errors.As(err, &se) || se.Signal != syscall.SIGINT {
				return fmt.Errorf("want a SIGINT SignalError, got %v", err)
			}
			fmt.Println("quit on the first SIGINT")
			return pygi.Finalize(context.Background())
		}
	}
}

func TestHostKeepsItsSignalSubscriptions(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "host-notify")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "Python got [1, 2, 10, 12, 14, 15, 17, 28]", "Python's handlers ran beside the host's")
}

func TestHostSignals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sig      syscall.Signal
		code     int
		killedBy syscall.Signal
		out      string
	}{
		{"host-sighup", syscall.SIGHUP, 0, 0, "got hangup - config reloaded"},
		{"host-graceful", syscall.SIGTERM, 0, 0, "graceful shutdown finished"},
		{"host-graceful-loop", syscall.SIGTERM, 0, 0, "graceful shutdown finished"},
		{"host-graceful-both", syscall.SIGTERM, 0, 0, "graceful shutdown finished"},
		{"after-finalize", syscall.SIGTERM, 0, syscall.SIGTERM, ""},
		{"host-stuck-handback", syscall.SIGTERM, 7, 0, "the host decides"},
		{"loop-usr1-busy", 0, 0, 0, "handler runs: "},
		{"loop-alarm-busy", 0, 0, 0, "alarm handled"},
		{"ki-timer", syscall.SIGINT, 0, 0, "quit on the first SIGINT"},
		{"ki-invoke", syscall.SIGINT, 0, 0, "quit on the first SIGINT"},
		{"ki-handler", syscall.SIGINT, 0, 0, "quit on the first SIGINT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sigs []syscall.Signal
			switch {
			case tc.name == "loop-usr1-busy":
				sigs = []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR1}
			case tc.sig != 0:
				sigs = []syscall.Signal{tc.sig}
			}
			r := signalChild(t, tc.name, sigs...)
			if tc.killedBy != 0 {
				assert.Equal(t, tc.killedBy, r.killedBy, "exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
			} else {
				assert.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
			}
			assert.Contains(t, r.out, tc.out)
			assert.NotContains(t, r.err, "exiting", "duet never exits the process itself")
			if tc.name == "after-finalize" {
				assert.NotContains(t, r.err, "duet:", "nothing of duet's is left to speak")
			}
		})
	}
}

// A child process started from a duet program inherits the signal
// dispositions the Go program alone would give it: SIGPIPE not ignored, so
// `yes | head -1` ends yes with SIGPIPE (141), as without duet.
func TestChildProcessesInheritTheHostsSignals(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "child-dispositions")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			lines[k] = v
		}
	}
	assert.Equal(t, "141", lines["yes after Init"], "yes dies of SIGPIPE")
	assert.Equal(t, lines["SigIgn before"], lines["SigIgn after Init"], "what children start with ignored")
	assert.Equal(t, lines["SigIgn before"], lines["SigIgn with a loop"])
}

func init() {
	lifetimeChildren["child-dispositions"] = func() error {
		sigIgn := func(label string) error {
			b, err := exec.Command("grep", "SigIgn", "/proc/self/status").Output()
			if err != nil {
				return err
			}
			fmt.Printf("%s: %s\n", label, strings.TrimSpace(strings.TrimPrefix(string(b), "SigIgn:")))
			return nil
		}
		if err := sigIgn("SigIgn before"); err != nil {
			return err
		}
		if err := pygi.Init(pygi.Options{}); err != nil {
			return err
		}
		if err := sigIgn("SigIgn after Init"); err != nil {
			return err
		}
		b, err := exec.Command("bash", "-c", "yes | head -1 > /dev/null; echo ${PIPESTATUS[0]}").Output()
		if err != nil {
			return err
		}
		fmt.Printf("yes after Init: %s\n", strings.TrimSpace(string(b)))
		var loopErr error
		eventloop.Invoke(func() {
			loopErr = sigIgn("SigIgn with a loop")
			eventloop.Quit()
		})
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if loopErr != nil {
			return loopErr
		}
		return pygi.Finalize(context.Background())
	}
}

// Python's threads get python3's SIGPIPE and SIGXFSZ: a write to a closed
// socket fails with BrokenPipeError instead of ending the process (Go lets
// those signals kill a process on threads it does not know).
func TestPythonThreadsGetBrokenPipeErrors(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "python-thread-epipe")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "results: ['BrokenPipeError', 'BrokenPipeError', 'BrokenPipeError']")
}

func init() {
	lifetimeChildren["python-thread-epipe"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import socket, threading, _thread, concurrent.futures, time
res = []
def w():
    a, b = socket.socketpair()
    b.close()
    try:
        for _ in range(100):
            a.send(b"x" * 65536)
        res.append("no error")
    except OSError as e:
        res.append(type(e).__name__)
t = threading.Thread(target=w); t.start(); t.join()
with concurrent.futures.ThreadPoolExecutor(1) as ex:
    ex.submit(w).result()
done = threading.Event()
_thread.start_new_thread(lambda: (w(), done.set()), ())
done.wait(10)
`, g); err != nil {
			return err
		}
		res, err := pygi.Eval("res", g)
		if err != nil {
			return err
		}
		fmt.Println("results:", res.String())
		return pygi.Finalize(context.Background())
	}
}

// From the review: every window in which CPython used to change the
// kernel's signal handling, and the loop's edges.
func init() {
	flood := func(stop <-chan struct{}, sigs ...syscall.Signal) {
		for {
			for _, s := range sigs {
				select {
				case <-stop:
					return
				default:
				}
				syscall.Kill(os.Getpid(), s)
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	// Signals flooding in while Python starts, while Python code sets and
	// removes handlers (asyncio's add/remove_signal_handler do), and while
	// Python is finalised (its signal module resets every disposition it
	// knew): the host's subscriptions keep them all; nothing dies.
	lifetimeChildren["flood"] = func() error {
		ch := make(chan os.Signal, 1024)
		signal.Notify(ch, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		go func() {
			for range ch {
			}
		}()
		stop := make(chan struct{})
		go flood(stop, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		if err := pygi.Init(pygi.Options{}); err != nil {
			return err
		}
		if err := pygi.Exec(`
import signal
for _ in range(2000):
    try:
        signal.signal(signal.SIGUSR1, lambda n, f: None)
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    except OSError:
        pass  # "Signal 10 ignored due to race condition": CPython's own, as under python3
signal.signal(signal.SIGUSR1, lambda n, f: None)
class Slow:
    def __del__(self):
        import time
        time.sleep(0.3)  # finalisation takes its time, signals keep coming
slow = Slow()
`, nil); err != nil {
			return err
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		close(stop)
		fmt.Println("survived the flood")
		return nil
	}
	// A subprocess started from a Python thread inherits the dispositions
	// and the signal mask it would under python3: `yes` dies of SIGPIPE.
	lifetimeChildren["thread-subprocess"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import subprocess, threading
out = []
def run():
    p = subprocess.run(["bash", "-c", "yes | head -1 > /dev/null; echo ${PIPESTATUS[0]}; grep SigBlk /proc/self/status"], capture_output=True, text=True)
    out.append(p.stdout.split())
t = threading.Thread(target=run); t.start(); t.join()
`, g); err != nil {
			return err
		}
		r, err := pygi.Eval("out[0]", g)
		if err != nil {
			return err
		}
		fmt.Println("child:", r.String())
		return pygi.Finalize(context.Background())
	}
	// faulthandler.register(SIGUSR1) writes its tracebacks, and the host's
	// subscription still gets the signal; the alternate signal stack of a
	// thread that enabled faulthandler is not replaced (CPython would free
	// it at finalisation under that thread), and siginterrupt leaves no
	// trace after Finalize.
	lifetimeChildren["faulthandler-register"] = func() error {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGUSR1)
		f, err := os.CreateTemp(os.Getenv("DIR"), "dump")
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("path", f.Name()); err != nil {
			return err
		}
		if err := pygi.Exec("import faulthandler, signal\nfile = open(path, 'w')\nfaulthandler.register(signal.SIGUSR1, file)\n"+
			"signal.siginterrupt(signal.SIGUSR1, True)\n", g); err != nil {
			return err
		}
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			return errors.New("the host never got SIGUSR1")
		}
		time.Sleep(100 * time.Millisecond)
		b, _ := os.ReadFile(f.Name())
		if !strings.Contains(string(b), "most recent call first") {
			return fmt.Errorf("no traceback in the dump file: %q", b)
		}
		if err := pygi.Exec("faulthandler.unregister(signal.SIGUSR1)\n", g); err != nil {
			return err
		}
		// A goroutine's thread enables faulthandler: its signal stack stays.
		errc := make(chan error)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := altStack()
			_, err := pygi.Eval("__import__('faulthandler').enable()", nil)
			if err == nil && altStack() != before {
				err = fmt.Errorf("faulthandler.enable replaced this thread's signal stack (%#x -> %#x)", before, altStack())
			}
			errc <- err
		}()
		if err := <-errc; err != nil {
			return err
		}
		if err := pygi.Finalize(context.Background()); err != nil {
			return err
		}
		if err := readRestarts(syscall.SIGUSR1); err != nil {
			return fmt.Errorf("after Python's siginterrupt and Finalize: %w", err)
		}
		fmt.Println("dumped, host served, nothing replaced")
		return nil
	}
}

// readRestarts checks that a read blocked on a thread that gets sig is
// restarted, as Go's handlers ask (SA_RESTART), not interrupted.
func readRestarts(sig syscall.Signal) error {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		return err
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	tid := make(chan int)
	res := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- syscall.Gettid()
		var b [1]byte
		_, err := syscall.Read(p[0], b[:])
		res <- err
	}()
	t := <-tid
	time.Sleep(50 * time.Millisecond)
	syscall.Tgkill(os.Getpid(), t, sig)
	time.Sleep(50 * time.Millisecond)
	syscall.Write(p[1], []byte{1})
	return <-res
}

// altStack is the calling thread's alternate signal stack (sigaltstack).
func altStack() uintptr {
	var st [3]uintptr // stack_t: ss_sp, ss_flags (padded), ss_size
	syscall.RawSyscall(syscall.SYS_SIGALTSTACK, 0, uintptr(unsafe.Pointer(&st[0])), 0)
	return st[0]
}

func TestSignalHandlingHasNoWindows(t *testing.T) {
	for range 3 {
		out, errOut, code := runLifetimeChild(t, "flood")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, out, "survived the flood")
	}
}

func TestSubprocessFromAPythonThread(t *testing.T) {
	out, errOut, code := runLifetimeChild(t, "thread-subprocess")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "child: ['141', 'SigBlk:', '0000000000000000']")
}

func TestFaulthandlerRegisterLeavesTheHostItsSignal(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "EVENTLOOP_CHILD=faulthandler-register", "DIR="+t.TempDir())
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "dumped, host served, nothing replaced")
}

// The loop's edges, from the review.
func init() {
	// Quit, then SIGTERM while asyncio's tasks finish their cancellation:
	// the signal is what Run reports, not lost.
	lifetimeChildren["term-while-ending"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import asyncio
async def stubborn():
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(0.8)
        print("cancelled in order", flush=True)
        raise
def start():
    asyncio.get_running_loop().create_task(stubborn())
`, g); err != nil {
			return err
		}
		// The timer starts once the task runs: started before Run, it may be
		// due on the loop's first turn on a loaded machine, ahead of the
		// Invoke, and the loop ended with no task to wait for before the
		// signal came.
		eventloop.Invoke(func() {
			pygi.Eval("start()", g)
			eventloop.After(200*time.Millisecond, func() {
				eventloop.Quit()
				go func() {
					time.Sleep(300 * time.Millisecond)
					syscall.Kill(os.Getpid(), syscall.SIGTERM)
				}()
			})
		})
		err = eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGTERM {
			return fmt.Errorf("Run: want a SIGTERM SignalError, got %v", err)
		}
		fmt.Println("Run reported SIGTERM")
		return pygi.Finalize(context.Background())
	}
	// SIGTERM while the UI thread is busy for less than the grace, and a
	// task that needs longer than what is left of it to finish after its
	// cancellation: the UI thread came back in time, so the task finishes.
	lifetimeChildren["grace-vs-asyncio"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		// The busy part starts once the task waits in its sleep (not at a
		// time: on a busy machine the task's first step may come later,
		// and a task cancelled before it ran never enters its try).
		waiting, err := callbacks.New(func() {
			eventloop.After(100*time.Millisecond, func() {
				ready()
				time.Sleep(600 * time.Millisecond) // busy, within the grace
			})
		}, callbacks.Name("waiting"))
		if err == nil {
			err = g.SetItem("waiting", waiting)
		}
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import asyncio, time
async def saver():
    try:
        waiting()
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(0.9)
        print("saved its state", flush=True)
        raise
def start():
    asyncio.get_running_loop().create_task(saver())
`, g); err != nil {
			return err
		}
		eventloop.Invoke(func() { pygi.Eval("start()", g) })
		err = eventloop.Run(context.Background(), eventloop.SignalGrace(time.Second))
		var se *eventloop.SignalError
		if !errors.As(err, &se) {
			return fmt.Errorf("Run: want a SignalError, got %v", err)
		}
		return pygi.Finalize(context.Background())
	}
	// SIGINT, then SIGTERM before the UI thread came back: one ordered
	// shutdown, no hand-back (only the same signal again hands it back).
	lifetimeChildren["int-then-term"] = func() error {
		eventloop.Invoke(func() {
			ready()
			time.Sleep(time.Second)
		})
		err := eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) {
			return fmt.Errorf("Run: want a SignalError, got %v", err)
		}
		fmt.Println("one ordered shutdown")
		return pygi.Finalize(context.Background())
	}
	// A KeyboardInterrupt Python code raises by itself in a GLib callback
	// is printed and the loop goes on, as under python3 with PyGObject.
	lifetimeChildren["ki-deliberate"] = func() error {
		if err := pygi.Exec(`
from gi.repository import GLib
def cb():
    raise KeyboardInterrupt("deliberate")
GLib.idle_add(cb)
`, nil); err != nil {
			return err
		}
		eventloop.After(300*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return fmt.Errorf("Run: %v", err)
		}
		fmt.Println("the loop went on")
		return pygi.Finalize(context.Background())
	}
	// A host that survives a handed-back SIGTERM: Python's handler for it
	// runs again for the next one, as under python3.
	lifetimeChildren["handback-keeps-python"] = func() error {
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, syscall.SIGTERM)
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec("import signal\nruns = []\nsignal.signal(signal.SIGTERM, lambda n, f: runs.append(n))\n", g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			ready()
			time.Sleep(800 * time.Millisecond) // past the grace: handed back
			eventloop.Quit()
		})
		eventloop.Run(context.Background(), eventloop.SignalGrace(200*time.Millisecond))
		before, err := pygi.Eval("len(runs)", g)
		if err != nil {
			return err
		}
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(200 * time.Millisecond)
		after, err := pygi.Eval("(__import__('time').sleep(0.01), len(runs))[1]", g)
		if err != nil {
			return err
		}
		fmt.Printf("Python's handler ran %s, then %s times\n", before, after)
		return pygi.Finalize(context.Background())
	}
}

func TestLoopEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		sigs []syscall.Signal
		out  string
	}{
		{"term-while-ending", nil, "Run reported SIGTERM"},
		{"grace-vs-asyncio", []syscall.Signal{syscall.SIGTERM}, "saved its state"},
		{"int-then-term", []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}, "one ordered shutdown"},
		{"handback-keeps-python", []syscall.Signal{syscall.SIGTERM}, "Python's handler ran 1, then 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r signalRun
			if tc.sigs == nil {
				out, errOut, code := runLifetimeChild(t, tc.name)
				r = signalRun{out: out, err: errOut, code: code}
			} else {
				r = signalChild(t, tc.name, tc.sigs...)
			}
			assert.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
			assert.Contains(t, r.out, tc.out)
		})
	}
	t.Run("ki-deliberate", func(t *testing.T) {
		out, errOut, code := runLifetimeChild(t, "ki-deliberate")
		assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		assert.Contains(t, out, "the loop went on")
		assert.Contains(t, errOut, "KeyboardInterrupt: deliberate", "printed, as python3 prints it")
	})
}

// forkScript forks after CPython's own signal calls (siginterrupt,
// faulthandler's enable and disable, register and unregister, handlers
// signal.signal set, in the orders that undo each other) and reports the
// child's actions and how it met a signal or a crash: as under python3,
// since a forked child is a Python process with Python's dispositions.
// CPython keeps the actions it is told are in place and sets them back
// later; told Go's handlers, it gave its child handlers with no Go runtime
// to run them. The double fork: a grandchild has its parent's actions.
const forkScript = `
import ctypes, faulthandler, os, signal, sys, time
case = os.environ["DUET_FORK_CASE"]
def h(s, f):
    os.write(1, b"child's handler ran\n")
def h2(s, f):
    os.write(1, b"child's handler h2 ran\n")
libc = ctypes.CDLL(None)
class SA(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16), ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]
def desc(sig):
    sa = SA()
    libc.sigaction(sig, None, ctypes.byref(sa))
    k = {0: "DFL", 1: "IGN"}.get(sa.handler or 0, "handler")
    return "%s:%s%s" % (signal.Signals(sig).name, k, "+RESTART" if k == "handler" and sa.flags & 0x10000000 else "")
U = signal.SIGUSR1
crash, sig = False, None
if case == "faulthandler-at-start":
    crash = True
elif case == "siginterrupt":
    signal.siginterrupt(U, True); sig = U
elif case == "handler-siginterrupt":
    signal.signal(U, h); signal.siginterrupt(U, True); sig = U
elif case == "handler-siginterrupt-false":
    signal.signal(U, h); signal.siginterrupt(U, False); sig = U
elif case == "faulthandler":
    faulthandler.enable(); faulthandler.disable(); crash = True
elif case == "faulthandler-crash":
    faulthandler.enable(); crash = True
elif case == "faulthandler-twice":
    faulthandler.enable(); faulthandler.enable(); crash = True
elif case == "faulthandler-again":
    faulthandler.enable(); faulthandler.disable(); faulthandler.enable(); crash = True
elif case == "faulthandler-child-disables":
    faulthandler.enable(); crash = "disable"
elif case == "register":
    faulthandler.register(U); faulthandler.unregister(U); sig = U
elif case == "register-chain":
    faulthandler.register(U, chain=True); sig = U
elif case == "register-child-unregisters":
    faulthandler.register(U); sig = "unregister"
elif case == "register-siginterrupt":
    faulthandler.register(U); signal.siginterrupt(U, True); sig = U
elif case == "register-handler-unregister":
    faulthandler.register(U); signal.signal(U, h); faulthandler.unregister(U); sig = U
elif case == "handlers-register-unregister":
    signal.signal(U, h); signal.signal(U, h2); faulthandler.register(U); faulthandler.unregister(U); sig = U
elif case == "handler-register-handler-unregister":
    signal.signal(U, h); faulthandler.register(U); signal.signal(U, h2); faulthandler.unregister(U); sig = U
elif case == "handler-register-unregister-siginterrupt":
    signal.signal(U, h); faulthandler.register(U); faulthandler.unregister(U); signal.siginterrupt(U, True); sig = U
elif case == "handler-register-siginterrupt":
    signal.signal(U, h); faulthandler.register(U); signal.siginterrupt(U, False); sig = U
elif case == "enable-handler-disable":
    faulthandler.enable(); signal.signal(signal.SIGABRT, h); faulthandler.disable(); sig = signal.SIGABRT
elif case == "getsignal":
    signal.signal(U, signal.getsignal(U)); sig = U
elif case == "sigterm-ignored":
    signal.signal(signal.SIGTERM, signal.SIG_IGN); sig = signal.SIGTERM
elif case == "plain":
    sig = U
elif case == "sigint":
    sig = signal.SIGINT
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    if case == "double-fork":
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(U, h)
        if os.fork() == 0:
            os.write(1, (desc(signal.SIGHUP) + " " + desc(U) + "\n").encode())
            os.kill(os.getpid(), U)
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.2)
            os.write(1, b"grandchild survived\n")
        os._exit(0)
    try:
        if crash == "disable":
            faulthandler.disable(); crash = True
        if sig == "unregister":
            faulthandler.unregister(U); sig = U
        os.write(1, (" ".join(desc(x) for x in (signal.SIGINT, U, signal.SIGSEGV, signal.SIGABRT, signal.SIGTERM)) + "\n").encode())
        if crash:
            ctypes.string_at(0)
        if sig is not None:
            os.kill(os.getpid(), sig)
        time.sleep(0.3)
        os.write(1, b"child survived\n")
    except BaseException as e:
        os.write(1, ("child raised %s\n" % type(e).__name__).encode())
    os._exit(0)
_, st = os.waitpid(pid, 0)
if case == "double-fork":
    time.sleep(0.6)
print("child killed by signal %d" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else "child exited %d" % os.WEXITSTATUS(st), flush=True)
`

func TestForkedChildGetsPythonsDispositions(t *testing.T) {
	if sanitized {
		// The forked child runs Python, which allocates: under ASan a
		// child forked while another thread held the sanitizer
		// allocator's lock waits for it for ever (seen in about one run
		// in eight, the child's stack in SizeClassAllocator64's Refill).
		// The dispositions are checked by the race build's run.
		t.Skip("fork without exec under -asan can deadlock in the sanitizer's allocator")
	}
	for _, c := range []string{"plain", "siginterrupt", "handler-siginterrupt", "handler-siginterrupt-false",
		"faulthandler", "faulthandler-crash", "faulthandler-twice", "faulthandler-again", "faulthandler-child-disables",
		"register", "register-chain", "register-child-unregisters", "register-siginterrupt", "register-handler-unregister",
		"handlers-register-unregister", "handler-register-handler-unregister", "handler-register-unregister-siginterrupt",
		"handler-register-siginterrupt", "enable-handler-disable", "getsignal", "sigterm-ignored", "double-fork",
		"faulthandler-at-start", "sigint"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			env := []string{"DUET_FORK_CASE=" + c}
			if c == "faulthandler-at-start" { // PYTHONFAULTHANDLER: enabled by CPython's start-up
				env = append(env, "PYTHONFAULTHANDLER=1")
			}
			cmd := exec.Command("/usr/bin/python3", "-c", forkScript)
			cmd.Env = append(os.Environ(), env...)
			want, err := cmd.Output()
			require.NoError(t, err)
			out, errOut, err := testutil.RunChild(t, append([]string{"EVENTLOOP_CHILD=exec-src", "DUET_SRC=" + forkScript}, env...)...)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Equal(t, string(want)+"ok\n", out, "python3's child, then duet's (and the child harness's ok)")
		})
	}
}

// A fatal signal another process sends (kill -ABRT) to a thread that runs
// C code is not a crash: with faulthandler enabled the Go program's
// signal.Notify gets it once, and faulthandler writes nothing.
func TestFaulthandlerLeavesSentSignalsToTheHost(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "EVENTLOOP_CHILD=sent-abrt")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "the host got SIGABRT 1 time(s)")
	assert.NotContains(t, errOut, "Fatal Python error")
}

func init() {
	lifetimeChildren["sent-abrt"] = func() error {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGABRT)
		// Another process tgkills the thread while it sleeps in C.
		if err := pygi.Exec(`
import faulthandler, os, subprocess, threading, time
faulthandler.enable()
subprocess.Popen(["/usr/bin/python3", "-c",
    "import ctypes, time; time.sleep(0.3); ctypes.CDLL(None).syscall(234, %d, %d, 6)" % (os.getpid(), threading.get_native_id())])
time.sleep(1.5)
`, nil); err != nil {
			return err
		}
		n := 0
		for timeout := time.After(time.Second); ; {
			select {
			case <-ch:
				n++
				continue
			case <-timeout:
			}
			break
		}
		fmt.Printf("the host got SIGABRT %d time(s)\n", n)
		return nil
	}
}
