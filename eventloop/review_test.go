package eventloop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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

// The second review's findings, each in a child process.
var reviewChildren = map[string]func() error{
	// faulthandler.register while Python's main thread is busy: the dump
	// must not read frames the main thread is freeing.
	"fault-dump-race": func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import faulthandler, signal
faulthandler.register(signal.SIGUSR1, open("/dev/null", "w"))
def deep(n):
    return 0 if n == 0 else 1 + deep(n - 1)
`, g); err != nil {
			return err
		}
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					syscall.Kill(os.Getpid(), syscall.SIGUSR1)
				}
			}
		}()
		err = pygi.Exec("import time\nend = time.monotonic() + 2\nwhile time.monotonic() < end:\n    deep(400)\n", g)
		close(stop)
		if err != nil {
			return err
		}
		fmt.Println("survived the dumps")
		return pygi.Finalize(context.Background())
	},
	// A SIGTERM handler stops a worker thread that Finalize waits for.
	"handler-during-finalize": func() error {
		if err := pygi.Exec(`
import signal, threading
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda n, f: stop.set())
threading.Thread(target=stop.wait, name="worker").start()
`, nil); err != nil {
			return err
		}
		go func() { time.Sleep(300 * time.Millisecond); syscall.Kill(os.Getpid(), syscall.SIGTERM) }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pygi.Finalize(ctx); err != nil {
			return err
		}
		fmt.Println("the handler stopped the worker")
		return nil
	},
	// A non-daemon thread's Go callback does its Python work on a
	// goroutine while Finalize waits for the thread.
	"goroutine-of-a-thread": func() error {
		cb, err := callbacks.New(func(n int) int {
			res := make(chan int)
			go func() {
				r, err := pygi.Eval(fmt.Sprint(n, " * 2"), nil)
				v, _ := pygi.As[int64](r)
				if err != nil {
					v = -1
				}
				res <- int(v)
			}()
			v := 0
			pygi.WithoutGIL(func() { v = <-res })
			return v
		}, callbacks.Name("double_on_goroutine"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		g.SetItem("double", cb)
		if err := pygi.Exec(`
import threading, time
got = []
def work():
    for i in range(5):
        got.append(double(i))
        time.sleep(0.05)
