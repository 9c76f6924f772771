// signals.c: Python's view of signals, in a process whose signal handlers
// belong to the Go program that embeds it.
//
// The rule (pygi/signals.go states it for users): embedding Python changes
// no process-wide signal state, and Python gets only the signals Python code
// asked for. CPython must not keep an OS-level handler of its own: Go's need
// SA_ONSTACK and feed os/signal, the host's signal.Notify included. Yet
// Python code must see what python3 gives it: python3's table of
// dispositions (getsignal), its own handlers registered with signal.signal
// and run on its main thread, KeyboardInterrupt from default_int_handler.
//
// So signal.signal is wrapped: CPython records the handler in its table and
// installs its own at the OS level, and the wrapper puts back whatever was
// at the OS level before the call (duet_signal_set), then tells Go what
// Python now wants for that signal (duetSignalKind). Go subscribes to the
// signals Python handles; when one arrives, Go calls duet_signal_interrupt,
// CPython's PyErr_SetInterruptEx (made to simulate a signal's arrival: the
// handler runs on the main thread at its next check, and a wakeup fd set
// with signal.set_wakeup_fd is written, as PyGObject relies on) plus a
// nudge that interrupts a blocking call on Python's main thread (sleep,
// select), as the real signal would.
//
// faulthandler installs its handlers for the fatal signals (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT) with sigaction, in front of Go's. In
// front, it would turn a nil dereference in Go code (which Go makes a
// recoverable panic) into "Fatal Python error". So faulthandler.enable and
// disable are wrapped too: what faulthandler installs is kept aside and a
// small front handler takes its place; the front hands a fault whose
// program counter is outside Go's code (a native crash: CPython, GTK, C)
// to faulthandler first, which writes its tracebacks to its file, and
// every fault then to what was there before (Go's handler), which decides
// as it would without Python.
#define _GNU_SOURCE
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_traceback.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "_cgo_export.h"
#include "duet.h"
#include "duet_impl.h"

static PyThreadState *main_tstate; // Python's main thread
static pid_t main_tid;
static PyObject *orig_signal;    // CPython's signal.signal
static struct sigaction at_init[NSIG]; // the OS-level actions before Python started

// ---- signal.signal ------------------------------------------------------------

// set(signalnum, handler, kind, report): CPython's signal.signal, with the
// OS-level action kept as it was; kind (0 SIG_DFL, 1 SIG_IGN,
// 2 default_int_handler, 3 another callable) goes to Go when report is set.
static PyObject *signal_set(PyObject *self, PyObject *args) {
	int n, kind, report;
	PyObject *handler;
	if (!PyArg_ParseTuple(args, "iOii", &n, &handler, &kind, &report)) return NULL;
	if (duet_forked_child()) // a Python process of its own: as python3
		return PyObject_CallFunction(orig_signal, "iO", n, handler);
	struct sigaction cur;
	int have = n > 0 && n < NSIG && duet_os_sigaction(n, NULL, &cur) == 0;
	PyObject *old = PyObject_CallFunction(orig_signal, "iO", n, handler);
	if (have) duet_os_sigaction(n, &cur, NULL);
	if (!old) return NULL;
	if (report) duetSignalKind(n, kind);
	return old;
}

// ---- faulthandler -----------------------------------------------------------------

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])

static struct sigaction fault_py[NSIG];    // faulthandler's handler, while enabled
static volatile int fault_on[NSIG];        // faulthandler enabled for the signal
static struct sigaction fault_under[NSIG]; // what the front chains to
static int front_installed[NSIG];
static uintptr_t go_text_lo, go_text_hi;   // Go's code, [lo, hi)

void duet_set_go_text(uintptr_t lo, uintptr_t hi) {
	go_text_lo = lo;
	go_text_hi = hi;
}

