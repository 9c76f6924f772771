// duet_impl.h: what the C files of duet's raw layer share among themselves
// (never seen by Go). The ownership rules are in duet.h; this header adds
// the attach discipline every entry point follows.
#ifndef DUET_IMPL_H
#define DUET_IMPL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "duet.h"

struct duet_slot {
	PyObject *ob;      // owned or borrowed (see duet.h); NULL while free
	uint64_t gen;      // bumped on every release
	duet_slot *next;   // free list link
	uintptr_t used_by; // the Go callback that last used this reference while it ran (0: none)
};

// duet_current_cb is the handle of the Go callback running on this thread
// (innermost), or 0. Operations mark the references they use with it, which
// is how duet learns which Go-held references a callback's closure uses
// (callbacks.Cycles).
extern __thread uintptr_t duet_current_cb;

static inline void duet_mark_use(duet_ref r) {
	if (duet_current_cb && r.s && r.s->gen == r.gen) r.s->used_by = duet_current_cb;
}

static const duet_ref duet_no_ref = {NULL, 0};

// ---- attaching ------------------------------------------------------------
//
// duet_depth counts, per OS thread, how many duet scopes hold the GIL on it:
// entry points, Do scopes and Go callbacks that Python is running. It is
// duet's own answer to "does this thread hold the GIL", because
// PyGILState_Check answers 1 on every thread as soon as a sub-interpreter
// exists (CPython 3.11), and releasing a GIL one does not hold is fatal.
// duet_save_thread zeroes it while detached and duet_restore_thread puts
// it back.
extern __thread int duet_depth;
// A thread keeps the Python thread state it gets on its first attach for as
// long as it lives: PyGILState_Ensure would otherwise create and destroy one
// on every call (about 8 us each, and it breaks extensions that cache thread
// states). Pinning is one extra PyGILState_Ensure that is never released;
// when the thread ends (a goroutine that exits while locked to it ends it),
// a thread-exit destructor deletes a state duet made (runtime.c).
extern __thread int duet_pinned;
void duet_pin_thread(void); // once per thread whose state duet made, GIL held
// duet_lazy: a signal handler that takes only GObjects runs without the
// GIL until it first uses Python (gobject.c's closure_marshal_bare), then
// holds it to its end, as it would have held it all along: 1 while such a
// handler runs on this thread and has not attached, 2 once its first entry
// attached (duet_lazy_st is the hold, released when the handler returns).
// Zero everywhere else, and around what is not the handler's use of Python
// (duet_lazy_pause).
extern __thread int duet_lazy;
extern __thread PyGILState_STATE duet_lazy_st;
// duet_lazy_base: the thread state's gilstate_counter when the lazy handler
// began (-1: the thread had none). The hold is taken only by an entry
// whose own PyGILState_Ensure is the only level above it: one made inside
// code that holds a level of its own (a Python handler PyGObject runs
// from inside the lazy handler, which may let go of the GIL around a call
// and take it back) must end with that code.
extern __thread int duet_lazy_base;
// duet_reap_threads and duet_reap_pending: see duet.h (it enters Python itself).
void duet_free_thread_buffers(void); // this thread's scratch buffers (values.c, ops.c)
void duet_free_scratch(void);
extern int duet_initialized;
// duet_python_usable: whether this thread may enter Python from C code
// that GLib runs (closures): not once Python is gone, and, while
// Py_FinalizeEx runs, only on the thread that finalises (another thread
// would wait for a GIL that the dying interpreter may never give back).
int duet_python_usable(void);
int duet_glib_enter(void); // 1: go ahead (then duet_glib_exit); 0: Python is not usable here
void duet_glib_exit(void);

// The UI thread goes first. CPython hands the GIL to whoever takes it
// first, and a goroutine running one Python call after another releases it
// and takes it straight back, while the UI thread, woken to take it, loses
// the race for many switch intervals (measured: an Invoke round trip on the
// UI thread took a p99 of 142 ms with one such goroutine, 263 ms with
// two). So while the UI thread waits for the GIL in a duet entry, other
// threads that hold nothing wait before their next entry; a thread already
// attached never waits (it may be what the UI thread waits for).
extern __thread int duet_on_ui;
extern volatile int duet_ui_wants;
void duet_defer_to_ui(void);

// duet_entry_exc: whether an exception was already set when the outermost
// entry on this thread began (Python code that calls back while one is in
// flight: a decref while unwinding, say); see duet_leave.
extern __thread int duet_entry_exc;