threading.Thread(target=work, name="worker").start()
`, g); err != nil {
			return err
		}
		time.Sleep(80 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pygi.Finalize(ctx); err != nil {
			return err
		}
		fmt.Println("finalised after the worker")
		return nil
	},
	// Forked children are Python processes: subprocess's restore_signals,
	// preexec_fn setting a disposition, a handler in an os.fork child,
	// multiprocessing's terminate and a Pool's initializer work as in
	// python3, with the host subscribed to and ignoring signals meanwhile.
	"forked-children": func() error {
		signal.Ignore(syscall.SIGPIPE)
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, syscall.SIGTERM)
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
import multiprocessing, os, signal, subprocess, time
out = {}
p = subprocess.run(["bash", "-c", "yes | head -c1 >/dev/null; echo ${PIPESTATUS[0]}"], capture_output=True, text=True)
out["restore_signals"] = p.stdout.strip()
p = subprocess.run(["grep", "SigIgn", "/proc/self/status"], capture_output=True, text=True,
                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
# SIGINT's bit alone: the rest is what this process inherited (nohup's SIGHUP)
out["preexec_fn"] = str(int(p.stdout.split()[1], 16) & 2)
pid = os.fork()
if pid == 0:
    got = []
    signal.signal(signal.SIGUSR1, lambda n, f: got.append(n))
    os.kill(os.getpid(), signal.SIGUSR1)
    time.sleep(0.05)
    os._exit(0 if got == [signal.SIGUSR1] else 3)
out["fork_handler"] = os.waitpid(pid, 0)[1] >> 8
ctx = multiprocessing.get_context("fork")
proc = ctx.Process(target=time.sleep, args=(30,))
proc.start()
proc.terminate()
proc.join(10)
out["terminate"] = proc.exitcode
with ctx.Pool(2, initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN)) as pool:
    out["pool"] = pool.map(abs, [-1, -2])
`, g); err != nil {
			return err
		}
		r, err := pygi.Eval("sorted(out.items())", g)
		if err != nil {
			return err
		}
		fmt.Println("children:", r.String())
		return pygi.Finalize(context.Background())
	},
	// Python's SIGTERM handler runs while the UI thread is busy in Python
	// for longer than the grace, and the job goes on: the UI thread came
	// back for the signal when its handler ran. The same for a
	// KeyboardInterrupt the job catches.
	"handler-counts-as-back": func() error {
		var jobErr error
		eventloop.Invoke(func() {
			ready()
			jobErr = pygi.Exec(`
import signal, time
signal.signal(signal.SIGTERM, lambda n, f: print("handler ran", flush=True))
t0 = time.monotonic()
while time.monotonic() - t0 < 2:
    try:
        time.sleep(0.05)
    except KeyboardInterrupt:
        print("KeyboardInterrupt caught, the job goes on", flush=True)
print("job done", flush=True)
`, nil)
			eventloop.Quit()
		})
		if err := eventloop.Run(context.Background(), eventloop.SignalGrace(500*time.Millisecond)); err != nil {
			return fmt.Errorf("Run: %v", err)
		}
		if jobErr != nil {
			return jobErr
		}
		return pygi.Finalize(context.Background())
	},
	// A SIGTERM Python handles is pending when Ctrl+C comes: the first
	// Ctrl+C still quits.
	"sigint-after-handled-term": func() error {
		if err := pygi.Exec("import signal\nsignal.signal(signal.SIGTERM, lambda n, f: None)\n", nil); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			ready()
			pygi.Exec("import time\nend = time.monotonic() + 2\nwhile time.monotonic() < end:\n    pass\n", nil)
		})
		eventloop.After(5*time.Second, eventloop.Quit)
		err := eventloop.Run(context.Background())
		var se *eventloop.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGINT {
			return fmt.Errorf("Run: want a SIGINT SignalError, got %v", err)
		}
		fmt.Println("quit on the first Ctrl+C")
		return pygi.Finalize(context.Background())
	},
}

func init() {
	for name, fn := range reviewChildren {
		lifetimeChildren[name] = fn
	}
}

func TestReviewFindings(t *testing.T) {
	for _, tc := range []struct {
		name string
		sigs []syscall.Signal
		want []string
	}{
		{"fault-dump-race", nil, []string{"survived the dumps"}},
		{"handler-during-finalize", nil, []string{"the handler stopped the worker"}},
		{"goroutine-of-a-thread", nil, []string{"finalised after the worker"}},
		{"forked-children", nil, []string{"('fork_handler', 0)", "('pool', [1, 2])", "('preexec_fn', '2')", "('restore_signals', '141')", "('terminate', -15)"}},
		{"handler-counts-as-back", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, []string{"handler ran", "KeyboardInterrupt caught, the job goes on", "job done"}},
		{"sigint-after-handled-term", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, []string{"quit on the first Ctrl+C"}},
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
			assert.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%.3000s", r.out, r.err)
			for _, w := range tc.want {
				assert.Contains(t, r.out, w)
			}
		})
	}
}

// A program whose C code is built without PIE: the interposer still tells
// libpython's calls from the executable's, so Go's own signal handlers are
// installed and the host's subscriptions work.
func TestSignalsInANonPIEBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "sigprobe")
	build := exec.Command("go", "build", "-o", bin, "./testdata/sigprobe")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -fno-pie -fno-pic")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "host got SIGUSR1")
	assert.NotContains(t, string(out), "SigCgt:\t0000000000000000")
	assert.True(t, strings.Contains(string(out), "recovered"), "%s", out)
}
