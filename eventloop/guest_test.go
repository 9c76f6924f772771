package eventloop_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
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
		if err := pygi.Init(); err != nil {
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
		if err := pygi.Finalize(); err != nil {
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
			return pygi.Finalize()
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
		if err := pygi.Finalize(); err != nil {
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
		if err := pygi.Finalize(); err != nil {
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
		if err := pygi.Finalize(); err != nil {
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
		if err := pygi.Finalize(); err != nil {
			return err
		}
		ready()
		time.Sleep(30 * time.Second)
		return errors.New("still alive")
	},
	// The loop's UI thread stuck, a host handler of its own: the grace ends,
	// duet hands SIGTERM back, and the host decides (here: status 7).
	"host-stuck-handback": func() error {
		eventloop.SetSignalGrace(300 * time.Millisecond)
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
		eventloop.Run(context.Background())
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
		eventloop.SetSignalGrace(500 * time.Millisecond)
		eventloop.Invoke(func() {
			ready()
			time.Sleep(2 * time.Second) // busy in Go, well past the grace
		})
		eventloop.After(2500*time.Millisecond, eventloop.Quit)
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		r, err := pygi.Eval("len(got)", g)
		if err != nil {
			return err
		}
		fmt.Println("handler runs:", r.String())
		return pygi.Finalize()
	},
	// PyGObject's own test_ossig pattern: signal.alarm with a handler while
	// Python code on the UI thread is busy past the grace.
	"loop-alarm-busy": func() error {
		eventloop.SetSignalGrace(300 * time.Millisecond)
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
		if err := eventloop.Run(context.Background()); err != nil {
			return err
		}
		if got != nil {
			return got
		}
		fmt.Println("alarm handled")
		return pygi.Finalize()
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
			return pygi.Finalize()
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
		if err := pygi.Init(); err != nil {
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
		return pygi.Finalize()
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
		return pygi.Finalize()
	}
}