static inline PyGILState_STATE duet_enter(void) {
	PyGILState_STATE st;
	// A state duet makes is pinned for the thread's life; one the thread
	// had already (Python's own threads, a C thread inside a temporary
	// PyGILState_Ensure) belongs to whoever made it, and is not.
	int made = !duet_pinned && PyGILState_GetThisThreadState() == NULL;
	if (duet_on_ui) {
		__atomic_add_fetch(&duet_ui_wants, 1, __ATOMIC_SEQ_CST);
		st = PyGILState_Ensure();
		__atomic_sub_fetch(&duet_ui_wants, 1, __ATOMIC_SEQ_CST);
	} else {
		if (duet_depth == 0 && __atomic_load_n(&duet_ui_wants, __ATOMIC_RELAXED)) duet_defer_to_ui();
		st = PyGILState_Ensure();
	}
	if (made) {
		duet_pinned = 1;
		(void)PyGILState_Ensure(); // never released: pins this thread's state
		duet_pin_thread();
	}
	if (duet_depth == 0) duet_entry_exc = PyErr_Occurred() != NULL;
	duet_depth++;
	// A state duet pinned after the handler began (here, or in a call
	// WithoutGIL ran) rests at one level: its pin.
	if (__builtin_expect(duet_lazy == 1, 0) && st == PyGILState_UNLOCKED &&
	    (duet_lazy_base >= 0 || duet_pinned) &&
	    _PyThreadState_UncheckedGet()->gilstate_counter == (duet_lazy_base >= 0 ? duet_lazy_base : 1) + 1) {
		// The lazy handler's first use of Python: this entry's attachment
		// is kept (one more level) until the handler returns. The hold
		// takes the state that took the GIL, and the entry a nested one:
		// PyGILState_Release lets go of the GIL for the state that took
		// it, whatever the nesting. Only an entry that took the GIL
		// itself, and whose level is the only one taken since the handler
		// began (above its pin, for a state duet made since): one nested in
		// another holder on this thread (a Python handler PyGObject runs
		// inside the lazy one, calling Go, or letting go of the GIL around
		// a disconnect or an emit) ends with that holder, which lets go
		// of the GIL, or takes it back, when it returns.
		duet_lazy_st = st;
		st = PyGILState_Ensure();
		duet_depth++;
		duet_lazy = 2;
	}
	return st;
}

// An entry that returns with a Python exception still set would make the
// next, unrelated operation on the thread fail with it. Every entry hands a
// failure to Go (duet_fail fetches it); one that leaves an exception set
// at the outermost level is a bug of duet's: the exception is reported as
// unraisable (so it is seen, and cleared) and counted.
void duet_leaked_exception(void);

static inline void duet_leave(PyGILState_STATE st) {
	duet_depth--;
	if (__builtin_expect(duet_depth == 0 && !duet_entry_exc && PyErr_Occurred() != NULL, 0)) duet_leaked_exception();
	duet_gc_poke();
	PyGILState_Release(st);
}

// ---- slots ----------------------------------------------------------------

duet_slot *duet_slot_get(void);
void duet_slot_put(duet_slot *s);
void duet_slot_walk(void (*fn)(PyObject *ob, uintptr_t used_by, void *data), void *data);
// Every live slot (owned references and lent arguments). GIL held.
void duet_slot_walk_all(void (*fn)(PyObject *ob, uintptr_t used_by, void *data), void *data);

// duet_deref returns the object a ref designates (borrowed), or NULL when stale.
static inline PyObject *duet_deref(duet_ref r) { return r.s && r.s->gen == r.gen ? r.s->ob : NULL; }

// duet_new_ref stores an owned reference in a fresh slot; on failure it
// drops the reference and returns an empty ref with MemoryError set.
duet_ref duet_new_ref(PyObject *owned);

// duet_fail takes the raised exception into *exc (as a new owned ref) and
// returns DUET_ERR. duet_finish turns a result (a new reference, or NULL
// with an exception set) into a status and *out (or *exc). GIL held.
int duet_fail(duet_ref *exc);
int duet_finish(PyObject *res, duet_ref *out, duet_ref *exc);

// ---- callbacks (callbacks.c) --------------------------------------------------

#define CB_CAPSULE "duet.callback"

