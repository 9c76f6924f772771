// signals.c: Python's view of signals, with Go keeping the process's signal
// handlers. Go's handlers run on an alternate stack (SA_ONSTACK), which a
// handler installed by CPython does not, so CPython must not keep any. Yet
// Python code must see what python3 gives it: default_int_handler for
// SIGINT, its own handlers registered with signal.signal and run, and
// KeyboardInterrupt raised in Python code running on the main thread.
//
// So: Go's handlers are saved before Python starts; signal.signal is
// wrapped so that after CPython records the handler (and installs its own
// at the OS level) Go's is put back, and Go is told what Python now wants
// for that signal (duetSignalKind). When such a signal arrives, Go calls
// duet_signal_interrupt, which is CPython's PyErr_SetInterruptEx (made to
// simulate a signal's arrival: the handler runs in the main thread at its
// next check, and a wakeup fd set with signal.set_wakeup_fd is written, as
// PyGObject relies on) plus a nudge that interrupts a blocking call on
// Python's main thread (time.sleep, select), as the real signal would.
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "_cgo_export.h"
#include "duet.h"

static struct sigaction go_actions[NSIG]; // saved before Python starts
static PyThreadState *main_tstate;        // Python's main thread
static pid_t main_tid;

void duet_signals_save(void) {
	for (int i = 1; i < NSIG; i++) sigaction(i, NULL, &go_actions[i]);
}

// hook(signum, kind) runs after CPython's signal.signal: kind 0 SIG_DFL,
// 1 SIG_IGN, 2 default_int_handler, 3 another Python callable.
static PyObject *hook(PyObject *self, PyObject *args) {
	int n, kind;
	if (!PyArg_ParseTuple(args, "ii", &n, &kind)) return NULL;
	if (n > 0 && n < NSIG) sigaction(n, &go_actions[n], NULL);
	duetSignalKind(n, kind);
	Py_RETURN_NONE;
}

static PyMethodDef hook_def = {"_duet_signal_hook", hook, METH_VARARGS, "Gives a signal back to Go (duet)."};

// The wrapper, and python3's initial table: SIGINT to default_int_handler,
// SIGPIPE and SIGXFSZ ignored, every other signal Go handles (which Python
// found as "not installed from Python", None) to SIG_DFL, as python3 reports
// them. Signals ignored when the process started stay ignored.
static const char wrap_src[] =
    "import signal as _signal\n"
    "_orig = _signal.signal\n"
    "def _kind(h):\n"
    "    if h is _signal.default_int_handler: return 2\n"
    "    if callable(h): return 3\n"
    "    return 1 if h == _signal.SIG_IGN else 0\n"
    "def signal(signalnum, handler):\n"
    "    old = _orig(signalnum, handler)\n"
    "    _hook(int(signalnum), _kind(handler))\n"
    "    return old\n"
    "signal.__doc__ = _orig.__doc__\n"
    "signal.__wrapped__ = _orig\n"
    "_signal.signal = signal\n"
    "for _s in _signal.valid_signals():\n"
    "    if _s in (_signal.SIGKILL, _signal.SIGSTOP) or _signal.getsignal(_s) is not None:\n"
    "        continue\n"
    "    _h = _signal.default_int_handler if _s == _signal.SIGINT else \\\n"
    "        _signal.SIG_IGN if _s in (_signal.SIGPIPE, _signal.SIGXFSZ) else _signal.SIG_DFL\n"
    "    try:\n"
    "        signal(_s, _h)\n"
    "    except (OSError, ValueError):\n"
    "        pass\n";

// duet_signals_install runs on Python's main thread, GIL held, at start-up.
int duet_signals_install(void) {
	main_tstate = PyThreadState_Get();
	main_tid = syscall(SYS_gettid);
	PyObject *g = PyDict_New();
	PyObject *f = PyCFunction_New(&hook_def, NULL);
	int rc = -1;
	if (g && f && PyDict_SetItemString(g, "_hook", f) == 0) {
		PyObject *r = PyRun_String(wrap_src, Py_file_input, g, g);
		if (r) rc = 0;
		Py_XDECREF(r);
	}
	if (rc < 0) PyErr_Print();
	Py_XDECREF(f);
	Py_XDECREF(g);
	return rc;
}

// duet_signal_interrupt: any thread, no GIL needed.
void duet_signal_interrupt(int sig) {
	PyErr_SetInterruptEx(sig);
	// CPython marks the main thread's evaluation loop for a check only when
	// the thread that received the signal may handle signals itself (it
	// decides on the receiving thread, and ours is a Go thread), so a main
	// thread spinning in Python code would not look until it next switched
	// threads. Mark it here; a spurious mark only costs a recomputation.
	_Py_atomic_store_relaxed(&PyInterpreterState_Main()->ceval.eval_breaker, 1);
	// The real signal would interrupt a blocking call on the main thread
	// (sleep, select: never restarted); a preemption request does that
	// without side effects, Go's handler ignoring it outside Go code.
	if (main_tid) syscall(SYS_tgkill, getpid(), main_tid, SIGURG);
}

// duet_main_in_python reports whether Python's main thread is inside Python
// code now (running it, or in a call made from it such as time.sleep): the
// innermost frame of its thread state. A racy read, a hint for deciding
// what a signal does when no loop runs.
int duet_main_in_python(void) {
	PyThreadState *t = main_tstate;
	return t && t->cframe && t->cframe->current_frame != NULL;
}

// duet_python_main_is_process_main: whether Python's main thread (where its
// signal handlers run) is the process's main thread, the UI thread.
int duet_python_main_is_process_main(void) { return main_tid == getpid(); }
