// runtime.c: the interpreter's life (start, finalisation), attaching threads
// to it, and which thread is which.
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "duet_impl.h"

static pthread_mutex_t ts_mu = PTHREAD_MUTEX_INITIALIZER; // see "threads that end"
static int ts_closed;
static volatile pid_t finalizing_tid; // the thread running Py_FinalizeEx, while it does

static int glib_inflight;

int duet_glib_enter(void) {
	__atomic_add_fetch(&glib_inflight, 1, __ATOMIC_SEQ_CST);
	if (duet_python_usable()) return 1;
	__atomic_sub_fetch(&glib_inflight, 1, __ATOMIC_SEQ_CST);
	return 0;
}

void duet_glib_exit(void) { __atomic_sub_fetch(&glib_inflight, 1, __ATOMIC_SEQ_CST); }

int duet_python_usable(void) {
	if (!__atomic_load_n(&duet_initialized, __ATOMIC_ACQUIRE)) return 0;
	pid_t f = __atomic_load_n(&finalizing_tid, __ATOMIC_ACQUIRE);
	return f == 0 || f == (pid_t)syscall(SYS_gettid);
}

__thread int duet_depth;
__thread int duet_entry_exc;
__thread int duet_pinned;
__thread int duet_lazy;
__thread PyGILState_STATE duet_lazy_st;
__thread int duet_lazy_base;
int duet_initialized;

static int set_error(char **errmsg, PyStatus status) {
	const char *m = status.err_msg ? status.err_msg : "unknown error";
	const char *f = status.func ? status.func : "Py_InitializeFromConfig";
	size_t n = strlen(m) + strlen(f) + 4;
	*errmsg = malloc(n);
	if (*errmsg) snprintf(*errmsg, n, "%s: %s", f, m);
	return -1;
}

// As python3 names itself: the python program that goes with the libpython
// we run, under the prefix CPython's path calculation settled on (in 3.11
// that calculation happens during initialisation, so this runs just after).
static const char name_python[] =
    "import os, sys\n"
    "exe = os.path.join(sys.base_prefix, 'bin', 'python%d.%d' % sys.version_info[:2])\n"
    "if os.access(exe, os.X_OK):\n"
    "    sys.executable = sys._base_executable = exe\n";

#ifdef DUET_STATIC_PYTHON
// Linked from the archive, only the members something calls come in:
// these are C API that python3 and libpython.so have and nothing in duet
// calls (an extension module may).
void *const duet_whole_api[] = {(void *)Py_Main, (void *)Py_BytesMain, (void *)Py_RunMain, (void *)Py_FrozenMain};
#endif

// duet_init starts the interpreter on the calling thread. argv becomes
// sys.argv and sys.orig_argv (the app's command line, not parsed as
// Python's options). venv, when not NULL, is a virtual environment whose
// python the interpreter then behaves as (its pyvenv.cfg, site-packages and
// sys.prefix); otherwise sys.executable names the system python3 of the
// libpython we run, so that code which starts sys.executable
// (multiprocessing's spawn, subprocess, venv) starts Python, not the app.
int duet_init(int argc, char **argv, const char *venv, char **errmsg) {
	if (Py_IsInitialized()) {
		*errmsg = strdup("Python was already initialised by someone else in this process");
		return -1;
	}
	duet_interpose_prepare();
	duet_signals_save();
	PyConfig config;
	// Py_InitializeEx(0), but through PyConfig so that a failure comes back
	// as a status instead of Py_FatalError aborting the process. Signal
	// handlers stay off: Go owns signals and needs SA_ONSTACK on each one.
	PyConfig_InitPythonConfig(&config);
	config.install_signal_handlers = 0;
	config.parse_argv = 0;
	// safe_path stays python3's default: with no script, module or -c to
	// run, CPython puts no directory of ours first on sys.path anyway.
	PyStatus status = PyConfig_SetBytesArgv(&config, argc, argv);
	if (!PyStatus_Exception(status)) {
		if (venv) status = PyConfig_SetBytesString(&config, &config.executable, venv);
	}
	if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(status)) return set_error(errmsg, status); // nothing holds the GIL after a failure
	duet_pinned = 1;
	(void)PyGILState_Ensure(); // pins the main thread state like any other thread's

	// threading must learn its main thread on the thread that initialised.
	PyObject *th = PyImport_ImportModule("threading");
	if (!th) {
		PyErr_Print();
	}
	Py_XDECREF(th);
	duet_signals_install();
	if (!venv) {
		PyObject *g = PyDict_New();
		PyObject *r = g ? PyRun_String(name_python, Py_file_input, g, g) : NULL;
		if (!r) PyErr_Print();
		Py_XDECREF(r);
		Py_XDECREF(g);
	}
	duet_initialized = 1;
	// Release the GIL at once: a thread that keeps it after init deadlocks
	// every other thread.
	(void)PyEval_SaveThread();
	return 0;
}