// duet_cb is a callback's native state. The PyMethodDef comes first so that
// a use-after-free in the broken ownership mode hits the function pointer.
typedef struct {
	PyMethodDef def; // must outlive every function made from it: owned by the capsule
	uintptr_t handle;
	int flags;
	size_t size;
	char text[]; // name, then doc, NUL-terminated
} duet_cb;

// duet_callback_make makes the Python callable for a Go handle (a new
// reference, or NULL with an exception set); *native is its C state, which
// only the broken mode ever frees from Go. GIL held.
PyObject *duet_callback_make(uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen,
                             const char *module, int64_t mlen, int flags, void **native);

// ---- the ring of boundary crossings (forensics.c) ------------------------------
//
// DUET_RING records a crossing when crash reports are on (one predictable
// branch when they are off); duet_ring_what adds what it concerned ("a b",
// b of length blen or NUL-terminated with SIZE_MAX) to this thread's
// latest record.
extern int duet_ring_on;
extern __thread void *duet_ring_cur;
void duet_ring_record(const char *kind);
void duet_ring_what(const char *a, const char *b, size_t blen);
void duet_ring_more(const char *c); // appends " c"
#define DUET_RING(kind)                                                           \
	do {                                                                          \
		if (__builtin_expect(__atomic_load_n(&duet_ring_on, __ATOMIC_RELAXED), 0)) \
			duet_ring_record(kind);                                               \
		else                                                                      \
			duet_ring_cur = NULL;                                                 \
	} while (0)
#define DUET_RING_WHAT(a, b, blen) \
	do {                           \
		if (duet_ring_cur) duet_ring_what(a, b, blen); \
	} while (0)
#define DUET_RING_MORE(c) \
	do {                  \
		if (duet_ring_cur) duet_ring_more(c); \
	} while (0)

// Freed callbacks: freed now, or kept in quarantine with every way in
// leading to duet_callback_dead (DUET_DEBUG=callbacks). poison: fill with
// garbage before freeing (the broken mode).
void duet_callback_retire(duet_cb *cb, int poison);
extern int duet_debug_callbacks; // DUET_DEBUG=callbacks: the quarantine is on (atomic)
// A call reached a quarantined callback: report (signal, type, instance
// when a signal emission called it) and abort. Never returns.
void duet_callback_dead(duet_cb *cb, const char *signal, const char *type, uintptr_t instance)
	__attribute__((noreturn));
// The same for a handle Go no longer knows (a call that raced the free, or
// the broken mode without the quarantine). Never returns. signal and type
// are borrowed, for the call only (Go copies what it prints), and may be
// NULL: Python called, not a signal.
void duet_callback_gone(uintptr_t handle, const char *signal, const char *type, uintptr_t instance)
	__attribute__((noreturn));

// ---- values (values.c) ------------------------------------------------------

// A closed slot met while decoding arguments is reported as DUET_CLOSED, not
// as a Python exception, so that Go can return its ErrClosed sentinel.
void duet_values_finalized(void); // after Py_FinalizeEx
void duet_ops_finalized(void);    // after Py_FinalizeEx
PyObject *duet_decode(const duet_val *v, int64_t nv, int64_t *pos, const char *arena, int depth);
// duet_decode_one decodes the value at *pos (a new reference, or NULL);
// duet_decode_fail reports its failure as DUET_CLOSED or DUET_ERR.
PyObject *duet_decode_one(const duet_val *v, int64_t nv, int64_t *pos, const char *arena);
int duet_decode_fail(duet_ref *exc);

// UNPAREN strips one level of parentheses: the entry-point tables below pass
// argument lists as "(a, b,)" so that the output argument can be appended.
#define DUET_UNPAREN(...) __VA_ARGS__

// DUET_ENTRY defines the exported duet_<name>, returning its outcome by value
// (see duet.h), from impl_<name>(args..., duet_res *r): impl returns the
// status and fills r->ref (the result, or the exception on DUET_ERR) and
// whatever of n, p, n2, p2 it reports. By value, because a Go caller passing
// pointers to its own variables would have cgo move them to the heap: one
// allocation per output on every call.
#define DUET_ENTRY(name, params, args)                 \
	duet_res duet_##name params {                      \
		duet_res r_ = {0};                             \
		DUET_RING(#name);                              \
		r_.status = impl_##name(DUET_UNPAREN args &r_); \
		return r_;                                     \
	}

#endif
