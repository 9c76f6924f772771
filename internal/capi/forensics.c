// forensics.c: what duet can say when a process dies, and the quarantine
// of freed callbacks (DUET_DEBUG=callbacks).
//
// The ring: every entry point and every call from Python or GLib into Go
// records one line (a kind, a name, a thread) in a fixed array in C
// memory, overwritten oldest first. Recording is a relaxed atomic
// increment and a bounded copy; it is off until crash reports are on.
//
// The crash report: with crash reports on, Go is asked to crash (not just
// exit) on a fatal error or a fatal signal in C code, and to copy what it
// prints (every goroutine) to the report file (debug.SetCrashOutput).
// duet's part (the ring and every Python thread's traceback, written by
// CPython's faulthandler dumper) follows Go's: for a fatal signal at the
// runtime's first SIGQUIT relay, which ends the process (see on_quit); for
// a fatal Go error in the SIGABRT the runtime ends with. An abort() from C
// code (Py_FatalError, g_error, the use-after-free diagnosis) gets duet's
// part first. The handlers are installed after Go's and chain to them.
// Everything in them is async-signal-safe: write(2) and number formatting
// by hand.
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_traceback.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "_cgo_export.h"
#include "duet_impl.h"

// ---- the ring ---------------------------------------------------------------

#define RING_N 256 // a power of two

typedef struct {
	uint64_t seq; // 1-based; 0: never written. Written last.
	int32_t tid;
	const char *kind; // a string literal
	char what[48];
} ring_entry;

static ring_entry ring[RING_N];
static uint64_t ring_pos;
int duet_ring_on;
__thread void *duet_ring_cur;
static __thread int32_t ring_tid;

void duet_ring_record(const char *kind) {
	if (!ring_tid) ring_tid = (int32_t)syscall(SYS_gettid);
	uint64_t i = __atomic_fetch_add(&ring_pos, 1, __ATOMIC_RELAXED);
	ring_entry *e = &ring[i & (RING_N - 1)];
	e->seq = 0;
	e->tid = ring_tid;
	e->kind = kind;
	e->what[0] = 0;
	__atomic_store_n(&e->seq, i + 1, __ATOMIC_RELEASE);
	duet_ring_cur = e;
}

static size_t append(char *dst, size_t at, size_t cap, const char *s, size_t n) {
	for (size_t j = 0; j < n && s[j] && at + 1 < cap; j++) dst[at++] = s[j];
	dst[at] = 0;
	return at;
}

void duet_ring_what(const char *a, const char *b, size_t blen) {
	ring_entry *e = duet_ring_cur;
	if (!e) return;
	size_t at = append(e->what, 0, sizeof e->what, a ? a : "", SIZE_MAX);
	if (b) {
		if (at) at = append(e->what, at, sizeof e->what, " ", 1);
		append(e->what, at, sizeof e->what, b, blen);
	}
}

void duet_ring_more(const char *c) {
	ring_entry *e = duet_ring_cur;
	if (!e || !c) return;
	size_t at = strnlen(e->what, sizeof e->what - 1);
	if (at) at = append(e->what, at, sizeof e->what, " ", 1);
	append(e->what, at, sizeof e->what, c, SIZE_MAX);
}

// duet_ring_read copies up to max entries, oldest first, into out; for
// tests and for Go's view of the ring (forensics.Crossings).
int duet_ring_read(duet_crossing *out, int max) {
	uint64_t end = __atomic_load_n(&ring_pos, __ATOMIC_ACQUIRE);
	uint64_t start = end > RING_N ? end - RING_N : 0;
	if (end - start > (uint64_t)max) start = end - max;
	int n = 0;
	for (uint64_t i = start; i < end; i++) {
		ring_entry *e = &ring[i & (RING_N - 1)];
		uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (seq != i + 1) continue; // being rewritten
		out[n].seq = seq;
		out[n].tid = e->tid;
		out[n].kind = e->kind;
		memcpy(out[n].what, e->what, sizeof out[n].what);
		out[n].what[sizeof out[n].what - 1] = 0;
		n++;
	}
	return n;
}

void duet_ring_enable(int on) { __atomic_store_n(&duet_ring_on, on, __ATOMIC_RELAXED); }

// ---- the crash report --------------------------------------------------------