static void call_action(const struct sigaction *a, int sig, siginfo_t *info, void *ctx) {
	if (a->sa_flags & SA_SIGINFO) {
		a->sa_sigaction(sig, info, ctx);
		return;
	}
	if (a->sa_handler == SIG_IGN) return;
	if (a->sa_handler != SIG_DFL) {
		a->sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static uintptr_t fault_pc(void *ctx) {
	ucontext_t *uc = ctx;
	if (!uc) return 0;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	return 0;
#endif
}

// duet_pc_in_go: whether the fault in ctx (a signal handler's ucontext)
// happened in Go's code; 1 when unknown, so that nothing second-guesses Go.
int duet_pc_in_go(void *ctx) {
#if defined(__x86_64__) || defined(__aarch64__)
	uintptr_t pc = fault_pc(ctx);
	return go_text_hi == 0 || (pc >= go_text_lo && pc < go_text_hi);
#else
	(void)ctx;
	return 1; // unknown: never risk Go's panics
#endif
}

// sent_by_another: sig came from another process (kill, sigqueue): not a
// fault, whatever the thread it landed on was running; the Go program's
// handler (a signal.Notify of SIGABRT, say) has it, as without Python.
static int sent_by_another(const siginfo_t *info) { return info && info->si_code <= 0 && info->si_pid != getpid(); }

static void fault_front(int sig, siginfo_t *info, void *ctx) {
	if (fault_on[sig] && !duet_pc_in_go(ctx) && !sent_by_another(info)) {
		// faulthandler writes its tracebacks, puts back what it was told
		// was there when enabled (recorded by interpose.c, not applied: the
		// front stays) and re-raises; the re-raised signal stays pending
		// while this handler runs, and Go decides first.
		struct sigaction py = fault_py[sig];
		fault_on[sig] = 0;
		call_action(&py, sig, info, ctx);
	}
	call_action(&fault_under[sig], sig, info, ctx);
}

static int same_action(const struct sigaction *a, const struct sigaction *b) {
	return a->sa_sigaction == b->sa_sigaction && a->sa_handler == b->sa_handler;
}

// take_fault_handlers: after faulthandler.enable (before[] being the
// kernel's actions then), keep faulthandler's handlers aside and put the
// front in place, chained to what was there. With interpose.c at work the
// kernel never saw faulthandler's handlers: they are what CPython asked
// for. Without it, they are what is in the kernel now.
static void take_fault_handlers(const struct sigaction *before) {
	for (size_t i = 0; i < N_FATAL; i++) {
		int sig = fatal_signals[i];
		struct sigaction want, now;
		if (duet_os_sigaction(sig, NULL, &now) != 0) continue;
		if (duet_interposing()) {
			if (!duet_python_action(sig, &want)) continue;
		} else {
			want = now;
		}
		if (same_action(&want, duet_interposing() ? &now : &before[sig])) continue;
		if (want.sa_sigaction == fault_front || (!(want.sa_flags & SA_SIGINFO) &&
		                                         (want.sa_handler == SIG_DFL || want.sa_handler == SIG_IGN)))
			continue;
		fault_py[sig] = want;
		if (now.sa_sigaction != fault_front) fault_under[sig] = duet_interposing() ? now : before[sig];
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigfillset(&sa.sa_mask);
		sa.sa_sigaction = fault_front;
		__atomic_store_n(&fault_on[sig], 1, __ATOMIC_SEQ_CST);
		if (now.sa_sigaction != fault_front) duet_os_sigaction(sig, &sa, NULL);
		front_installed[sig] = 1;
	}
}

// fault(fn, args, kwargs, what): faulthandler.enable (1), disable (0),
// with the fatal signals' handlers kept in Go's order.
static PyObject *fault_call(PyObject *self, PyObject *args) {
	PyObject *fn, *a, *kw;
	int enable;
	if (!PyArg_ParseTuple(args, "OOOi", &fn, &a, &kw, &enable)) return NULL;
	struct sigaction before[NSIG];
	for (size_t i = 0; i < N_FATAL; i++) duet_os_sigaction(fatal_signals[i], NULL, &before[fatal_signals[i]]);
	PyObject *r = PyObject_Call(fn, a, kw == Py_None ? NULL : kw);
	if (!r) return NULL;
	if (enable) {
		take_fault_handlers(before);
	} else {
		for (size_t i = 0; i < N_FATAL; i++) {
			int sig = fatal_signals[i];
			__atomic_store_n(&fault_on[sig], 0, __ATOMIC_SEQ_CST);
			if (!duet_interposing()) duet_os_sigaction(sig, &before[sig], NULL); // the front stays, a pass-through
		}
	}
	return r;
}

// faulthandler.register(signum, file, all_threads, chain): CPython's
// handler never reaches the kernel (interpose.c); the signal comes through
// Go instead, beside the program's own subscriptions, and duet writes the
// tracebacks to the file (duet_fault_dump). chain is moot: the program's
// handlers get the signal anyway.
static volatile int user_fd[NSIG];
static volatile int user_all[NSIG];

static PyObject *fault_user(PyObject *self, PyObject *args) {
	int sig, fd, all;
	if (!PyArg_ParseTuple(args, "iii", &sig, &fd, &all)) return NULL;
	if (sig <= 0 || sig >= NSIG || duet_forked_child()) Py_RETURN_NONE; // in a child: faulthandler's own
	user_all[sig] = all;
	__atomic_store_n(&user_fd[sig], fd + 1, __ATOMIC_SEQ_CST); // 0: none
	duetSignalKind(sig, fd >= 0 ? 4 : 5);
	Py_RETURN_NONE;
}

// duet_fault_dump writes Python's tracebacks for a faulthandler.register'd
// signal, as faulthandler's handler would. faulthandler's handler runs on
// the thread the signal interrupted, so the frames it reads hold still; a
// forwarding thread has no such luck (the main thread would free frames
// under it), so it dumps holding the GIL: every thread is then at a safe
// point. A thread that keeps the GIL in C code delays the dump until it
// lets go. 0 when the signal is not registered.
int duet_fault_dump(int sig) {
	if (sig <= 0 || sig >= NSIG) return 0;
	if (__atomic_load_n(&user_fd[sig], __ATOMIC_SEQ_CST) <= 0 || !main_tstate) return 0;
	PyGILState_STATE st = duet_enter();
	int fd = __atomic_load_n(&user_fd[sig], __ATOMIC_SEQ_CST) - 1;
	if (fd >= 0 && main_tstate) {
		if (user_all[sig])
			_Py_DumpTracebackThreads(fd, PyInterpreterState_Main(), NULL);
		else
			_Py_DumpTraceback(fd, main_tstate);
	}
	duet_leave(st);
	return 1;
}

static PyMethodDef user_def = {"_duet_fault_user", fault_user, METH_VARARGS, "faulthandler.register through Go (duet)."};

static PyObject *forked(PyObject *self, PyObject *unused) {
	duet_child_signals();
	Py_RETURN_NONE;
}

// ran(signum): a Python handler is running now (see _wrap).
static PyObject *ran(PyObject *self, PyObject *arg) {
	int n = (int)PyLong_AsLong(arg);
	if (n == -1 && PyErr_Occurred()) return NULL;
	if (!duet_forked_child()) duetSignalRan(n);
	Py_RETURN_NONE;
}

static PyMethodDef ran_def = {"_duet_signal_ran", ran, METH_O, "A Python signal handler runs (duet)."};

static PyMethodDef forked_def = {"_duet_forked", forked, METH_NOARGS, "A forked child's signals, as Python's (duet)."};
static PyMethodDef set_def = {"_duet_signal_set", signal_set, METH_VARARGS, "signal.signal, OS-level action kept (duet)."};
static PyMethodDef fault_def = {"_duet_fault", fault_call, METH_VARARGS, "faulthandler.enable/disable behind Go's handlers (duet)."};

// The wrappers, and what python3's start-up adds to its table: SIGINT to
// default_int_handler (the signal module put it in the table only, unless
// the process started with SIGINT ignored), SIGPIPE and SIGXFSZ ignored;
// none of that reaches Go. The rest CPython found as python3 does
// (interpose.c tells it the process's starting dispositions, not Go's
// handlers): SIG_DFL, or ignored when the process started so, or None for
// a handler of CPython's own (faulthandler enabled at start-up).
static const char wrap_src[] =
    "import signal as _signal, faulthandler as _fh\n"
    "def _kind(h):\n"
    "    if h is _signal.default_int_handler: return 2\n"
    "    if callable(h): return 3\n"
    "    return 1 if h == _signal.SIG_IGN else 0\n"
    "# Each Python handler runs wrapped, so that duet learns it ran (the UI\n"
    "# thread came back for it; for SIGINT, the KeyboardInterrupt that follows\n"
    "# is the signal's); getsignal and signal's return value give the handler\n"
    "# Python code set, not the wrapper.\n"
    "_set_by_code = {}  # signum -> (wrapper, handler)\n"
    "def _wrap(n, h):\n"
    "    if not callable(h):\n"
    "        return h\n"
    "    def handler(signum, frame):\n"
    "        _ran(signum)\n"
    "        return h(signum, frame)\n"
    "    handler.__wrapped__ = h\n"
    "    _set_by_code[n] = (handler, h)\n"
    "    return handler\n"
    "def _unwrap(n, got):\n"
    "    w, h = _set_by_code.get(n, (None, None))\n"
    "    return h if w is not None and got is w else got\n"
    "_orig = _signal.signal\n"
    "_orig_getsignal = _signal.getsignal\n"
    "def signal(signalnum, handler):\n"
    "    try:\n"
    "        n = int(signalnum)  # as signal.py converts it\n"
    "    except (ValueError, TypeError):\n"
    "        return _orig(signalnum, handler)  # its error, as python3 raises it\n"
    "    prev = _set_by_code.get(n)\n"
    "    old = _set(n, _wrap(n, handler), _kind(handler), 1)\n"
    "    return prev[1] if prev is not None and old is prev[0] else old\n"
    "def getsignal(signalnum):\n"
    "    got = _orig_getsignal(signalnum)  # its errors, as python3 raises them\n"
    "    return _unwrap(int(signalnum), got)\n"
    "for _w, _o in ((signal, _orig), (getsignal, _orig_getsignal)):\n"
    "    _w.__doc__, _w.__wrapped__, _w.__module__, _w.__qualname__ = _o.__doc__, _o, _o.__module__, _o.__qualname__\n"
    "_signal.signal, _signal.getsignal = signal, getsignal\n"
    "for _s, _h in ((_signal.SIGINT, _signal.default_int_handler), (_signal.SIGPIPE, _signal.SIG_IGN),\n"
    "               (_signal.SIGXFSZ, _signal.SIG_IGN)):\n"
    "    _g = _orig_getsignal(_s)\n"
    "    if _g is _signal.default_int_handler or _g == _signal.SIG_DFL or (_s != _signal.SIGINT and _g == _signal.SIG_IGN):\n"
    "        _set(int(_s), _wrap(int(_s), _h), _kind(_h), 0)\n"
    "def _wrap_fault(f, enable):\n"
    "    def w(*args, **kwargs):\n"
    "        return _fault(f, args, kwargs, enable)\n"
    "    w.__name__, w.__doc__, w.__wrapped__, w.__module__, w.__qualname__ = f.__name__, f.__doc__, f, f.__module__, f.__qualname__\n"
    "    return w\n"
    "_fh.enable = _wrap_fault(_fh.enable, 1)\n"
    "_fh.disable = _wrap_fault(_fh.disable, 0)\n"
    "import sys as _sys\n"
    "_fh_register, _fh_unregister = _fh.register, _fh.unregister\n"
    "def register(signum, file=None, all_threads=True, chain=False):\n"
    "    f = _sys.stderr if file is None else file\n"
    "    r = _fh_register(signum, f, all_threads, chain)\n"
    "    _user(int(signum), f if isinstance(f, int) else f.fileno(), 1 if all_threads else 0)\n"
    "    return r\n"
    "def unregister(signum):\n"
    "    r = _fh_unregister(signum)\n"
    "    _user(int(signum), -1, 0)\n"
    "    return r\n"
    "for _w, _o in ((register, _fh_register), (unregister, _fh_unregister)):\n"
    "    _w.__doc__, _w.__wrapped__, _w.__module__, _w.__qualname__ = _o.__doc__, _o, _o.__module__, _o.__qualname__\n"
    "_fh.register, _fh.unregister = register, unregister\n"
    // A child forked with Python code to run (os.fork, multiprocessing's
    // fork start method, subprocess's preexec_fn) is a Python process.
    "import os as _os\n"
    "_os.register_at_fork(after_in_child=_forked)\n";

void duet_signals_save(void) {
	for (int i = 1; i < NSIG; i++) duet_os_sigaction(i, NULL, &at_init[i]);
}

// duet_signals_install runs on Python's main thread, GIL held, at start-up.
int duet_signals_install(void) {
	main_tstate = PyThreadState_Get();
	main_tid = syscall(SYS_gettid);
	// CPython's own start-up may have enabled faulthandler
	// (PYTHONFAULTHANDLER, -X faulthandler): behind Go's handlers with it.
	take_fault_handlers(at_init);
	PyObject *g = PyDict_New();
	PyObject *set = PyCFunction_New(&set_def, NULL);
	PyObject *fault = PyCFunction_New(&fault_def, NULL);
	PyObject *user = PyCFunction_New(&user_def, NULL);
	PyObject *fk = PyCFunction_New(&forked_def, NULL);
	PyObject *rn = PyCFunction_New(&ran_def, NULL);
	PyObject *sig = PyImport_ImportModule("signal");
	int rc = -1;
	if (sig) orig_signal = PyObject_GetAttrString(sig, "signal"); // kept for the interpreter's life
	if (g && set && fault && user && fk && rn && orig_signal && PyDict_SetItemString(g, "_set", set) == 0 &&
	    PyDict_SetItemString(g, "_fault", fault) == 0 && PyDict_SetItemString(g, "_user", user) == 0 &&
	    PyDict_SetItemString(g, "_forked", fk) == 0 && PyDict_SetItemString(g, "_ran", rn) == 0) {
		PyObject *r = PyRun_String(wrap_src, Py_file_input, g, g);
		if (r) rc = 0;
		Py_XDECREF(r);
	}
	if (rc < 0) PyErr_Print();
	Py_XDECREF(sig);
	Py_XDECREF(set);
	Py_XDECREF(fault);
	Py_XDECREF(user);
	Py_XDECREF(fk);
	Py_XDECREF(rn);
	Py_XDECREF(g);
	return rc;
}

// duet_signals_finalized runs after Py_FinalizeEx: faulthandler is gone,
// and so is the front's reason to be (Go's handlers go back in place).
void duet_signals_finalized(void) {
	for (int i = 1; i < NSIG; i++) __atomic_store_n(&user_fd[i], 0, __ATOMIC_SEQ_CST);
	for (size_t i = 0; i < N_FATAL; i++) {
		int sig = fatal_signals[i];
		__atomic_store_n(&fault_on[sig], 0, __ATOMIC_SEQ_CST);
		struct sigaction now;
		if (front_installed[sig] && duet_os_sigaction(sig, NULL, &now) == 0 && now.sa_sigaction == fault_front)
			duet_os_sigaction(sig, &fault_under[sig], NULL);
		front_installed[sig] = 0;
	}
	orig_signal = NULL; // gone with the interpreter: only forgotten
	main_tstate = NULL;
}

// duet_signal_interrupt: any thread. It takes the GIL although
// PyErr_SetInterruptEx is documented not to need it: it reads the signal's
// Python handler, which signal.signal on the main thread may be replacing
// and freeing at that moment (a kernel signal has the same race in theory;
// a forwarding thread has it in practice).
void duet_signal_interrupt(int sig) {
	PyGILState_STATE st = duet_enter();
	PyErr_SetInterruptEx(sig);
	duet_leave(st);
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

// duet_python_main_is_process_main: whether Python's main thread (where its
// signal handlers run) is the process's main thread, the UI thread.
int duet_python_main_is_process_main(void) { return main_tid == getpid(); }
