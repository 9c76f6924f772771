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
	if (g[0].count <= g[0].threshold) return -1;
	if (g[1].count > g[1].threshold) return g[2].count > g[2].threshold ? 2 : 1;
	return 0;
}

// duet_gc_poke, on every exit from a duet entry on any thread: when Python
// work done there made a collection due, wake the loop once so that it
// collects (on the UI thread) instead of waiting for some other event.
void duet_gc_poke(void) {
	if (duet_gc_due() >= 0 && g_atomic_int_compare_and_exchange(&posted, 0, 1)) g_main_context_wakeup(NULL);
}

static gboolean gc_prepare(GSource *s, gint *timeout) {
	*timeout = -1;
	g_atomic_int_set(&posted, 0);
	return duet_gc_due() >= 0;
}

static gboolean gc_check(GSource *s) { return duet_gc_due() >= 0; }

static gboolean gc_dispatch(GSource *s, GSourceFunc cb, gpointer data) {
	duetGCDispatch();
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs gc_funcs = {gc_prepare, gc_check, gc_dispatch, NULL, NULL, NULL};
static GSource *gc_source;

// duet_gc_loop(1) is called on the UI thread when the loop starts (with
// Python initialised), duet_gc_loop(0) when it stops. The source stays
// attached for the process; it is ready only while active and due.
void duet_gc_loop(int on) {
	if (!gcs) gcs = &PyInterpreterState_Main()->gc;
	if (!gc_source) {
		gc_source = g_source_new(&gc_funcs, sizeof(GSource));
		// Below the default priority: input, timers and Invoke first.
		g_source_set_priority(gc_source, G_PRIORITY_DEFAULT_IDLE);
		g_source_set_name(gc_source, "duet cycle collector");
		g_source_attach(gc_source, NULL); // our reference keeps it for the process
	}
	active = on;
}

void duet_gc_set_wanted(int on) { wanted = on; }