static int report_fd = -1;
static struct sigaction prev_abrt;
static int installed;
static int reporting;

static void put(int fd, const char *s, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w <= 0) return;
		s += w;
		n -= w;
	}
}

static void puts2(const char *s) {
	size_t n = strlen(s);
	put(2, s, n);
	if (report_fd >= 0) put(report_fd, s, n);
}

static void putu2(uint64_t v) {
	char buf[24];
	int i = sizeof buf;
	do {
		buf[--i] = '0' + v % 10;
		v /= 10;
	} while (v && i > 0);
	put(2, buf + i, sizeof buf - i);
	if (report_fd >= 0) put(report_fd, buf + i, sizeof buf - i);
}

static void dump_ring(void) {
	uint64_t end = __atomic_load_n(&ring_pos, __ATOMIC_ACQUIRE);
	uint64_t start = end > RING_N ? end - RING_N : 0;
	puts2("last boundary crossings, oldest first (#, thread, kind, what):\n");
	if (end == start) puts2("  (none recorded)\n");
	pid_t pid = getpid();
	for (uint64_t i = start; i < end; i++) {
		ring_entry *e = &ring[i & (RING_N - 1)];
		if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != i + 1 || !e->kind) continue;
		puts2("  #");
		putu2(i + 1);
		puts2(" thread ");
		putu2((uint64_t)e->tid);
		puts2(e->tid == pid ? " (main)  " : "  ");
		puts2(e->kind);
		if (e->what[0]) {
			char w[sizeof e->what];
			memcpy(w, e->what, sizeof w);
			w[sizeof w - 1] = 0;
			puts2("  ");
			puts2(w);
		}
		puts2("\n");
	}
}

static struct sigaction prev_quit;

static void chain(const struct sigaction *prev, int sig, siginfo_t *info, void *ctx) {
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, info, ctx);
		return;
	}
	if (prev->sa_handler == SIG_IGN) return;
	if (prev->sa_handler != SIG_DFL) {
		prev->sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static char report_path[1024];
static char report_name[256]; // the unnamed report's name, given at the crash
static char report_alt[288];  // and the name with the pid, if that one is taken
static char report_path_alt[1100];
static int report_use_alt;
static int report_dirfd = -1;

// name_report links the unnamed report file into its directory (linkat
// creates the name and never follows a link there); the report then
// exists under its name from the first line on. 0 on success.
static int name_report(void) {
	if (report_dirfd < 0 || report_fd < 0 || !report_name[0]) return 0;
	char proc[32] = "/proc/self/fd/";
	char digits[12];
	int n = 0, v = report_fd;
	do {
		digits[n++] = '0' + v % 10;
		v /= 10;
	} while (v && n < (int)sizeof digits);
	size_t at = strlen(proc);
	while (n > 0 && at + 1 < sizeof proc) proc[at++] = digits[--n];
	proc[at] = 0;
	if (linkat(AT_FDCWD, proc, report_dirfd, report_name, AT_SYMLINK_FOLLOW) == 0) return 0;
	// Without /proc: the same by descriptor (needs CAP_DAC_READ_SEARCH).
	if (linkat(report_fd, "", report_dirfd, report_name, AT_EMPTY_PATH) == 0) return 0;
	if (errno != EEXIST || !report_alt[0]) return -1;
	// Someone made the name meanwhile: the name with the pid, once.
	if (linkat(AT_FDCWD, proc, report_dirfd, report_alt, AT_SYMLINK_FOLLOW) == 0 ||
	    linkat(report_fd, "", report_dirfd, report_alt, AT_EMPTY_PATH) == 0) {
		report_use_alt = 1;
		return 0;
	}
	return -1;
}

static void report_once(void) {
	if (__atomic_exchange_n(&reporting, 1, __ATOMIC_SEQ_CST)) return;
	int unnamed = name_report() != 0;
	puts2("\n=== duet crash report ===\n");
	dump_ring();
	if (duet_initialized) {
		puts2("Python threads (most recent call first):\n");
		_Py_DumpTracebackThreads(2, NULL, NULL);
		if (report_fd >= 0) _Py_DumpTracebackThreads(report_fd, NULL, NULL);
	}
	if (report_path[0] && !unnamed) {
		// Only to stderr: the file knows its own name.
		const char *p = report_use_alt ? report_path_alt : report_path;
		put(2, "the whole report is in ", 23);
		put(2, p, strlen(p));
		put(2, "\n", 1);
	} else if (report_path[0]) {
		put(2, "the report file could not be named ", 35);
		put(2, report_path, strlen(report_path));
		put(2, "\n", 1);
	}
	puts2("=== end of duet's part; the Go runtime prints every goroutine (before this report, or after it for a crash in native code) ===\n");
}

// Go's crash mode and a mixed process. After printing every goroutine,
// the Go runtime (GOTRACEBACK=crash) relays SIGQUIT from thread to thread
// to collect each one's registers, and waits up to 10 s for all of them.
// In a duet process that relay goes wrong two ways: a thread that blocks
// signals but holds a Go M (GLib's threads do, once they called into Go)
// never answers, and the runtime waits the whole 10 s; or the SIGQUIT lands
// on a thread Go does not know, which dies of it at once, before duet's
// part is written. So the first SIGQUIT of the relay ends the process
// here: the goroutine dump is complete by then (it precedes the relay), and
// only idle threads' registers are lost.
static struct sigaction prev_fatal[NSIG];
static int crash_seen;

static void die(void) {
	report_once();
	signal(SIGABRT, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGABRT);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGABRT);
	_exit(134);
}

