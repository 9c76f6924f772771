package eventloop_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	// An idle loop, watched from the parent: a non-blocking iteration from
	// Python finds nothing to dispatch; then the child says "ready" with
	// duet's counters and idles until SIGTERM, when it prints them again.
	lifetimeChildren["idle"] = func() error { return idleChild(0) }
	// The same after awaits of a Go async func, which arm the loop's spin
	// before poll and leave parked starters: both sleep once idle.
	lifetimeChildren["idle-after-awaits"] = func() error { return idleChild(500) }
	// The same with a Python thread alive, waiting: the loop looks at the
	// collector's counts while Python threads live, less and less often
	// while nothing is allocated.
	lifetimeChildren["idle-with-a-python-thread"] = func() error {
		if err := pygi.Exec("import threading\nparked = threading.Event()\nthreading.Thread(target=parked.wait, daemon=True).start()\n", nil); err != nil {
			return err
		}
		return idleChild(0)
	}
	// The same with a Python thread that keeps a record twice a second:
	// the loop looks as seldom as with one that waits (it used to look
	// again from 10 ms at each record, seven wakeups a record).
	lifetimeChildren["idle-with-a-python-thread-at-work"] = func() error {
		if err := pygi.Exec("import threading, time\nhist = []\nclass Rec:\n    pass\ndef beat():\n    while True:\n        time.sleep(0.5)\n        hist.append(Rec())\nthreading.Thread(target=beat, daemon=True).start()\n", nil); err != nil {
			return err
		}
		return idleChild(0)
	}
}

func idleChild(awaits int) error {
	if awaits > 0 {
		one, err := callbacks.Async(func(ctx context.Context) int { return 1 })
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("one", one); err != nil {
			return err
		}
		if err := pygi.Exec("async def main(n):\n    for _ in range(n):\n        await one()\n", g); err != nil {
			return err
		}
		main, err := g.Item("main")
		if err != nil {
			return err
		}
		go func() {
			for !eventloop.Running() {
				time.Sleep(time.Millisecond)
			}
			if _, err := eventloop.Await(context.Background(), main, awaits); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			eventloop.Invoke(idleThen)
		}()
	} else {
		eventloop.Invoke(idleThen)
	}
	err := eventloop.Run(context.Background())
	fmt.Printf("stopped %+v\n", forensics.ReadStats().Loop)
	if _, ok := err.(*eventloop.SignalError); !ok {
		return fmt.Errorf("want a SignalError, got %v", err)
	}
	return pygi.Finalize(context.Background())
}

// idleThen runs on the loop: whatever is due now runs, then nothing is;
// "ready" follows a second later.
func idleThen() {
	err := pygi.Exec(`
import time
from gi.repository import GLib
ctx = GLib.MainContext.default()
# Whatever is due now (a collection after start-up, say, and with a Python
# thread alive the few young collections that follow one, 10 ms apart),
# until 50 ms go by with nothing: then nothing is due for good.
for _ in range(20):
    ran = False
    while ctx.iteration(False):
        ran = True
    if not ran:
        break
    time.sleep(0.05)
time.sleep(0.05)
assert not ctx.iteration(False), "a non-blocking iteration dispatched something though nothing was due"
`, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	eventloop.After(time.Second, func() { fmt.Printf("ready %+v\n", forensics.ReadStats().Loop) })
}

// voluntarySwitches sums voluntary_ctxt_switches over a process's threads.
func voluntarySwitches(pid int) int64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var sum int64
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// An idle app does not wake up: duet's sources do not run, and the threads
// of the process sleep (pure PyGObject's do too).
func TestAnIdleLoopSleeps(t *testing.T) {
	for _, child := range []string{"idle", "idle-after-awaits", "idle-with-a-python-thread", "idle-with-a-python-thread-at-work"} {
		t.Run(child, func(t *testing.T) { idleLoopSleeps(t, child) })
	}
}

func idleLoopSleeps(t *testing.T, child string) {
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := testutil.Command(ctx, exe, "-test.run=^$")
	cmd.Env = testutil.ChildEnv(t, "EVENTLOOP_CHILD="+child)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rd := bufio.NewReader(out)
	ready, err := rd.ReadString('\n')
	if err != nil {
		cmd.Wait() // stderr is complete only now
		t.Fatalf("%v; stderr:\n%s", err, errb.String())
	}
	require.True(t, strings.HasPrefix(ready, "ready "), ready)
	time.Sleep(300 * time.Millisecond) // the print itself, and what the runtime does after it
	before := voluntarySwitches(cmd.Process.Pid)
	time.Sleep(2 * time.Second)
	woken := voluntarySwitches(cmd.Process.Pid) - before
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	stopped, _ := rd.ReadString('\n')
	require.NoError(t, cmd.Wait(), "stderr:\n%s", errb.String())
	t.Logf("%d wakeups in 2 s; %s", woken, strings.TrimSpace(stopped))
	// This is 0 (make bench measures it for a whole GTK app next to pure
	// PyGObject). The bound leaves room for a stray runtime wakeup on a
	// loaded machine; polling (the 20 ms collector timer this replaced woke
	// 250 times a second) is what must not come back.
	assert.LessOrEqual(t, woken, int64(10), "threads woke while the app idled: polling?")
	// Only the SIGTERM's own handling may have run since "ready".
	var b0, s0 forensics.Stats
	fmt.Sscanf(strings.TrimPrefix(ready, "ready "), "{Dispatches:%d TimerRuns:%d Collections:%d}", &b0.Loop.Dispatches, &b0.Loop.TimerRuns, &b0.Loop.Collections)
	fmt.Sscanf(strings.TrimPrefix(stopped, "stopped "), "{Dispatches:%d TimerRuns:%d Collections:%d}", &s0.Loop.Dispatches, &s0.Loop.TimerRuns, &s0.Loop.Collections)
	assert.Equal(t, b0.Loop.TimerRuns, s0.Loop.TimerRuns)
	assert.Equal(t, b0.Loop.Collections, s0.Loop.Collections)
	assert.LessOrEqual(t, s0.Loop.Dispatches-b0.Loop.Dispatches, int64(2), "the quit itself")
}

// Garbage made by Python work on a goroutine is collected, on the UI
// thread, without anything else happening on the loop.
func TestCollectionsFollowAllocation(t *testing.T) {
	looptest.FailOnPythonExceptions(t) // an off-thread collection would be reported
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec(`
import gc, threading
ui = threading.main_thread().ident
where = []
def watch(phase, info):
    if phase == "start":
        where.append(threading.get_ident())
gc.callbacks.append(watch)
`+cyclicGarbagePy, g))
	defer pygi.Exec("gc.callbacks.remove(watch)", g)
	before := forensics.ReadStats().Loop.Collections
	r, err := pygi.Eval("garbage(5000)", g) // from this goroutine
	require.NoError(t, err)
	r.Close()
	require.Eventually(t, func() bool { return forensics.ReadStats().Loop.Collections > before }, 10*time.Second, 10*time.Millisecond,
		"the loop collects when the collector's counts say so")
	r, err = pygi.Eval("sum(1 for i in where if i != ui)", g)
	require.NoError(t, err)
	n, _ := pygi.As[int64](r)
	assert.Zero(t, n, "collections ran off the UI thread")
}