// duet_finalize returns Py_FinalizeEx's result: -1 when flushing buffered
// data (sys.stdout, sys.stderr) failed, as python3 then exits 120.
int duet_finalize(void) {
	pthread_mutex_lock(&ts_mu); // no thread-exit deletion from here on
	ts_closed = 1;
	pthread_mutex_unlock(&ts_mu);
	__atomic_store_n(&finalizing_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	// GLib's threads that entered before: let them finish (bounded: one
	// stuck in Go must not stop the shutdown).
	for (int i = 0; i < 2000 && __atomic_load_n(&glib_inflight, __ATOMIC_SEQ_CST) > 0; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	(void)PyGILState_Ensure();
	duet_depth++; // Go code run by atexit functions and __del__ is attached
	// CPython's finalisation sets SIG_DFL at the OS level for every signal
	// whose Python handler was a callable (default_int_handler on SIGINT
	// among them), over Go's handlers: put back what was there.
	static struct sigaction before[NSIG];
	for (int i = 1; i < NSIG; i++) duet_os_sigaction(i, NULL, &before[i]);
	int rc = Py_FinalizeEx();
	__atomic_store_n(&duet_initialized, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&finalizing_tid, 0, __ATOMIC_RELEASE);
	for (int i = 1; i < NSIG; i++) {
		struct sigaction now;
		if (duet_os_sigaction(i, NULL, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL &&
		    ((before[i].sa_flags & SA_SIGINFO) || before[i].sa_handler != SIG_DFL))
			duet_os_sigaction(i, &before[i], NULL);
	}
	duet_signals_finalized();
	duet_values_finalized();
	duet_ops_finalized();
	duet_depth = 0;
	// The interpreter is gone; every thread state with it.
	return rc;
}

int duet_attached(void) { return duet_initialized && duet_depth > 0; }
int duet_in_callback(void) { return duet_current_cb != 0; }

// ---- threads that end ---------------------------------------------------------
//
// A pinned thread state lives as long as its thread; when the thread ends,
// the key's destructor frees the per-thread buffers and hands the state
// duet made for it to a live thread (thread_gone, below: it may not run
// Python code itself), which deletes it at its next drain. Finalisation
// closes the door first (ts_closed, under ts_mu), after which the
// interpreter deletes every state itself.

static pthread_key_t ts_key;
static pthread_once_t ts_once = PTHREAD_ONCE_INIT;
static int64_t ts_freed;

// thread_gone runs as the thread ends, after Go has left it: no Python
// code may run here (clearing a state runs __del__ of its thread-locals,
// which may call Go). The state goes on a list that a live thread reaps,
// holding the GIL (duet_reap_threads, from the release queue's drain).
typedef struct dead_ts {
	PyThreadState *ts;
	struct dead_ts *next;
} dead_ts;
static dead_ts *dead; // pushed by ending threads, taken whole by the reaper
int duet_reap_pending;

// The lifetime gate's word and flags (duet.h); Go owns what they mean.
int64_t duet_gate_state;
uint32_t duet_gate_dirty, duet_gate_ui_dirty, duet_gate_ui_running;

static void thread_gone(void *p) {
	duet_free_thread_buffers();
	dead_ts *d = malloc(sizeof *d);
	if (!d || !p) {
		free(d);
		return; // a state lost, never a crash
	}
	d->ts = p;
	d->next = __atomic_load_n(&dead, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(&dead, &d->next, d, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
	}
	__atomic_store_n(&duet_reap_pending, 1, __ATOMIC_RELEASE);
}

// duet_reap_threads deletes the states of threads that ended, on this
// (live) thread. Their thread-locals' __del__ run here.
void duet_reap_threads(void) {
	if (!__atomic_exchange_n(&duet_reap_pending, 0, __ATOMIC_ACQ_REL)) return;
	dead_ts *d = __atomic_exchange_n(&dead, NULL, __ATOMIC_ACQ_REL);
	if (!d) return;
	PyGILState_STATE st = duet_enter();
	pthread_mutex_lock(&ts_mu);
	int closed = ts_closed;
	pthread_mutex_unlock(&ts_mu);
	while (d) {
		dead_ts *next = d->next;
		if (!closed) {
			PyThreadState_Clear(d->ts); // runs Python code: here, on a thread that can
			PyThreadState_Delete(d->ts);
			__atomic_add_fetch(&ts_freed, 1, __ATOMIC_RELAXED);
		}
		free(d);
		d = next;
	}
	duet_leave(st);
}

static void ts_key_make(void) { pthread_key_create(&ts_key, thread_gone); }

// duet_pin_thread: this thread's state is duet's (it had none before):
// the thread's end hands it to the reaper.
void duet_pin_thread(void) {
	pthread_once(&ts_once, ts_key_make);
	pthread_setspecific(ts_key, PyThreadState_Get());
}

static int64_t leaked;

void duet_leaked_exception(void) {
	__atomic_add_fetch(&leaked, 1, __ATOMIC_RELAXED);
	PyErr_WriteUnraisable(NULL);
}

int64_t duet_leaked_exceptions(void) { return __atomic_load_n(&leaked, __ATOMIC_RELAXED); }

int64_t duet_threads_freed(void) { return __atomic_load_n(&ts_freed, __ATOMIC_RELAXED); }

// duet_thread_states counts the interpreter's thread states. GIL taken.
int64_t duet_thread_states(void) {
	PyGILState_STATE st = duet_enter();
	int64_t n = 0;
	for (PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Main()); t; t = PyThreadState_Next(t)) n++;
	duet_leave(st);
	return n;
}

int duet_attach(void) { return (int)duet_enter(); }
void duet_detach(int state) { duet_leave((PyGILState_STATE)state); }

// Detaching hands the depth to the caller (restored by duet_restore_thread):
// while detached this thread holds nothing, but what it detached from is
// still open (duet_detached counts it, for duet_nested).
static __thread int duet_detached;

// duet_lazy_pause goes around what runs inside a lazy handler that has
// not attached yet but is not its use of Python: WithoutGIL's function
// (its calls take the GIL each and let go of it, as WithoutGIL says), and
// the Go work the loop dispatches, the collector and GObject notices;
// duet_lazy_resume puts the handler's state back.
int duet_lazy_pause(void) {
	int was = duet_lazy;
	if (was == 1) duet_lazy = 0;
	return was;
}
void duet_lazy_resume(int was) {
	if (was == 1 && duet_lazy == 0) duet_lazy = 1;
}
int duet_without_gil_begin(void) { return duet_attached() ? -1 : duet_lazy_pause(); }

void *duet_save_thread(int *depth) {
	*depth = duet_depth;
	duet_detached += duet_depth;
	duet_depth = 0;
	return PyEval_SaveThread();
}

void duet_restore_thread(void *ts, int depth) {
	PyEval_RestoreThread((PyThreadState *)ts);
	duet_detached -= depth;
	duet_depth = depth;
}

// duet_nested: this thread is inside something Python-side that is still
// open, which Finalize waits for or which runs inside Finalize itself: an
// attachment, a Go callback (bare or not), or an entry it detached from
// (WithoutGIL inside WithGIL or a callback).
int duet_nested(void) { return duet_attached() || duet_current_cb != 0 || duet_detached > 0; }

// The thread that runs Finalize's last step (its drains, the AtFinalize
// hooks, Py_FinalizeEx): Go code nested there is the only Go code that may
// still run once Finalize stops waiting for entries (lifetime.EnterNested).
static pid_t finalizer_tid;
void duet_mark_finalizer(int on) { __atomic_store_n(&finalizer_tid, on ? (pid_t)syscall(SYS_gettid) : 0, __ATOMIC_SEQ_CST); }
int duet_on_finalizer(void) {
	pid_t f = __atomic_load_n(&finalizer_tid, __ATOMIC_SEQ_CST);
	return f != 0 && f == (pid_t)syscall(SYS_gettid);
}

// ---- which thread is which ------------------------------------------------------

// The UI thread (the one running the GLib loop) is marked by the event loop.
// While the loop runs, references are released there only: dropping the
// last reference to a GTK object's wrapper finalises the widget, and GTK
// must only be touched from its own thread.
__thread int duet_on_ui;
volatile int duet_ui_wants;

void duet_mark_ui_thread(int on) { duet_on_ui = on; }
int duet_on_ui_thread(void) { return duet_on_ui; }

// duet_defer_to_ui waits while the UI thread wants the GIL (see duet_impl.h):
// short sleeps, since the UI thread gets it within a switch interval.
void duet_defer_to_ui(void) {
	struct timespec ts = {0, 20000};
	for (int i = 0; i < 2500 && __atomic_load_n(&duet_ui_wants, __ATOMIC_SEQ_CST); i++) nanosleep(&ts, NULL); // at most ~50 ms
}

// The main thread is the process's first thread (its thread id is the
// process id on Linux). Cached per thread: a thread's id never changes.
static __thread int is_main = -1;

int duet_is_main_thread(void) {
	if (is_main < 0) is_main = syscall(SYS_gettid) == getpid();
	return is_main;
}

// impl_check_signals runs the Python handlers of signals that have arrived
// (on Python's main thread; elsewhere CPython does nothing).
static int impl_check_signals(duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = PyErr_CheckSignals() < 0 ? duet_fail(&res->ref) : DUET_OK;
	duet_leave(st);
	return rc;
}
DUET_ENTRY(check_signals, (void), ())
