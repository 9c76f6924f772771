// gcstate.c: when Python's cycle collector is due, read without running
// Python. While the event loop runs, automatic collection is off (it would
// run on whatever thread allocates, finalising GTK objects there) and the
// loop collects on the UI thread instead, when CPython's own thresholds say
// so. Asking Python (gc.get_count()) on every loop iteration would take the
// GIL each time; these counters are plain ints in the interpreter state, so
// they are read here directly, racily: a stale read only moves a collection
// by one loop iteration. That needs CPython's internal headers, for exactly
// the CPython duet is built against (the layout is checked at build time by
// the compiler, against the headers of the libpython it links).
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>
#include <glib.h>

#include "_cgo_export.h"
#include "duet.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "gcstate.c reads CPython 3.11's collector state; check the layout for this version"
#endif

static int active;          // the loop collects (set on the UI thread)
static int wanted = 1;      // what Python code asked for (gc.enable/disable)
static gint posted;         // a wakeup for the collector is pending
static struct _gc_runtime_state *gcs;

// duet_gc_due returns the oldest generation the collector would collect now
// by CPython's rules (collect_generations in gcmodule.c), or -1.
int duet_gc_due(void) {
	if (!active || !wanted || !gcs) return -1;
	struct gc_generation *g = gcs->generations;
	// gc.set_threshold(0): Python's documented way to turn automatic
	// collection off (CPython collects nothing by itself then).
	if (g[0].threshold == 0) return -1;
	// A collection in progress (a finaliser or gc callback of one running a
	// nested loop, or another thread's): gc.collect() would return 0 and
	// reset nothing.
	if (gcs->collecting) return -1;
	if (g[0].count <= g[0].threshold) return -1;
	// The oldest generation past its threshold, as collect_generations
	// picks it; a full collection also waits until the objects that
	// survived to the oldest generation since the last one are a quarter
	// of the long-lived ones (without that guard, a large heap got full
	// collections, each a pause of the UI thread, far more often than
	// under python3).
	if (g[2].count > g[2].threshold && gcs->long_lived_pending >= gcs->long_lived_total / 4) return 2;
	if (g[1].count > g[1].threshold) return 1;
	return 0;
}

static int threads_changed(void);

// duet_gc_poke, on every exit from a duet entry on any thread: when Python
// work done there made a collection due, wake the loop once so that it
// collects (on the UI thread) instead of waiting for some other event; and
// when Python threads started or ended there, so that the loop looks at
// their work from now on (see threads_poll).
void duet_gc_poke(void) {
	if ((duet_gc_due() >= 0 || threads_changed()) && g_atomic_int_compare_and_exchange(&posted, 0, 1))
		g_main_context_wakeup(NULL);
}

// Python threads (threading's, started by the thread module) run Python
// without passing through a duet entry, so nothing pokes the loop when
// their work makes a collection due: while any is alive, the loop looks
// at the counters on a timeout, THREAD_POLL_MIN_MS after the young count
// moved (or threads started or ended: a goroutine's entry that started one
// wakes the loop), twice as long each time it did not, up to
// THREAD_POLL_MAX_MS. A thread making garbage is collected after about
// 10 ms of it (an idle loop left it all: two million objects in four
// seconds); an app whose threads sit waiting wakes once in two seconds. A
// thread that sat waiting and then makes garbage is looked at within the
// timeout in force then, two seconds at most. Threads a C library starts
// and attaches with PyGILState are not counted.
#define THREAD_POLL_MIN_MS 10
#define THREAD_POLL_MAX_MS 2000

static PyInterpreterState *interp;
static gint thread_poll_ms; // the last timeout set, or 0
static int last_young;      // the young generation's count then
static long seen_threads;   // the Python threads alive then (read racily by duet_gc_poke)

// threads_changed says whether Python threads started or ended since the
// loop last looked: a thread that begins its work while the loop sleeps on
// a long timeout would otherwise wait for it.
static int threads_changed(void) {
	return active && interp && interp->threads.count != __atomic_load_n(&seen_threads, __ATOMIC_RELAXED);
}