// The same for garbage made by many small calls inside one attachment on
// a goroutine: each call's exit tells the loop when a collection is due
// (f() inside an attachment takes a shorter way in, and still does), and
// the loop collects while the batch runs.
func TestCollectionsFollowAllocationInsideAnAttachment(t *testing.T) {
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec("def cycle():\n    x = [None] * 20\n    x[0] = x\n", g))
	f, err := g.Item("cycle")
	require.NoError(t, err)
	before := forensics.ReadStats().Loop.Collections
	var during int64
	require.NoError(t, pygi.WithGIL(func() error {
		for i := 1; i <= 300_000; i++ {
			if _, err := f.Call(); err != nil {
				return err
			}
			if i%1000 == 0 && forensics.ReadStats().Loop.Collections > before {
				during = forensics.ReadStats().Loop.Collections - before
				return nil // the loop collected while the batch ran
			}
		}
		return nil
	}))
	assert.Positive(t, during, "the loop collected while the attachment's calls made cycles")
}

// Garbage a Python thread makes is collected while the loop is idle: the
// thread passes through no duet entry that would tell the loop, so the loop
// looks while Python threads live. It used to collect nothing until some
// other event woke it (a thread's 400 000 Nodes, all alive). Another
// thread sat waiting first, long enough for the loop to look only every
// second: the thread's start (from a goroutine's entry) wakes it.
func TestPythonThreadsGarbageIsCollectedWhileIdle(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec("import threading\nsit = threading.Event()\nsitter = threading.Thread(target=sit.wait, daemon=True)\nsitter.start()\n", g))
	defer pygi.Exec("sit.set(); sitter.join()", g)
	time.Sleep(3 * time.Second) // the loop's look backs off to its longest, 1 s
	made := make(chan struct{})
	done, err := callbacks.New(func() { close(made) })
	require.NoError(t, err)
	require.NoError(t, g.SetItem("done", done))
	require.NoError(t, pygi.Exec(countedNodesPy+`
hold = threading.Event()
def work():
    garbage(200000)
    done()  # into Go: not an entry, nothing tells the loop
    hold.wait()
worker = threading.Thread(target=work, daemon=True)
worker.start()
`, g))
	defer pygi.Exec("hold.set(); worker.join()", g)
	<-made
	time.Sleep(300 * time.Millisecond) // no call into Python from here
	r, err := pygi.Eval("alive[0]", g)
	require.NoError(t, err)
	n, err := pygi.As[int](r)
	require.NoError(t, err)
	assert.Less(t, n, 1000, "Nodes alive after the thread made 400 000 in cycles")
}