static void on_abort(int sig, siginfo_t *info, void *ctx) {
	__atomic_store_n(&crash_seen, 1, __ATOMIC_SEQ_CST);
	report_once();
	chain(&prev_abrt, sig, info, ctx);
}

// SIGSEGV, SIGBUS, SIGFPE, SIGILL. Go turns those in Go code into panics a
// program may recover: only noted, the runtime decides, and a fatal one
// reaches on_quit or on_abort. One in native code is always fatal, and on a
// thread Go does not run (Python's, GLib's) Go ends the process without a
// word: duet's part is written first.
static void on_fatal(int sig, siginfo_t *info, void *ctx) {
	__atomic_store_n(&crash_seen, 1, __ATOMIC_SEQ_CST);
	if (!duet_pc_in_go(ctx)) report_once();
	chain(&prev_fatal[sig], sig, info, ctx);
}

static void on_quit(int sig, siginfo_t *info, void *ctx) {
	int self = info && info->si_code <= 0 && info->si_pid == getpid();
	if (self && __atomic_load_n(&crash_seen, __ATOMIC_SEQ_CST)) die();
	// A SIGQUIT from outside makes the runtime crash too, unless os/signal
	// took it; the relay that follows is then ours.
	if (!self) __atomic_store_n(&crash_seen, 1, __ATOMIC_SEQ_CST);
	chain(&prev_quit, sig, info, ctx);
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

// duet_crash_install makes fd (open for appending, or -1) the report file
// and puts the handlers in place once, each chained to Go's.
int duet_crash_install(int fd, int dirfd, const char *name, const char *path) {
	report_fd = fd;
	report_dirfd = dirfd;
	// Copied, so that the handler reads no Go memory; a torn read of a path
	// changed during a crash only garbles one line.
	snprintf(report_name, sizeof report_name, "%s", name && dirfd >= 0 ? name : "");
	snprintf(report_path, sizeof report_path, "%s", path ? path : "");
	snprintf(report_alt, sizeof report_alt, "%s-%d", report_name, (int)getpid());
	snprintf(report_path_alt, sizeof report_path_alt, "%s-%d", report_path, (int)getpid());
	if (!report_name[0]) report_alt[0] = 0;
	report_use_alt = 0;
	if (installed) return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = on_fatal;
	for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
		int sig = fatal_signals[i];
		if (duet_os_sigaction(sig, &sa, &prev_fatal[sig]) != 0) return -1;
	}
	sa.sa_sigaction = on_quit;
	if (duet_os_sigaction(SIGQUIT, &sa, &prev_quit) != 0) return -1;
	sa.sa_sigaction = on_abort;
	if (duet_os_sigaction(SIGABRT, &sa, &prev_abrt) != 0) return -1;
	installed = 1;
	return 0;
}

// ---- quarantine (DUET_DEBUG=callbacks) -----------------------------------------

int duet_debug_callbacks;

