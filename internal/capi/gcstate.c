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
#include <internal/pycore_runtime.h>
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
	// collection off (CPython collects nothing by itself then). A negative
	// one, which CPython takes for "at every allocation", the loop takes
	// for off as well: it would be due on every turn, a spin.
	if (g[0].threshold <= 0) return -1;
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
// their work makes a collection due: while any is alive, the loop looks at
// the counters on a timeout of its own (a look), chosen when the last one
// ended:
//   - THREAD_POLL_MIN_MS when Python threads started or ended (a
//     goroutine's entry that started one wakes the loop for it), when the
//     loop has just collected, or when another thread runs Python (the
//     GIL is held by another thread, or changed hands, since the last
//     look): a thread making garbage is collected every few tens of ms, as
//     its count reaches the threshold (an idle loop left it all: two
//     million objects in four seconds);
//   - when the young count grew, half the time it would take to reach the
//     threshold at that pace, within THREAD_POLL_MIN_MS and
//     THREAD_POLL_MAX_MS (a thread that keeps a record now and then);
//   - otherwise, and while a collection is in progress or Python code has
//     the collector off, twice as long as the last, up to
//     THREAD_POLL_MAX_MS (so that turning it on again from a thread is
//     seen).
// Woken sooner by something else, the loop keeps the running look: its
// length is of time, not of turns of the loop. An app whose threads sit
// waiting wakes once a second; a thread that begins to work after sitting
// is seen within the look in force, a second at most. Threads a C library
// starts and attaches with PyGILState are not counted.
//
// A collection on the UI thread while a Python thread allocates can hide
// that thread's garbage from the count: CPython zeroes the young count as
// a collection begins and lowers it for every object it frees, so objects
// the thread makes meanwhile (a finaliser lets it run) sit in the young
// generation with the count in single digits, and nothing is ever due
// (python3 collects on the allocating thread, which then allocates
// nothing). So a collection that freed something while Python threads
// live (or lived as it began: they may have ended during it) is
// followed, FOLLOW_UP_MS later, by a young one, and so on until one frees
// nothing, four in a row at most (duet_gc_collected).
#define THREAD_POLL_MIN_MS 10
#define THREAD_POLL_MAX_MS 1000
#define FOLLOW_UP_MS 10

static PyInterpreterState *interp;
static gint poll_ms;             // the running look's length, or 0 (none)
static gint64 poll_end;          // when it ends (monotonic µs)
static int last_young;           // the young count when it began
static unsigned long last_switch; // the GIL's hand-overs then
static long seen_threads;        // the Python threads alive then (read racily by duet_gc_poke)
static gint64 follow_up;         // when a young collection is wanted (monotonic µs), or 0

// threads_changed says whether Python threads started or ended since the
// loop last looked.
static int threads_changed(void) {
	return active && interp && interp->threads.count != __atomic_load_n(&seen_threads, __ATOMIC_RELAXED);
}

// others_run says whether a thread other than this one ran Python since the
// last look: the GIL changed hands, or another thread holds it now. Racy
// reads of CPython's GIL state; a wrong answer only changes a look's length.
static int others_run(void) {
	struct _gil_runtime_state *gil = &_PyRuntime.ceval.gil;
	unsigned long sw = gil->switch_number;
	int moved = sw != last_switch;
	last_switch = sw;
	if (moved) return 1;
	if (!_Py_atomic_load_relaxed(&gil->locked)) return 0;
	// Compared with this thread's state, never dereferenced: the thread
	// it belongs to may be gone.
	PyThreadState *holder = (PyThreadState *)_Py_atomic_load_relaxed(&gil->last_holder);
	return holder != PyGILState_GetThisThreadState();
}

// next_look is the length of the look that begins now.
static gint next_look(int threads_moved, int busy, int young, int threshold) {
	int grew = young - last_young;
	if (grew < 0) grew = young; // a collection in between reset the count
	if (!poll_ms || threads_moved) return THREAD_POLL_MIN_MS;
	if (!wanted || threshold <= 0 || gcs->collecting) return MIN(poll_ms * 2, THREAD_POLL_MAX_MS);
	if (busy) return THREAD_POLL_MIN_MS;
	if (grew <= 0) return MIN(poll_ms * 2, THREAD_POLL_MAX_MS);
	gint64 left = threshold - young;
	if (left <= 0) return THREAD_POLL_MIN_MS;
	gint64 ms = (gint64)poll_ms * left / grew / 2;
	return (gint)CLAMP(ms, THREAD_POLL_MIN_MS, THREAD_POLL_MAX_MS);
}

