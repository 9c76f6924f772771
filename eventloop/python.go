package eventloop

import (
	"fmt"
	"os"
	"sync"

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