#define QUARANTINE_MAX 4096

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static duet_cb *quarantine[QUARANTINE_MAX];
static int q_head, q_len;

static void poison_free(duet_cb *cb) {
	// As glibc's MALLOC_PERTURB_ would: a later call through a dangling
	// PyMethodDef jumps to garbage instead of a plausible function.
	memset(cb, 0xdb, cb->size);
	free(cb);
}

// A call into a quarantined callback from Python lands here: Go says what
// it knows and aborts.
static PyObject *dead_trampoline(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
	duet_cb *cb = PyCapsule_GetPointer(self, CB_CAPSULE);
	duetCallbackDead(cb ? cb->handle : 0, NULL, NULL, 0);
	abort();
}

void duet_callback_dead(duet_cb *cb, const char *signal, const char *type, uintptr_t instance) {
	duet_callback_gone(cb->handle, signal, type, instance);
}

void duet_callback_gone(uintptr_t handle, const char *signal, const char *type, uintptr_t instance) {
	duetCallbackDead(handle, (char *)signal, (char *)type, instance);
	abort();
}

void duet_callback_retire(duet_cb *cb, int poison) {
	if (!__atomic_load_n(&duet_debug_callbacks, __ATOMIC_RELAXED)) {
		if (poison)
			poison_free(cb);
		else
			free(cb);
		return;
	}
	// Kept, with every way in leading to the diagnosis.
	cb->flags |= DUET_CB_DEAD;
	cb->def.ml_meth = (PyCFunction)(void (*)(void))dead_trampoline;
	duet_cb *evict = NULL;
	pthread_mutex_lock(&q_mu);
	if (q_len == QUARANTINE_MAX) {
		evict = quarantine[q_head];
		q_head = (q_head + 1) % QUARANTINE_MAX;
		q_len--;
	}
	quarantine[(q_head + q_len) % QUARANTINE_MAX] = cb;
	q_len++;
	pthread_mutex_unlock(&q_mu);
	if (evict) poison_free(evict);
}

void duet_debug_set(int callbacks) { __atomic_store_n(&duet_debug_callbacks, callbacks, __ATOMIC_RELAXED); }

int duet_quarantined(void) {
	pthread_mutex_lock(&q_mu);
	int n = q_len;
	pthread_mutex_unlock(&q_mu);
	return n;
}

// ---- census of the references Go holds -------------------------------------------

typedef struct {
	PyTypeObject *types[512];
	int64_t counts[512];
	int n;
	int64_t other;
} type_counts;

static void count_type(PyObject *ob, uintptr_t used_by, void *data) {
	type_counts *tc = data;
	PyTypeObject *t = Py_TYPE(ob);
	for (int i = 0; i < tc->n; i++)
		if (tc->types[i] == t) {
			tc->counts[i]++;
			return;
		}
	if (tc->n == 512) {
		tc->other++;
		return;
	}
	Py_INCREF(t); // until the dict is built
	tc->types[tc->n] = t;
	tc->counts[tc->n++] = 1;
}

// impl_census_refs: a dict {type name: count} of the live references Go
// holds (owned slots, and arguments lent to a Go callback running now).
static int impl_census_refs(duet_res *res) {
	PyGILState_STATE st = duet_enter();
	type_counts *tc = calloc(1, sizeof *tc);
	int rc;
	if (!tc) {
		PyErr_NoMemory();
		rc = duet_fail(&res->ref);
		goto out;
	}
	duet_slot_walk_all(count_type, tc);
	PyObject *d = PyDict_New();
	for (int i = 0; d && i < tc->n; i++) {
		PyObject *k = PyUnicode_FromString(tc->types[i]->tp_name);
		PyObject *v = PyLong_FromLongLong(tc->counts[i]);
		if (!k || !v || PyDict_SetItem(d, k, v) < 0) Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	if (d && tc->other) {
		PyObject *v = PyLong_FromLongLong(tc->other);
		if (!v || PyDict_SetItemString(d, "(other types)", v) < 0) Py_CLEAR(d);
		Py_XDECREF(v);
	}
	for (int i = 0; i < tc->n; i++) Py_DECREF(tc->types[i]);
	free(tc);
	rc = duet_finish(d, &res->ref, &res->ref);
out:
	duet_leave(st);
	return rc;
}
DUET_ENTRY(census_refs, (void), ())
