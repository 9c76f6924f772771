package eventloop

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// PyGObject prints and drops exceptions raised inside GTK signal handlers,
// GLib sources and Python threads (through sys.excepthook and friends).
// duet routes them to Go instead: every function registered with
// OnPythonException receives them; with none registered they are printed as
// Python would.

var pyexc struct {
	mu   sync.Mutex
	subs map[int]func(*pygi.Error)
	next int
	once sync.Once
	err  error
}

// OnPythonException registers fn to receive Python exceptions nobody caught
// (raised in GTK signal handlers, GLib sources, Python threads, __del__).
// It returns a function that removes fn.
func OnPythonException(fn func(*pygi.Error)) (remove func()) {
	pyexc.mu.Lock()
	defer pyexc.mu.Unlock()
	if pyexc.subs == nil {
		pyexc.subs = map[int]func(*pygi.Error){}
	}
	id := pyexc.next
	pyexc.next++
	pyexc.subs[id] = fn
	return func() {
		pyexc.mu.Lock()
		delete(pyexc.subs, id)
		pyexc.mu.Unlock()
	}
}

const hookSource = `
import sys, threading
_orig = (sys.excepthook, threading.excepthook, sys.unraisablehook)

def install(report):
    def excepthook(t, v, tb):
        if v is None or not report(v):
            _orig[0](t, v, tb)
    def thread_hook(args):
        if args.exc_value is None or not report(args.exc_value):
            _orig[1](args)
    def unraisable_hook(u):
        if u.exc_value is None or not report(u.exc_value):
            _orig[2](u)
    sys.excepthook = excepthook
    threading.excepthook = thread_hook
    sys.unraisablehook = unraisable_hook
`

// reportPython is the Go side of the hooks; false lets Python print.
func reportPython(exc *pygi.Object) bool {
	pyexc.mu.Lock()
	subs := make([]func(*pygi.Error), 0, len(pyexc.subs))
	for _, f := range pyexc.subs {
		subs = append(subs, f)
	}
	pyexc.mu.Unlock()
	if len(subs) == 0 {
		return false
	}
	e, err := pygi.ExceptionError(exc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "eventloop: cannot describe a Python exception:", err)
		return false
	}
	for _, f := range subs {
		f(e)
	}
	return true
}

// installExceptionHooks puts the hooks in place once per interpreter.
func installExceptionHooks() error {
	pyexc.once.Do(func() {
		g, err := pygi.NewGlobals()
		if err != nil {
			pyexc.err = err
			return
		}
		defer g.Close()
		if err = pygi.ExecFile(hookSource, "<duet eventloop>", g); err != nil {
			pyexc.err = err
			return
		}
		install, err := g.Item("install")
		if err != nil {
			pyexc.err = err
			return
		}
		r, err := install.Call(callbacks.Must(callbacks.New(reportPython, callbacks.Name("report_to_go"))))
		r.Close()
		pyexc.err = err
	})
	return pyexc.err
}

// The cycle collector on the UI thread. CPython runs its automatic
// collections on whatever thread happens to allocate, and with goroutines
// calling Python that is any thread: a collection that frees a GTK
// object's wrapper would finalise the widget there, behind GTK's back.
// While the loop runs, automatic collection is off and the loop runs the
// same generational schedule (CPython's own thresholds) every 20 ms.
const gcSource = `
import gc
def enter():
    was = gc.isenabled()
    gc.disable()
    return was
def leave(was):
    if was:
        gc.enable()
def step():
    c0, c1, c2 = gc.get_count()
    t0, t1, t2 = gc.get_threshold()
    if c0 <= t0:
        return -1
    if c1 > t1 and c2 > t2:
        gen = 2
    elif c1 > t1:
        gen = 1
    else:
        gen = 0
    gc.collect(gen)
    return gen
`

var uiGC struct {
	once sync.Once
	mod  *pygi.Object
	err  error
}

func collectOnUIThread() (stop func(), err error) {
	uiGC.once.Do(func() {
		g, err := pygi.NewGlobals()
		if err != nil {
			uiGC.err = err
			return
		}
		if err := pygi.ExecFile(gcSource, "<duet ui gc>", g); err != nil {
			uiGC.err = err
			return
		}
		uiGC.mod = g
	})
	if uiGC.err != nil {
		return nil, uiGC.err
	}
	enterFn, _ := uiGC.mod.Item("enter")
	leaveFn, _ := uiGC.mod.Item("leave")
	step, _ := uiGC.mod.Item("step")
	was, err := enterFn.Call()
	if err != nil {
		return nil, err
	}
	t := Every(20*time.Millisecond, func() {
		if r, err := step.Call(); err == nil {
			r.Close()
		}
	})
	return func() {
		t.Cancel()
		if r, err := leaveFn.Call(was); err == nil {
			r.Close()
		}
	}, nil
}
