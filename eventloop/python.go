package eventloop

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

// The package's Python: one file per module, loaded through pysrc when
// first needed.
//
//go:embed *.py
var pyFiles embed.FS

var python = pysrc.Embed("eventloop", pyFiles)

// PyGObject prints and drops exceptions raised inside GTK signal handlers,
// GLib sources and Python threads (through sys.excepthook and friends).
// duet routes them to Go instead: every function registered with
// OnPythonException receives them; with none registered they are printed as
// Python would.

var hooksPy = python.Module("duet_hooks", "hooks.py", pysrc.Setup(installHooks))

var pyexc struct {
	mu     sync.Mutex
	subs   map[int]func(*pygi.Error)
	next   int
	report *pygi.Object // report_to_go, also used by the collector's watch
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

// reportPython is the Go side of the hooks; false lets Python print.
func reportPython(exc *pygi.Object) bool {
	e, err := pyobj.ExceptionError(exc)
	if err != nil {
		if !errors.Is(err, pyobj.ErrNotException) { // that one is Python's hook's to refuse, as python3's does
			fmt.Fprintln(os.Stderr, "eventloop: cannot describe a Python exception:", err)
		}
		return false
	}
	// A KeyboardInterrupt nobody caught has quit the loop already: pygi
	// tells the loop of every one that becomes a Go error.
	return deliverPython(e)
}

// deliverPython hands e to the OnPythonException subscribers; false when
// there are none.
func deliverPython(e *pygi.Error) bool {
	pyexc.mu.Lock()
	subs := make([]func(*pygi.Error), 0, len(pyexc.subs))
	for _, f := range pyexc.subs {
		subs = append(subs, f)
	}
	pyexc.mu.Unlock()
	if len(subs) == 0 {
		return false
	}
	for _, f := range subs {
		f(e)
	}
	return true
}

// installExceptionHooks puts the hooks in place once per interpreter.
func installExceptionHooks() error {
	_, err := hooksPy.Load()
	return err
}

// installHooks is the hooks module's Setup.
func installHooks(m *pygi.Object) error {
	report, err := callbacks.New(reportPython, callbacks.Name("report_to_go"))
	if err != nil {
		return err
	}
	defer report.Close()
	r, err := m.CallMethod("install", report)
	r.Close()
	if err != nil {
		return err
	}
	// What the import watches load duet's modules with.
	load, err := callbacks.New(pysrc.LoadByName, callbacks.Name("duet_load_module"))
	if err != nil {
		return err
	}
	defer load.Close()
	if err := m.SetAttr("_load", load); err != nil {
		return err
	}
	pyexc.report, err = report.Clone()
	return err
}

// The cycle collector on the UI thread. CPython runs its automatic
// collections on whatever thread happens to allocate, and with goroutines
// calling Python that is any thread: a collection that frees a GTK
// object's wrapper would finalise the widget there, behind GTK's back.
// While the loop runs, automatic collection is off and the loop collects
// instead, on the UI thread, by CPython's own rules (its thresholds and
// generations), when they say a collection is due: a GLib source reads the
// collector's counters (internal/capi/gcstate.c), and a goroutine's
// Python work wakes the loop when it makes a collection due. Python
// threads (threading's) pass through nothing of duet's, so while any is
// alive the loop looks at the counters on a timeout: from 10 ms while
// they run Python or the counters move, backing off to 1 s while they
// wait (see gcstate.c). Otherwise nothing polls: an idle app without
// Python threads does not wake up for the collector.
//
// Python code keeps its view of the collector: gc.enable, gc.disable and
// gc.isenabled are wrapped, so gc.disable() stops the loop's collections
// and gc.isenabled() says what the code asked for. A collection that still
// happens on another thread while the loop runs (gc.collect() on a Python
// thread or a goroutine, or an automatic one after gc.enable was bypassed)
// is reported, with the thread's name, through OnPythonException as a
// duet_gc.OffThreadCollection warning, once per thread and kind per run.
var gcPy = python.Module("duet_gc", "collector.py")

func callGC(name string, args ...any) error {
	m, err := gcPy.Load()
	if err != nil {
		return err
	}
	r, err := m.CallMethod(name, args...)
	r.Close()
	return err
}

func collectOnUIThread() (stop func(), err error) {
	tell, err := callbacks.New(func(on bool) { capi.GCSetWanted(on) }, callbacks.Name("duet_gc_wanted"))
	if err != nil {
		return nil, err
	}
	defer tell.Close()
	if err := callGC("enter", pyexc.report, tell); err != nil {
		return nil, err
	}
	step, err := gcPy.Loaded().Attr("step")
	if err != nil {
		return nil, err
	}
	capi.SetGCHandler(func() {
		gen := capi.GCDue()
		if gen < 0 {
			return
		}
		r, err := step.Call(gen)
		var freed int64
		if err == nil {
			freed, _ = pygi.As[int64](r)
			r.Close()
		}
		capi.GCCollected(freed) // a failed step asks for no follow-up
		if err == nil {
			gcSteps.Add(1)
		}
	})
	capi.GCLoop(true)
	return func() {
		capi.GCLoop(false)
		capi.SetGCHandler(nil)
		step.Close()
		callGC("leave")
	}, nil
}

// gcSteps counts the collections the loop ran by CPython's schedule.
var gcSteps atomic.Int64

// Collect runs one full round of both garbage collectors: Go's (twice, so
// that the cleanups the first run queued are run), the release of the
// Python references Go dropped, and Python's gc.collect(). Safe from any
// goroutine: while the loop runs, the Python part runs on the UI thread
// (and Collect waits for it), because a collection can finalise GTK
// objects. Do not call it from a goroutine the UI thread is waiting for.
func Collect() error {
	runtime.GC()
	runtime.GC()
	return lifetime.OnUI(func() error {
		if err := pygi.Drain(); err != nil {
			return err
		}
		return callGC("collect")
	})
}
