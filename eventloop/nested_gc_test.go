package eventloop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
)

// A nested main loop run from a gc callback ("start"
// phase) of a collection the loop runs. While the collection is in
// progress, gc.collect() returns 0 without resetting the counters, so the
// collection stays due; the source that is dispatching is blocked in the
// nested loop, but with two sources the other one is not, and it
// dispatched again and again (at the default priority, a spin). A
// collection in progress is not due: neither source is ready then.
const nestedGCPy = `
import gc, threading, time
from gi.repository import GLib
ui = threading.main_thread().ident
res = {}
def _vcs():
    with open("/proc/self/task/%d/status" % threading.get_native_id()) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
def nested():
    res["done"] = True
    loop = GLib.MainLoop()
    GLib.timeout_add(500, lambda: loop.quit() or False)
    w0, c0, v0 = time.monotonic(), time.thread_time(), _vcs()
    loop.run()
    res["wall"] = time.monotonic() - w0
    res["cpu"] = time.thread_time() - c0
    res["wakeups"] = _vcs() - v0
def watch(phase, info):
    if phase != "start" or threading.get_ident() != ui or res.get("done") or res.get("armed") != "callback":
        return
    if res.get("skip", 0) > 0:
        res["skip"] -= 1
        return
    nested()
class Node:
    pass
class Dialog:
    # a finaliser that runs a modal (nested) loop, as a "save changes?" prompt would
    def __del__(self):
        if threading.get_ident() == ui and not res.get("done"):
            nested()
def cyclic_dialog():
    d = Dialog()
    d.me = d
def garbage(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.b, b.a = b, a
gc.callbacks.append(watch)
`

func nestedGC(t *testing.T, mode string, busyTimer bool) { nestedGCAfter(t, mode, busyTimer, false) }

// nestedGCAfter is nestedGC; with followUp, a Python thread lives and the
// nested loop runs in the young collection that follows the first one
// (see gcstate.c: the follow-up, past its time while the collection runs,
// made every turn of the nested loop a poll without sleep).
func nestedGCAfter(t *testing.T, mode string, busyTimer, followUp bool) {
	defer watchdog(t, 2*time.Minute)()
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec(nestedGCPy, g))
	defer pygi.Exec("gc.callbacks.remove(watch)", g)
	if followUp {
		require.NoError(t, pygi.Exec("parked = threading.Event()\nthreading.Thread(target=parked.wait, daemon=True).start()\nres['skip'] = 1\n", g))
		defer pygi.Exec("parked.set()", g)
	}
	looptest.Turn(t)
	if busyTimer {
		// a timer slower than its interval, always due, until the nested loop starts
		stop := false
		tm := eventloop.Every(time.Millisecond, func() {
			if stop {
				return
			}
			r, _ := pygi.Eval("res.get('done', False)", g)
			d, _ := pygi.As[bool](r)
			r.Close()
			if d {
				stop = true
				return
			}
			busy(3 * time.Millisecond)
		})
		defer tm.Cancel()
	}
	before := forensics.ReadStats().Loop.Collections
	require.NoError(t, pygi.Exec("res['armed'] = '"+mode+"'", g))
	if mode == "del" {
		require.NoError(t, pygi.Exec("cyclic_dialog()", g))
	}
	require.NoError(t, pygi.Exec("garbage(5000)", g))
	if mode == "del" {
		// Python work elsewhere while the modal loop runs makes the next collection due
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, pygi.Exec("garbage(5000)", g))
	}
	require.Eventually(t, func() bool {
		// the last of the three set (reading /proc lets the GIL go
		// between them: 'wall' alone was seen without 'wakeups')
		r, err := pygi.Eval("'wakeups' in res", g)
		if err != nil {
			return false
		}
		ok, _ := pygi.As[bool](r)
		r.Close()
		return ok
	}, 30*time.Second, 10*time.Millisecond)
	steps := forensics.ReadStats().Loop.Collections - before
	r, err := pygi.Eval("'%.3f %.3f %d' % (res['wall'], res['cpu'], res['wakeups'])", g)
	require.NoError(t, err)
	s, _ := pygi.As[string](r)
	r.Close()
	t.Logf("nested loop in a gc callback: wall s, UI-thread cpu s, UI-thread wakeups = %s; collector dispatches %d", s, steps)
	var wall, cpu float64
	var wakeups int
	_, _ = fmt.Sscanf(s, "%f %f %d", &wall, &cpu, &wakeups)
	assert.Less(t, steps, int64(5), "the collector's sources dispatched again and again inside the nested loop")
	assert.Less(t, cpu, wall/4, "the UI thread spun inside the nested loop")
	_ = wakeups // logged only: the Eventually poll above wakes the loop in both commits
}

func TestNestedLoopInAGCCallback(t *testing.T)          { nestedGC(t, "callback", false) }
func TestNestedLoopInAGCCallbackWhileBusy(t *testing.T) { nestedGC(t, "callback", true) }
func TestNestedLoopInAFinaliser(t *testing.T)           { nestedGC(t, "del", false) }
func TestNestedLoopInAFinaliserWhileBusy(t *testing.T)  { nestedGC(t, "del", true) }
func TestNestedLoopInAFollowUpCollection(t *testing.T)  { nestedGCAfter(t, "callback", true, true) }
