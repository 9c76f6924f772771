// loop.c: GLib main-loop sources for duet's event loop. Sources are made
// here in C, never through Python's GLib.idle_add (PyGObject 3.42 leaks a
// libffi closure for each of those).
#define _GNU_SOURCE // sched_getaffinity, CPU_COUNT
#include <glib.h>
#include <sched.h>
#include <string.h>

#include "_cgo_export.h"
#include "duet.h"
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
// priority (the restorer) runs the next batch itself after BACKLOG_WAIT_US
// and puts the source back at the default priority, so that whatever stays
// ready above the backlog's priority (an idle that always returns True, an
// asyncio task yielding with sleep(0), a tick slower than a frame) cannot
// keep Invokes from running. An empty queue puts it back at once. Both
// sources live for the process.
//
// The restorer's batch comes last in its iteration: after what is ready at
// the default priority (input, a timer), which a slow paint kept waiting
// too. Each time it is armed, the restorer goes to the end of the default
// priority's sources (GLib appends a source whose priority is set; another
// order would only move the batch within the iteration). Putting the
// source back and letting it run in the next iteration (as before) cost
// the batch two more runs of an always-due timer (the restorer's
// iteration, then the source's own, where it came after the timer):
// Invokes had 8 ms a turn beside 18 ms of a 6 ms timer, and fell behind
// for good. Running the batch ahead of the others (just above the default
// priority) gave even shares but doubled their wait behind a slow paint.
//
// When the restorer had to act, the sources above kept the thread for the
// whole wait and longer (a timer always due): its batch is told how long
// they held it (eventloop then gives the batch about as long, within a
// bound), so that the two share the thread instead of Invokes getting a
// batch per several of the others' turns (eventloop's dispatch also lets
// the batch run on by as long as it waits for a CPU, on a loaded machine).

#define INVOKE_BACKLOG_PRIORITY (G_PRIORITY_HIGH_IDLE + 21) // GDK_PRIORITY_REDRAW + 1
#define BACKLOG_WAIT_US 4000

typedef struct {
	GSource base;
	gint pending;
	int backlog; // UI thread only: the priority is the backlog's
	// UI thread only: when the last batch that left work ended, and
	// whether the restorer put the source back since.
	gint64 batch_end;
	int restored;
} invoke_source;

static invoke_source *invoker;
static GSource *restorer;

// The source may recurse, but only where duet says so: a nested main loop
// run by what a dispatch runs gets no Invokes (as GLib blocks a source in
// its own dispatch), except inside an async settle (duet_loop_allow_nested),
// where the task it resumes runs as it would in the asyncio source's
// dispatch, in which a nested loop does get Invokes (a modal wait after an
// await must still receive the Invokes that end it). UI thread only.
static int inv_depth;     // invoke dispatches on the stack
static int inv_nested_ok; // what runs now may run a loop that dispatches Invokes

static int inv_blocked(void) { return inv_depth > 0 && !inv_nested_ok; }

int duet_loop_allow_nested(int on) {
	// Elsewhere (a settle run on its goroutine once the loop has
	// stopped) there is no dispatch to say anything about.
	if (!duet_on_ui_thread()) return 0;
	int was = inv_nested_ok;
	inv_nested_ok = on;
	// The dispatch under way cleared the flag when it began, and what it
	// has not run yet (the rest of its batch, what was queued before it
	// began) is flagged again only when it ends: a nested loop run from
	// here saw no work, and an Invoke queued meanwhile flagged none either
	// (only the first Invoke into an empty queue does). A modal wait that
	// an Invoke ends then waited for as long as its own timeout (15 of 20
	// with a busy timer and a flood). Flagged here, at the cost of one
	// dispatch that may find nothing.
	if (on && inv_depth > 0) g_atomic_int_set(&invoker->pending, 1);
	return was;
}

static gboolean inv_prepare(GSource *s, gint *timeout) {
	*timeout = -1;
	return !inv_blocked() && g_atomic_int_get(&((invoke_source *)s)->pending);
}

static gboolean inv_check(GSource *s) { return !inv_blocked() && g_atomic_int_get(&((invoke_source *)s)->pending); }

static void set_backlog(invoke_source *inv, int on) {
	// No backlog, no hold to tell the next batch of: a restorer that fired
	// where Invokes could not run (a nested loop) left the flag, and the
	// next batch, however much later, was told of a hold of that long.
	if (!on) inv->restored = 0;
	if (on) {
		g_source_set_priority(restorer, G_PRIORITY_DEFAULT + 1); // to the end of
		g_source_set_priority(restorer, G_PRIORITY_DEFAULT);     // the default's sources
		g_source_set_ready_time(restorer, g_get_monotonic_time() + BACKLOG_WAIT_US);
	}
	if (on == inv->backlog) return;
	inv->backlog = on;
	g_source_set_priority(&inv->base, on ? INVOKE_BACKLOG_PRIORITY : G_PRIORITY_DEFAULT);
	if (!on) g_source_set_ready_time(restorer, -1);
}