// threadGarbagePy starts a thread, worker, that waits for go, runs pre,
// makes 400 000 counted Nodes in cycles, calls done (a Go func: no entry,
// nothing tells the loop) and waits for hold.
const threadGarbagePy = countedNodesPy + `
hold, go = threading.Event(), threading.Event()
def work():
    go.wait()
    pre()
    garbage(200000)
    done()
    hold.wait()
worker = threading.Thread(target=work, daemon=True)
worker.start()
`

// A Python thread's garbage is collected while the loop is idle after the
// loop turned for Go alone (its look at the thread backed off with each
// turn, to 2 s, not with time), and after the thread switched the
// collector off and on again (the loop stopped looking while it was off);
// and with a finaliser in the garbage, whose collection hid from the count
// the Nodes the thread made meanwhile (CPython zeroes it as a collection
// begins and lowers it for each object freed): thousands stayed for good.
func TestPythonThreadsGarbageIsCollectedAfterQuietTurns(t *testing.T) {
	for _, c := range []struct {
		name, pre string
		wait      time.Duration // the longest look the loop may be in the middle of, and more
	}{
		{"after Go-only turns", "pass", time.Second},
		// While the collector is off the loop looks less and less often,
		// up to every 2 s: it used to stop looking.
		{"after set_threshold(0) and back", "gc.set_threshold(0); time.sleep(0.3); gc.set_threshold(700, 10, 10)", 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer watchdog(t, 2*time.Minute)()
			g, err := pygi.NewGlobals()
			require.NoError(t, err)
			defer g.Close()
			made := make(chan struct{})
			done, err := callbacks.New(func() { close(made) })
			require.NoError(t, err)
			require.NoError(t, g.SetItem("done", done))
			require.NoError(t, pygi.Exec("def pre():\n    "+c.pre+"\n", g))
			require.NoError(t, pygi.Exec(threadGarbagePy, g))
			defer pygi.Exec("hold.set(); worker.join()", g)
			time.Sleep(100 * time.Millisecond)
			for range 20 {
				require.NoError(t, eventloop.InvokeWait(context.Background(), func() error { return nil }))
			}
			before := forensics.ReadStats().Loop.Collections
			require.NoError(t, pygi.Exec("go.set()", g))
			<-made
			// Nothing from here calls into Python (an entry would wake
			// the loop) until the count is read: the loop's own looks
			// must have found the garbage by then (after the Go-only
			// turns they took 2 s; with the collector switched off and on
			// they never did).
			time.Sleep(c.wait)
			t.Logf("collections meanwhile: %d", forensics.ReadStats().Loop.Collections-before)
			r, err := pygi.Eval("alive[0]", g)
			require.NoError(t, err)
			n, err := pygi.As[int](r)
			require.NoError(t, err)
			assert.Less(t, n, 1000, "Nodes alive after the thread made 400 000 in cycles")
		})
	}
}

// countedNodesPy defines Nodes that count themselves (alive, and the most
// alive at once in peak) and have a finaliser (a collection that runs them
// lets other threads run meanwhile), and garbage(n): n pairs of them that
// hold each other, which only the cycle collector frees.
const countedNodesPy = `
import gc, threading, time
alive, peak = [0], [0]
class Node:
    def __init__(self):
        alive[0] += 1
        if alive[0] > peak[0]:
            peak[0] = alive[0]
    def __del__(self):
        alive[0] -= 1
def garbage(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.b, b.a = b, a
`

// cyclicGarbagePy defines garbage(n): n pairs of objects that hold each
// other, which only the cycle collector frees.
const cyclicGarbagePy = `
class Node:
    pass
def garbage(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.b, b.a = b, a
`

func init() {
	// An idle app whose Python thread waits, and whose garbage makes more
	// garbage when it is collected (a finaliser that leaves a cycle
	// behind): the young collections that follow one stop after a few,
	// instead of running every 10 ms for as long as the thread lives.
	lifetimeChildren["idle-with-self-renewing-garbage"] = func() error {
		if err := pygi.Exec(`
import threading, os
if os.environ.get("WITH_THREAD"):
    parked = threading.Event()
    threading.Thread(target=parked.wait, daemon=True).start()
class Phoenix:
    def __del__(self):
        p = Phoenix.__new__(Phoenix)
        p.me = p
def seed():
    p = Phoenix()
    p.me = p
for _ in range(1000):
    seed()
`, nil); err != nil {
			return err
		}
		return idleChild(0)
	}
}

func TestSelfRenewingGarbageDoesNotKeepTheLoopAwake(t *testing.T) {
	for _, thread := range []string{"", "1"} {
		t.Run("with a Python thread: "+map[string]string{"": "no", "1": "yes"}[thread], func(t *testing.T) {
			t.Setenv("WITH_THREAD", thread)
			idleLoopSleeps(t, "idle-with-self-renewing-garbage")
		})
	}
}