static gint threads_poll(void) {
	long threads = interp ? interp->threads.count : 0;
	int started = threads != seen_threads;
	__atomic_store_n(&seen_threads, threads, __ATOMIC_RELAXED);
	if (!active || !wanted || !gcs || gcs->generations[0].threshold == 0 || threads <= 0) {
		thread_poll_ms = 0;
		return -1;
	}
	int young = gcs->generations[0].count; // racy, as every read here
	if (!thread_poll_ms || started || young != last_young)
		thread_poll_ms = THREAD_POLL_MIN_MS;
	else
		thread_poll_ms = MIN(thread_poll_ms * 2, THREAD_POLL_MAX_MS);
	last_young = young;
	return thread_poll_ms;
}

static gboolean gc_prepare(GSource *s, gint *timeout) {
	*timeout = -1;
	g_atomic_int_set(&posted, 0);
	if (duet_gc_due() >= 0) return TRUE;
	*timeout = threads_poll();
	return FALSE;
}

static gboolean gc_check(GSource *s) { return duet_gc_due() >= 0; }

// A due collection waits below the default priority, as a courtesy to
// input, timers and Invokes, but not for ever: CPython collects at the
// allocation that makes one due, whatever else is busy, and a loop kept
// busy at the default priority (a timer slower than its interval, a
// stream of input) would otherwise never reach an idle one, and Python's
// cyclic garbage would grow without bound. So a second source, at the
// default priority, is ready once a collection has been due for
// GC_WAIT_US. UI thread only: both prepare and dispatch run there.
#define GC_WAIT_US 4000

static gint64 due_since; // when the aged source first saw a collection due, or 0

static gboolean gc_dispatch(GSource *s, GSourceFunc cb, gpointer data) {
	due_since = 0;
	duetGCDispatch();
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs gc_funcs = {gc_prepare, gc_check, gc_dispatch, NULL, NULL, NULL};
static GSource *gc_source;

// aged_left says how long until a due collection has waited GC_WAIT_US
// (<= 0: it has), or -1 when none is due.
static gint64 aged_left(void) {
	if (duet_gc_due() < 0) {
		due_since = 0;
		return -1;
	}
	gint64 now = g_get_monotonic_time();
	if (!due_since) due_since = now;
	gint64 left = due_since + GC_WAIT_US - now;
	return left > 0 ? left : 0;
}

static gboolean aged_prepare(GSource *s, gint *timeout) {
	gint64 left = aged_left();
	*timeout = left > 0 ? (gint)((left + 999) / 1000) : -1;
	return left == 0;
}

static gboolean aged_check(GSource *s) { return aged_left() == 0; }

static GSourceFuncs aged_funcs = {aged_prepare, aged_check, gc_dispatch, NULL, NULL, NULL};
static GSource *aged_source;

// duet_gc_loop(1) is called on the UI thread when the loop starts (with
// Python initialised), duet_gc_loop(0) when it stops. The sources stay
// attached for the process; they are ready only while active and due.
void duet_gc_loop(int on) {
	if (!gcs) {
		interp = PyInterpreterState_Main();
		gcs = &interp->gc;
	}
	if (!gc_source) {
		gc_source = g_source_new(&gc_funcs, sizeof(GSource));
		// Below the default priority: input, timers and Invoke first.
		g_source_set_priority(gc_source, G_PRIORITY_DEFAULT_IDLE);
		g_source_set_name(gc_source, "duet cycle collector");
		g_source_attach(gc_source, NULL); // our reference keeps it for the process
		aged_source = g_source_new(&aged_funcs, sizeof(GSource));
		g_source_set_priority(aged_source, G_PRIORITY_DEFAULT);
		g_source_set_name(aged_source, "duet cycle collector (overdue)");
		g_source_attach(aged_source, NULL);
	}
	due_since = 0;
	thread_poll_ms = 0;
	active = on;
}

void duet_gc_set_wanted(int on) { wanted = on; }
