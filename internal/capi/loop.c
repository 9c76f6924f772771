// loop.c: GLib main-loop sources for duet's event loop. Sources are made
// here in C, never through Python's GLib.idle_add (PyGObject 3.42 leaks a
// libffi closure for each of those).
#include <glib.h>
#include <string.h>

#include "_cgo_export.h"
#include "loop.h"

// ---- the invoke source --------------------------------------------------------
//
// One persistent source on the default context carries every Invoke: posting
// sets a flag and wakes the context; dispatching clears the flag first, then
// lets Go run its queue, so a post that races with the dispatch wakes the
// loop again instead of being lost. No allocation per post.
//
// Go runs the queue in bounded batches (eventloop's dispatch says how much).
// While a batch leaves work, the source waits just below GTK's redraw
// priority, so that what a user sees and feels keeps its pace between two
// batches: sources at the default priority (input, timers), then layout and
// paint at theirs. Waiting there is bounded: a second source at the default
// priority (the restorer) puts it back at the default priority after
// BACKLOG_WAIT_US, so that whatever stays ready above the backlog's
// priority (an idle that always returns True, an asyncio task yielding with
// sleep(0), a tick slower than a frame) cannot keep Invokes from running.
// An empty queue puts it back at once. Both sources live for the process.

#define INVOKE_BACKLOG_PRIORITY (G_PRIORITY_HIGH_IDLE + 21) // GDK_PRIORITY_REDRAW + 1
#define BACKLOG_WAIT_US 4000

typedef struct {
	GSource base;
	gint pending;
	int backlog; // UI thread only: the priority is the backlog's
} invoke_source;

static invoke_source *invoker;
static GSource *restorer;

static gboolean inv_prepare(GSource *s, gint *timeout) {
	*timeout = -1;
	return g_atomic_int_get(&((invoke_source *)s)->pending);
}

static gboolean inv_check(GSource *s) { return g_atomic_int_get(&((invoke_source *)s)->pending); }

static void set_backlog(invoke_source *inv, int on) {
	if (on) g_source_set_ready_time(restorer, g_get_monotonic_time() + BACKLOG_WAIT_US);
	if (on == inv->backlog) return;
	inv->backlog = on;
	g_source_set_priority(&inv->base, on ? INVOKE_BACKLOG_PRIORITY : G_PRIORITY_DEFAULT);
	if (!on) g_source_set_ready_time(restorer, -1);
}