// threads_poll returns the poll timeout the collector source asks for.
static gint threads_poll(gint64 now) {
	long threads = interp ? interp->threads.count : 0;
	int moved = threads != seen_threads;
	__atomic_store_n(&seen_threads, threads, __ATOMIC_RELAXED);
	if (!active || !gcs || threads <= 0) {
		poll_ms = 0;
		return -1;
	}
	if (poll_ms && now < poll_end && !moved) return (gint)((poll_end - now + 999) / 1000);
	int young = gcs->generations[0].count; // racy, as every read here
	poll_ms = next_look(moved, others_run(), young, gcs->generations[0].threshold);
	poll_end = now + (gint64)poll_ms * 1000;
	last_young = young;
	return poll_ms;
}

// follow_up_due says whether the young collection that follows one is due.
static int follow_up_due(gint64 now) {
	return follow_up && now >= follow_up && active && wanted && gcs && gcs->generations[0].threshold > 0 &&
	       !gcs->collecting;
}

static int following;  // the collection the Go handler was last told of is a follow-up
static int follow_ups; // follow-ups in a row

// due_ui is duet_gc_due with the follow-up; *is_follow_up says which.
static int due_ui(int *is_follow_up) {
	int gen = duet_gc_due();
	*is_follow_up = 0;
	if (gen < 0 && follow_up_due(g_get_monotonic_time())) {
		gen = 0;
		*is_follow_up = 1;
	}
	return gen;
}

static int due_now(void) {
	int f;
	return due_ui(&f);
}

static long threads_at_start; // Python threads alive as that collection began

// duet_gc_due_ui names the collection the loop's Go handler runs now (see
// duet_gc_collected). UI thread. Only the handler calls it: the sources'
// prepare and check, which also run in nested loops inside a collection,
// ask due_now, which remembers nothing.
int duet_gc_due_ui(void) {
	threads_at_start = interp ? interp->threads.count : 0;
	return due_ui(&following);
}

// duet_gc_collected is told, on the UI thread, how many objects the
// collection the loop just ran (the one duet_gc_due_ui last named) freed.
// Follow-ups stop after MAX_FOLLOW_UPS in a row (garbage whose finaliser
// makes more would otherwise keep the loop collecting every 10 ms): a
// thread that keeps making garbage makes a collection due by CPython's
// rule again. A collection while Python threads live begins a short look.
#define MAX_FOLLOW_UPS 4
void duet_gc_collected(int64_t freed) {
	follow_up = 0;
	follow_ups = following ? follow_ups + 1 : 0;
	following = 0;
	long threads = interp ? interp->threads.count : 0;
	gint64 now = g_get_monotonic_time();
	if (freed > 0 && (threads > 0 || threads_at_start > 0) && follow_ups < MAX_FOLLOW_UPS)
		follow_up = now + FOLLOW_UP_MS * 1000;
	if (threads > 0 && gcs) {
		poll_ms = THREAD_POLL_MIN_MS;
		poll_end = now + THREAD_POLL_MIN_MS * 1000;
		last_young = gcs->generations[0].count;
	}
}

static gboolean gc_prepare(GSource *s, gint *timeout) {
	*timeout = -1;
	g_atomic_int_set(&posted, 0);
	if (due_now() >= 0) return TRUE;
	gint64 now = g_get_monotonic_time();
	gint t = threads_poll(now);
	if (follow_up && (!wanted || !gcs || gcs->generations[0].threshold <= 0)) follow_up = 0;
	// Not while a collection is in progress (a gc callback or finaliser
	// running a nested loop): the follow-up, past its time but not due,
	// would make every turn a poll without sleep, the UI thread spinning;
	// the turn after the collection finds it due.
	if (follow_up && !gcs->collecting) {
		gint f = (gint)((follow_up - now + 999) / 1000);
		if (f < 0) f = 0;
		t = t < 0 ? f : MIN(t, f);
	}
	*timeout = t;
	return FALSE;
}

static gboolean gc_check(GSource *s) { return due_now() >= 0; }

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
	int lazy = duet_lazy_pause(); // the loop's collection is no lazy handler's use of Python
	duetGCDispatch();
	duet_lazy_resume(lazy);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs gc_funcs = {gc_prepare, gc_check, gc_dispatch, NULL, NULL, NULL};
static GSource *gc_source;

// aged_left says how long until a due collection has waited GC_WAIT_US
// (<= 0: it has), or -1 when none is due.
static gint64 aged_left(void) {
	if (due_now() < 0) {
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
	poll_ms = 0;
	follow_up = 0;
	active = on;
}

void duet_gc_set_wanted(int on) { wanted = on; }
