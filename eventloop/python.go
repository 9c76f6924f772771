package eventloop

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// PyGObject prints and drops exceptions raised inside GTK signal handlers,
// GLib sources and Python threads (through sys.excepthook and friends).
// duet routes them to Go instead: every function registered with
// OnPythonException receives them; with none registered they are printed as
// Python would.

var pyexc struct {
	mu     sync.Mutex
	subs   map[int]func(*pygi.Error)
	next   int
	once   sync.Once
	err    error
	report *pygi.Object // report_to_go, also used by the collector's watch
	hooks  *pygi.Object // the hook module's globals (route for RouteLogs)
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
import sys, threading, traceback
_orig = (sys.excepthook, threading.excepthook, sys.unraisablehook)
_logs = {"emit": None}

def _thread():
    return threading.current_thread().name

def install(report):
    def excepthook(t, v, tb):
        if v is None or not report(v):
            _orig[0](t, v, tb)
    def thread_hook(args):
        if args.exc_value is None or not report(args.exc_value):
            _orig[1](args)
    def unraisable_hook(u):
        emit = _logs["emit"]
        if emit is not None:
            text = "".join(traceback.format_exception(u.exc_type, u.exc_value, u.exc_traceback)) if u.exc_type else ""
            what = u.err_msg or "Exception ignored in"
            if u.object is not None:
                what += ": " + repr(u.object)
            tb = u.exc_traceback
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            f, n = (tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else ("", 0)
            emit(40, "py.unraisable", what + "\n" + text.rstrip(), f, n, _thread())
            if u.exc_value is not None:
                report(u.exc_value)
            return
        if u.exc_value is None or not report(u.exc_value):
            _orig[2](u)
    sys.excepthook = excepthook
    threading.excepthook = thread_hook
    sys.unraisablehook = unraisable_hook

# Python's output channels, routed to Go while emit is set (RouteLogs).
import warnings, logging
_orig_showwarning = warnings.showwarning
_orig_last_resort = logging.lastResort

def _showwarning(message, category, filename, lineno, file=None, line=None):
    emit = _logs["emit"]
    if emit is None or file is not None:
        return _orig_showwarning(message, category, filename, lineno, file, line)
    emit(30, "py.warnings", "%s: %s" % (category.__name__, message), filename, lineno, _thread())

class GoHandler(logging.Handler):
    """Hands records to Go's log/slog (duet's eventloop.RouteLogs)."""
    def emit(self, record):
        emit = _logs["emit"]
        if emit is None:
            return _orig_last_resort.handle(record) if _orig_last_resort else None
        try:
            msg = record.getMessage()
            if record.exc_info:
                msg += "\n" + logging.Formatter().formatException(record.exc_info)
            emit(record.levelno, record.name, msg, record.pathname, record.lineno, record.threadName or _thread())
        except Exception:
            self.handleError(record)

warnings.showwarning = _showwarning

def route(emit):
    _logs["emit"] = emit
    # Records that reach no handler of the app's own configuration go to
    # logging's last resort (python3 prints them on stderr): that is where
    # they go to Go instead. An app that configures logging keeps it.
    logging.lastResort = GoHandler(logging.WARNING) if emit is not None else _orig_last_resort
`

// reportPython is the Go side of the hooks; false lets Python print.
func reportPython(exc *pygi.Object) bool {
	e, err := pygi.ExceptionError(exc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "eventloop: cannot describe a Python exception:", err)
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
		report, err := callbacks.New(reportPython, callbacks.Name("report_to_go"))
		if err != nil {
			pyexc.err = err
			return
		}
		defer report.Close()
		r, err := install.Call(report)
		r.Close()
		if err != nil {
			pyexc.err = err
			return
		}
		if pyexc.report, err = report.Clone(); err != nil {
			pyexc.err = err
			return
		}
		pyexc.hooks, pyexc.err = g.Clone()
	})
	return pyexc.err
}

// The cycle collector on the UI thread. CPython runs its automatic
// collections on whatever thread happens to allocate, and with goroutines
// calling Python that is any thread: a collection that frees a GTK
// object's wrapper would finalise the widget there, behind GTK's back.
// While the loop runs, automatic collection is off and the loop collects
// instead, on the UI thread, by CPython's own rules (its thresholds and
// generations), when they say a collection is due: a GLib source reads the
// collector's counters (internal/capi/gcstate.c), and Python work done on
// other threads wakes the loop when it makes a collection due. Nothing
// polls: an idle app does not wake up for the collector.
//
// Python code keeps its view of the collector: gc.enable, gc.disable and
// gc.isenabled are wrapped, so gc.disable() stops the loop's collections
// and gc.isenabled() says what the code asked for. A collection that still
// happens on another thread while the loop runs (gc.collect() on a Python
// thread or a goroutine, or an automatic one after gc.enable was bypassed)
// is reported, with the thread's name, through OnPythonException as a
// duet_gc.OffThreadCollection warning, once per thread and kind per run.
const gcSource = `
__name__ = "duet_gc"
import gc, sys, threading

class OffThreadCollection(RuntimeWarning):
    """Python's cycle collector ran on a thread other than the UI thread
    while the loop ran: GTK objects freed by it are finalised off GTK's
    thread."""

_real_enable, _real_disable, _real_isenabled = gc.enable, gc.disable, gc.isenabled
_state = {"active": False, "wanted": True, "ui": None, "seen": set(), "report": None, "tell": None}

def _off_ui(what):
    t = threading.current_thread()
    key = (threading.get_ident(), what)
    if key in _state["seen"]:
        return
    _state["seen"].add(key)
    exc = OffThreadCollection(
        "%s on thread %r (not the UI thread) while the duet loop runs: GTK objects it frees are "
        "finalised off GTK's thread; run collections on the loop (eventloop.Collect, eventloop.Invoke)"
        % (what, t.name))
    report = _state["report"]
    if report is None or not report(exc):
        print("duet: " + str(exc), file=sys.stderr)

def enable():
    _state["wanted"] = True
    if not _state["active"]:
        _real_enable()
        return
    _state["tell"](True)
    if threading.get_ident() != _state["ui"]:
        _off_ui("gc.enable()")

def disable():
    _state["wanted"] = False
    if not _state["active"]:
        _real_disable()
        return
    _state["tell"](False)

def isenabled():
    return _state["wanted"] if _state["active"] else _real_isenabled()

enable.__doc__, disable.__doc__, isenabled.__doc__ = _real_enable.__doc__, _real_disable.__doc__, _real_isenabled.__doc__

def _watch(phase, info):
    if phase == "start" and _state["active"] and threading.get_ident() != _state["ui"]:
        _off_ui("a garbage collection (generation %d)" % info.get("generation", -1))

gc.enable, gc.disable, gc.isenabled = enable, disable, isenabled
gc.callbacks.append(_watch)

def enter(report, tell):
    _state["wanted"] = _real_isenabled()
    _state["ui"] = threading.get_ident()
    _state["seen"] = set()
    _state["report"] = report
    _state["tell"] = tell
    tell(_state["wanted"])
    _real_disable()
    _state["active"] = True
    return _state["wanted"]

def leave():
    _state["active"] = False
    if _state["wanted"]:
        _real_enable()

def step(gen):
    gc.collect(gen)

def collect():
    return gc.collect()
`

var uiGC struct {
	once sync.Once
	mod  *pygi.Object // the globals of gcSource
	err  error
}

func gcModule() (*pygi.Object, error) {
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
		if err := pygi.Exec("import sys\nsys.modules['duet_gc'] = type(sys)('duet_gc')\n"+
			"sys.modules['duet_gc'].OffThreadCollection = OffThreadCollection\n", g); err != nil {
			uiGC.err = err
			return
		}
		uiGC.mod = g
	})
	return uiGC.mod, uiGC.err
}

func callGC(name string, args ...any) error {
	g, err := gcModule()
	if err != nil {
		return err
	}
	f, err := g.Item(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := f.Call(args...)
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
	g, _ := gcModule()
	step, err := g.Item("step")
	if err != nil {
		return nil, err
	}
	capi.SetGCHandler(func() {
		gen := capi.GCDue()
		if gen < 0 {
			return
		}
		if r, err := step.Call(gen); err == nil {
			r.Close()
		}
		gcSteps.Add(1)
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