static gboolean inv_dispatch(GSource *s, GSourceFunc cb, gpointer data) {
	invoke_source *inv = (invoke_source *)s;
	g_atomic_int_set(&inv->pending, 0);
	int more = duetLoopDispatch();
	if (more) g_atomic_int_set(&inv->pending, 1); // the rest, next turn
	set_backlog(inv, more);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs invoke_funcs = {inv_prepare, inv_check, inv_dispatch, NULL, NULL, NULL};

// The restorer is ready only at its ready time (no prepare or check).
static gboolean restore_dispatch(GSource *s, GSourceFunc cb, gpointer data) {
	g_source_set_ready_time(s, -1);
	if (invoker->backlog) {
		invoker->backlog = 0;
		g_source_set_priority(&invoker->base, G_PRIORITY_DEFAULT);
	}
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs restore_funcs = {NULL, NULL, restore_dispatch, NULL, NULL, NULL};

void duet_loop_setup(void) {
	if (invoker) return;
	invoke_source *s = (invoke_source *)g_source_new(&invoke_funcs, sizeof(invoke_source));
	g_source_set_priority(&s->base, G_PRIORITY_DEFAULT);
	g_source_set_name(&s->base, "duet invoke");
	g_source_attach(&s->base, NULL);
	restorer = g_source_new(&restore_funcs, sizeof(GSource));
	g_source_set_priority(restorer, G_PRIORITY_DEFAULT);
	g_source_set_name(restorer, "duet invoke backlog");
	g_source_attach(restorer, NULL); // as the invoke source: for the process
	invoker = s; // keeps the reference g_source_new gave: lives for the process
}

void duet_loop_post(void) {
	if (!g_atomic_int_compare_and_exchange(&invoker->pending, 0, 1)) return; // a wakeup is already due
	g_main_context_wakeup(NULL);
}

// ---- main loops ------------------------------------------------------------------

void *duet_loop_new(void) { return g_main_loop_new(NULL, FALSE); }
void duet_loop_run(void *loop) { g_main_loop_run(loop); }
void duet_loop_quit(void *loop) { g_main_loop_quit(loop); }
void duet_loop_unref(void *loop) { g_main_loop_unref(loop); }
int duet_loop_iterate(int may_block) { return g_main_context_iteration(NULL, may_block); }
int duet_loop_is_owner(void) { return g_main_context_is_owner(g_main_context_default()); }

// The UI thread owns the default main context from start-up to exit, also
// while no loop runs. Otherwise g_main_context_invoke from another thread
// finds no owner and runs its function synchronously on that thread: gotk4's
// box finalizer does exactly that while holding its own mutex, and the
// function it queues (removing a toggle reference) takes the same mutex, a
// deadlock; and the function would touch GTK off the UI thread besides.
// Acquiring is recursive for the owner, so loops run on this thread as usual.
int duet_loop_own_default(void) { return g_main_context_acquire(g_main_context_default()); }

// ---- timers ---------------------------------------------------------------------

static gboolean timer_dispatch(gpointer data) { return duetTimerFire((uintptr_t)data); }

void *duet_timer_new(uintptr_t handle, uint64_t interval_ms) {
	// GLib counts milliseconds in 32 bits (about 49.7 days); past that, in
	// seconds (136 years), which is precise enough for such a wait.
	GSource *s;
	if (interval_ms <= G_MAXUINT) {
		s = g_timeout_source_new((guint)interval_ms);
	} else {
		uint64_t secs = (interval_ms + 999) / 1000;
		s = g_timeout_source_new_seconds(secs > G_MAXUINT ? G_MAXUINT : (guint)secs);
	}
	g_source_set_callback(s, timer_dispatch, (gpointer)handle, NULL);
	g_source_set_name(s, "duet timer");
	g_source_attach(s, NULL);
	return s; // the caller owns this reference (duet_timer_release)
}

void duet_timer_release(void *source) {
	g_source_destroy(source); // no-op when GLib already removed it
	g_source_unref(source);
}

// ---- GLib's log messages --------------------------------------------------------
//
// GLib takes one structured-log writer per process, set once. gotk4's glib
// package sets its own at start-up (to Go's slog.Default()) when it is
// linked in; otherwise duet sets this one, which writes as GLib's default
// writer does (stderr) until Go routes the messages elsewhere.
extern GLogWriterOutput _gotk4_glib2_LogWriterFunc(GLogLevelFlags, const GLogField *, gsize, gpointer)
    __attribute__((weak));

static gint log_routed;

static const char *field(const GLogField *fields, gsize n, const char *key) {
	for (gsize i = 0; i < n; i++)
		if (strcmp(fields[i].key, key) == 0 && fields[i].length < 0) return fields[i].value;
	return "";
}

static GLogWriterOutput log_writer(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data) {
	if (!g_atomic_int_get(&log_routed)) return g_log_writer_default(level, fields, n, data);
	const char *domain = field(fields, n, "GLIB_DOMAIN");
	if (g_log_writer_default_would_drop(level, domain)) return G_LOG_WRITER_HANDLED; // G_MESSAGES_DEBUG
	duetGLibLog(level, (char *)domain, (char *)field(fields, n, "MESSAGE"), (char *)field(fields, n, "CODE_FILE"),
	            (char *)field(fields, n, "CODE_LINE"), (char *)field(fields, n, "CODE_FUNC"));
	return G_LOG_WRITER_HANDLED;
}

int duet_log_gotk4(void) { return _gotk4_glib2_LogWriterFunc != NULL; }

// duet_fatal_criticals makes GLib and GTK criticals (g_return_if_fail,
// g_critical) abort the process, as G_DEBUG=fatal-criticals does.
void duet_fatal_criticals(void) {
	GLogLevelFlags old = g_log_set_always_fatal(G_LOG_FATAL_MASK);
	g_log_set_always_fatal(old | G_LOG_LEVEL_CRITICAL);
}

void duet_log_install(void) {
	static gsize once;
	if (duet_log_gotk4()) return;
	if (g_once_init_enter(&once)) {
		g_log_set_writer_func(log_writer, NULL, NULL);
		g_once_init_leave(&once, 1);
	}
}

void duet_log_route(int on) { g_atomic_int_set(&log_routed, on); }