static gboolean inv_dispatch(GSource *s, GSourceFunc cb, gpointer data) {
	invoke_source *inv = (invoke_source *)s;
	if (inv_blocked()) return G_SOURCE_CONTINUE; // prepare and check said no
	g_atomic_int_set(&inv->pending, 0);
	// Each level decides afresh: what this dispatch runs may not nest
	// Invokes unless it says so (a settle does).
	int nested_ok = inv_nested_ok;
	inv_nested_ok = 0;
	inv_depth++;
	gint64 held = 0;
	if (inv->restored) held = g_get_monotonic_time() - inv->batch_end;
	inv->restored = 0;
	// Go work the loop runs (in a nested loop, say, inside a lazy signal
	// handler) is not that handler's use of Python (see duet_lazy).
	int lazy = duet_lazy_pause();
	int more = duetLoopDispatch((long long)held);
	duet_lazy_resume(lazy);
	if (more) inv->batch_end = g_get_monotonic_time();
	inv_depth--;
	inv_nested_ok = nested_ok;
	if (more) g_atomic_int_set(&inv->pending, 1); // the rest, next turn
	set_backlog(inv, more);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs invoke_funcs = {inv_prepare, inv_check, inv_dispatch, NULL, NULL, NULL};

// The restorer is ready only at its ready time (no prepare or check).
static gboolean restore_dispatch(GSource *s, GSourceFunc cb, gpointer data) {
	g_source_set_ready_time(s, -1);
	if (!invoker->backlog) return G_SOURCE_CONTINUE;
	invoker->backlog = 0;
	invoker->restored = 1;
	g_source_set_priority(&invoker->base, G_PRIORITY_DEFAULT);
	// Inside a dispatch that may not nest Invokes (a nested loop run by
	// one) the source stays put at the default priority, as its own
	// prepare says.
	if (!inv_blocked() && g_atomic_int_get(&invoker->pending)) inv_dispatch(&invoker->base, NULL, NULL);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs restore_funcs = {NULL, NULL, restore_dispatch, NULL, NULL, NULL};

// ---- the spin before poll ----------------------------------------------------------
//
// An await of a Go async func is mostly wake-ups: the UI thread goes to sleep
// in poll right after starting the goroutine, and the goroutine's completion
// (an Invoke) has to write the context's eventfd and wake it again. When an
// async call was started moments ago, the UI thread instead spins for a short,
// bounded window before sleeping, watching the invoke source's flag; a post
// that finds it spinning writes nothing, and the loop dispatches at once.
//
// Bounded three ways, so that what is idle stays asleep and a slow async func
// costs little: only a start arms the window (an idle app never spins), the
// window ends SPIN_US after the latest start however many iterations fall in
// it, and a window that ends with nothing posted makes the next 2^k starts
// (k the failures in a row, up to SPIN_BACKOFF_MAX) arm nothing. Never on one
// CPU: the spinner would hold the CPU the goroutine needs.
//
// The handshake with duet_loop_post is Dekker's: the spinner clears spinning,
// then reads pending; the poster sets pending, then reads spinning (all
// sequentially consistent), so at least one of them sees the other and no
// post is left without a wake-up.
#define SPIN_US 60
#define SPIN_BACKOFF_MAX 8

static GPollFunc base_poll;
static gint spinning;         // the UI thread spins in duet_poll
static gint64 spin_until;     // the armed window's end (monotonic µs), 0 for none; set and read on the UI thread
static guint spin_skip;       // UI thread only: starts left that arm nothing
static guint spin_failures;   // UI thread only: windows in a row that ended with nothing
static gint spin_stats[3];    // windows that found a post, windows that ended empty, posts without a wake-up

// A spinner yields its CPU between two looks: when the thread it waits for
// (or anything else) is runnable on that CPU, it runs, instead of the spin
// keeping it off (on a busy machine a spin would otherwise be the very
// thing that delays what it waits for). With nothing else runnable the
// yield returns at once.
#define spin_pause() sched_yield()

// More than one CPU this process may run on (its affinity, which GLib's
// count of processors ignores): spinning can pay. Cached; computing it
// twice is harmless.
static int multi_cpu(void) {
	static gint cpus;
	gint n = g_atomic_int_get(&cpus);
	if (!n) {
		cpu_set_t set;
		n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (gint)g_get_num_processors();
		g_atomic_int_set(&cpus, n > 0 ? n : 1);
	}
	return n > 1;
}

int duet_multi_cpu(void) { return multi_cpu(); }

void duet_loop_expect(void) {
	if (!multi_cpu()) return;
	if (spin_skip) {
		spin_skip--;
		return;
	}
	__atomic_store_n(&spin_until, g_get_monotonic_time() + SPIN_US, __ATOMIC_RELAXED);
}

static gint duet_poll(GPollFD *fds, guint nfds, gint timeout) {
	// Only the thread iterating the default context (the UI thread, its
	// owner) polls through here.
	gint64 until = __atomic_load_n(&spin_until, __ATOMIC_RELAXED);
	if (timeout == 0 || !until) return base_poll(fds, nfds, timeout);
	gint64 now = g_get_monotonic_time();
	if (now >= until) {
		__atomic_store_n(&spin_until, 0, __ATOMIC_RELAXED);
		return base_poll(fds, nfds, timeout);
	}
	gint64 began = now;
	int found = 0;
	g_atomic_int_set(&spinning, 1);
	while (now < until) {
		if (g_atomic_int_get(&invoker->pending)) {
			found = 1;
			break;
		}
		spin_pause();
		now = g_get_monotonic_time();
	}
	g_atomic_int_set(&spinning, 0);
	if (!found && g_atomic_int_get(&invoker->pending)) found = 1; // posted as the spin ended: no wake-up was written
	if (found) {
		spin_failures = 0;
		g_atomic_int_inc(&spin_stats[0]);
		// The rest of the window stays armed for the iterations the
		// completion makes (the await's next start re-arms it anyway).
		return base_poll(fds, nfds, 0);
	}
	__atomic_store_n(&spin_until, 0, __ATOMIC_RELAXED);
	g_atomic_int_inc(&spin_stats[1]);
	if (spin_failures < SPIN_BACKOFF_MAX) spin_failures++;
	spin_skip = (1u << spin_failures) - 1;
	if (timeout > 0) {
		gint spent = (gint)((now - began + 999) / 1000);
		timeout = timeout > spent ? timeout - spent : 0;
	}
	return base_poll(fds, nfds, timeout);
}

void duet_loop_spin_stats(int *found, int *empty, int *unwoken) {
	*found = g_atomic_int_get(&spin_stats[0]);
	*empty = g_atomic_int_get(&spin_stats[1]);
	*unwoken = g_atomic_int_get(&spin_stats[2]);
}

void duet_loop_setup(void) {
	// Once, also when the first Invoke (from any goroutine) races with the
	// loop's start: two setups would leave a second invoke source, and
	// the second would wrap duet_poll in itself (a poll that never polls).
	static gsize once;
	if (!g_once_init_enter(&once)) return;
	invoke_source *s = (invoke_source *)g_source_new(&invoke_funcs, sizeof(invoke_source));
	g_source_set_priority(&s->base, G_PRIORITY_DEFAULT);
	g_source_set_name(&s->base, "duet invoke");
	g_source_set_can_recurse(&s->base, TRUE); // where it may, inv_blocked says
	g_source_attach(&s->base, NULL);
	restorer = g_source_new(&restore_funcs, sizeof(GSource));
	g_source_set_priority(restorer, G_PRIORITY_DEFAULT);
	// It runs batches, and a nested loop inside one (a modal wait after
	// an await) must still bound the backlog's wait: GLib would block a
	// source in its own dispatch.
	g_source_set_can_recurse(restorer, TRUE);
	g_source_set_name(restorer, "duet invoke backlog");
	g_source_attach(restorer, NULL); // as the invoke source: for the process
	invoker = s; // keeps the reference g_source_new gave: lives for the process
	g_once_init_leave(&once, 1);
}

// duet_loop_wrap_poll puts the spin around the default context's poll while
// duet's loop runs (on), and gives the context back the poll it had when
// the loop ends (off), unless something else replaced duet's meanwhile:
// the context's poll function is the process's, and a program without
// duet would never see it changed. Wrapped, not replaced: whatever poll the
// context had still polls. The UI thread (the context's owner).
void duet_loop_wrap_poll(int on) {
	GMainContext *ctx = g_main_context_default();
	GPollFunc cur = g_main_context_get_poll_func(ctx);
	if (on) {
		// Only GLib's own: a program's poll may have saved duet's as the
		// one it calls next (while an earlier run of the loop had it in),
		// and wrapping it would make the two call each other for ever. A
		// program with a poll of its own does without the spin.
		if (cur != NULL && cur != g_poll) return;
		base_poll = g_poll;
		g_main_context_set_poll_func(ctx, duet_poll);
		return;
	}
	__atomic_store_n(&spin_until, 0, __ATOMIC_RELAXED);
	if (cur == duet_poll) g_main_context_set_poll_func(ctx, base_poll);
}

int duet_loop_poll_wrapped(void) {
	return g_main_context_get_poll_func(g_main_context_default()) == duet_poll && base_poll != duet_poll;
}

void duet_loop_post(void) {
	if (!g_atomic_int_compare_and_exchange(&invoker->pending, 0, 1)) return; // a wakeup is already due
	if (g_atomic_int_get(&spinning)) {
		g_atomic_int_inc(&spin_stats[2]); // the spinner sees the flag (the handshake above)
		return;
	}
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

static gboolean timer_dispatch(gpointer data) {
	int lazy = duet_lazy_pause(); // not a lazy handler's use (see inv_dispatch)
	gboolean again = duetTimerFire((uintptr_t)data);
	duet_lazy_resume(lazy);
	return again;
}

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

// ---- parked starters ------------------------------------------------------------
//
// Goroutines that wait to run the next Go async func (package callbacks):
// first spinning here, in C, for PARK_SPIN_US, then asleep in Go. Waking a
// spinner is one compare-and-swap, nothing of Go's scheduler: a goroutine
// started or readied by the UI thread goes to the UI thread's P, where
// another P may only take it after backing off (runtime.runqgrab's
// usleep(3), some 50 µs with Linux's default timer slack), and an await
// loop's next call comes well within the spin. Asleep, a starter is an
// ordinary blocked goroutine, holding no P (a goroutine asleep in C would
// keep its P from the rest of the program until sysmon retakes it), and
// its waker readies it from Go. Each finished call buys one spin, no more,
// and an idle app has nobody spinning. Never with one CPU.
#define PARK_SPIN_US 60

enum { PARK_RUNNING, PARK_SPINNING, PARK_SLEEPING, PARK_WOKEN };

static gint park_stats[2]; // wakes a spinner took, wakes of a starter asleep

void *duet_parker_new(void) { return g_new0(gint, 1); }
void duet_parker_free(void *p) { g_free(p); }

void duet_park_arm(void *p) { g_atomic_int_set((gint *)p, PARK_SPINNING); }

// One starter spins at a time (park_spinner), and a spin that ended with
// nobody taking it makes the next 2^k spins (k such spins in a row, up to
// PARK_BACKOFF_MAX) go straight to sleep: many slow awaits in flight
// finish far apart, and their spins would only burn CPU.
#define PARK_BACKOFF_MAX 8
static gint park_spinner, park_skip, park_failures;

int duet_park_spin(void *v) {
	gint *state = v;
	int spun = 0;
	if (multi_cpu() && g_atomic_int_compare_and_exchange(&park_spinner, 0, 1)) {
		gint skip = g_atomic_int_get(&park_skip);
		if (skip > 0) {
			g_atomic_int_set(&park_skip, skip - 1);
		} else {
			spun = 1;
			gint64 until = g_get_monotonic_time() + PARK_SPIN_US;
			do {
				if (g_atomic_int_get(state) == PARK_WOKEN) {
					g_atomic_int_set(&park_failures, 0);
					g_atomic_int_set(&park_spinner, 0);
					goto woken;
				}
				spin_pause();
			} while (g_get_monotonic_time() < until);
		}
		g_atomic_int_set(&park_spinner, 0);
	}
	if (g_atomic_int_compare_and_exchange(state, PARK_SPINNING, PARK_SLEEPING)) {
		if (spun) {
			gint k = g_atomic_int_get(&park_failures);
			if (k < PARK_BACKOFF_MAX) g_atomic_int_set(&park_failures, ++k);
			g_atomic_int_set(&park_skip, (1 << k) - 1);
		}
		return 0;
	}
woken: // the waker set WOKEN: it touches the parker no more
	g_atomic_int_set(state, PARK_RUNNING);
	g_atomic_int_inc(&park_stats[0]);
	return 1;
}

int duet_park_wake(void *p) {
	if (g_atomic_int_compare_and_exchange((gint *)p, PARK_SPINNING, PARK_WOKEN)) return 1;
	g_atomic_int_inc(&park_stats[1]);
	return 0; // asleep: the waker wakes it in Go
}

void duet_park_stats(int *spun, int *slept) {
	*spun = g_atomic_int_get(&park_stats[0]);
	*slept = g_atomic_int_get(&park_stats[1]);
}
