// duet.h: the only C interface between Go and CPython in duet.
//
// Ownership rules for everything declared here:
//  - A duet_slot is C memory holding one Python object pointer. Slots come
//    from a free list and are recycled; each recycling bumps the slot's
//    generation. Go never holds a bare slot: it holds a duet_ref (slot plus
//    the generation it was issued with), and every entry point checks the
//    generation under the GIL. A stale ref (closed, released, or a borrowed
//    callback argument whose call has returned) therefore reads as "closed",
//    never as another object or as freed memory.
//  - An owned slot holds one strong reference; releasing the slot drops it.
//    A borrowed slot (a callback argument) holds the caller's reference for
//    the duration of the call and is released without a decref.
//  - Slots, the free list and generations are only touched with the GIL held.
//  - duet_val arrays are Go memory holding no Go pointers: p is a duet_slot*
//    (C memory) and strings live in a separate byte arena, by offset.
//  - Every duet_* entry point acquires the GIL itself (PyGILState_Ensure on a
//    per-thread pinned thread state) and releases it before returning, unless
//    its comment says it must be called with the GIL held.
#ifndef DUET_H
#define DUET_H

#include <stdint.h>

typedef struct duet_slot duet_slot;

typedef struct {
	duet_slot *s;
	uint64_t gen;
} duet_ref;

enum {
	DV_NONE = 0,
	DV_BOOL,   // i != 0
	DV_INT,    // i
	DV_UINT,   // (uint64_t)i
	DV_BIGINT, // big-endian two's complement bytes at arena[i : i+n]
	DV_FLOAT,  // f
	DV_STR,    // UTF-8 at arena[i : i+n]
	DV_BYTES,  // arena[i : i+n]
	DV_LIST,   // n items follow
	DV_TUPLE,  // n items follow
	DV_DICT,   // n key/value pairs follow
	DV_SET,    // n items follow (Python to Go only)
	DV_SLOT,   // a ref: p = slot, n = generation. Go to Python: borrowed. Python to Go: a new owned ref
};

typedef struct {
	int32_t kind;
	int32_t _pad;
	int64_t n;
	int64_t i;
	double f;
	void *p;
} duet_val;

// Status codes returned by operations.
enum {
	DUET_OK = 0,      // *out holds a new owned ref
	DUET_NONE = 1,    // the result was None; *out is empty
	DUET_END = 2,     // iteration finished
	DUET_ERR = -1,    // a Python exception was raised; *exc holds it as a new owned ref
	DUET_CLOSED = -2, // a ref involved was stale
	DUET_SLOW = 3,    // duet_call0 and duet_callm0 only: the gate's fast path declined; enter the gate in Go and use duet_call
	DUET_TRUE = 4,    // duet_call, duet_call0 and duet_callm0 only: the result was True; *out is empty
	DUET_FALSE = 5,   // the same for False
};

// Lifecycle (runtime.c). duet_init and duet_finalize must run on the same
// OS thread.
int duet_init(int argc, char **argv, const char *venv, char **errmsg);
int duet_finalize(void);
int64_t duet_threads_freed(void);   // thread states deleted after their thread ended
void duet_reap_threads(void);       // delete them, here
extern int duet_reap_pending;       // some wait
int64_t duet_thread_states(void);   // the interpreter's thread states now
int64_t duet_leaked_exceptions(void); // entries that left an exception set (a bug)

// The lifetime gate's word and the flags an entry reads (Go's
// internal/lifetime owns their meaning; they live here so that
// duet_call0 can enter the gate without a crossing of its own). Go
// updates them with its atomics through pointers (capi.Gate*), C with
// __atomic builtins: the phase in the top byte of duet_gate_state, the
// entries in flight below; releases queued (dirty), releases only the UI
// thread may make (ui_dirty), the loop runs (ui_running).
extern int64_t duet_gate_state;
#define DUET_GATE_SHIFT 56 // lifetime's encoding (a test there holds the two equal)
#define DUET_GATE_READY 1
extern uint32_t duet_gate_dirty, duet_gate_ui_dirty, duet_gate_ui_running;

// Batch scopes: duet_attach returns the state to hand back to duet_detach.
int duet_attach(void);
void duet_detach(int state);
// duet_attached: whether a duet scope holds the GIL on this thread (an entry
// point, a batch scope, or a Go callback Python is running). duet's own
// per-thread count, not PyGILState_Check (see duet_impl.h).
int duet_attached(void);
int duet_in_callback(void); // a Go callback runs on this thread (bare ones too)
int duet_nested(void);       // attached, in a Go callback, or detached from an entry still open (runtime.c)
void duet_mark_finalizer(int on); // this thread runs Finalize's last step (1), or no longer (0)
int duet_on_finalizer(void);
// Detach while blocking (attached on entry); *depth carries duet's count
// over to duet_restore_thread, on the same thread.
void *duet_save_thread(int *depth);
// Around what is no lazy signal handler's use of Python (WithoutGIL's
// function, the loop's Go work, notices): an entry inside it does not take
// the handler's hold on the GIL (runtime.c).
int duet_lazy_pause(void);
void duet_lazy_resume(int was);
// WithoutGIL's one crossing: -1 when attached (the caller detaches), else
// duet_lazy_pause's answer.
int duet_without_gil_begin(void);
void duet_restore_thread(void *ts, int depth);
// Whether the calling thread is the process's main thread.
int duet_is_main_thread(void);

// The outcome of an operation, returned by value. ref is the result (DUET_OK)
// or the exception (DUET_ERR); n and p carry numbers and text.
typedef struct {
	int64_t status;
	int64_t n;
	void *p;
	duet_ref ref;
	int64_t n2;
	void *p2;
} duet_res;

// Lifetime (slots.c). Releases set a pending exception aside while the
// references they drop run arbitrary code, and put it back afterwards.
void duet_close(duet_ref r);
// duet_close_on_ui closes r when called on the UI thread and returns 0;
// elsewhere it does nothing and returns 1 (the caller defers the release).
int duet_close_on_ui(duet_ref r);
void duet_mark_ui_thread(int on);
int duet_on_ui_thread(void);
// duet_drain releases each ref that is still current; returns how many were.
int64_t duet_drain(const duet_ref *refs, int64_t n);
duet_res duet_clone(duet_ref r);
int64_t duet_refcount(duet_ref r); // -1 when stale
// Whether an exception is pending on this thread, clearing it when clear is
// set (for tests of the rule above).
int duet_pending_exception(int clear);

// Values (values.c).
duet_res duet_from_vals(const duet_val *v, int64_t nv, const char *arena);
// duet_to_vals encodes r into this thread's scratch buffer (p/n: the values,
// p2/n2: the byte arena); the pointers stay valid until the next
// duet_to_vals on the same thread, so the caller reads them before it unlocks
// its OS thread.
duet_res duet_to_vals(duet_ref r);

// Operations (ops.c). Call arguments: nargs positional values then nkw (name, value)
// pairs, all encoded as one flat prefix sequence in v.
duet_res duet_import(const char *name, int64_t len);
duet_res duet_getattr(duet_ref r, const char *name, int64_t len);
duet_res duet_setattr(duet_ref r, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena);
duet_res duet_delattr(duet_ref r, const char *name, int64_t len);
duet_res duet_hasattr(duet_ref r, const char *name, int64_t len); // n: 0 or 1
duet_res duet_call(duet_ref r, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
                   int64_t nargs, int64_t nkw);
// duet_call0 is duet_call(r, NULL, 0, NULL, 0, NULL, 0, 0), the call f(),
// taking the lifetime gate itself (ops.c says how); DUET_SLOW when Go
// must take its full path. ref: the result or the exception, as duet_res.
// The ref comes as its two words, the slot as an integer: cgo checks an
// argument holding a pointer on every call, and a slot is C memory.
typedef struct {
	duet_ref ref;
	int64_t status;
} duet_res0;
duet_res0 duet_call0(uintptr_t slot, uint64_t gen);
// duet_callm0 is the same for o.m(), a method (path) called without
// arguments: the commonest call a handler makes on a widget.
duet_res0 duet_callm0(uintptr_t slot, uint64_t gen, const char *method, int64_t mlen);
duet_res duet_getitem(duet_ref r, const duet_val *v, int64_t nv, const char *arena);
duet_res duet_setitem(duet_ref r, const duet_val *v, int64_t nv, const char *arena); // key, then value
duet_res duet_delitem(duet_ref r, const duet_val *v, int64_t nv, const char *arena);
duet_res duet_len(duet_ref r); // n
// Text results (p, n) point into a per-thread buffer valid until the next
// text result on the thread.
duet_res duet_str(duet_ref r, int repr);
duet_res duet_typename(duet_ref r);
duet_res duet_truth(duet_ref r);              // n
duet_res duet_is(duet_ref a, duet_ref b);     // n
duet_res duet_isinstance(duet_ref r, duet_ref cls); // n
duet_res duet_iter(duet_ref r);
duet_res duet_next(duet_ref it); // DUET_OK with an item (None included), DUET_END, or DUET_ERR
duet_res duet_run(const char *src, int64_t len, const char *filename, int mode, duet_ref globals);
duet_res duet_new_globals(void);
duet_res duet_singleton(int which); // a new ref to None, or to True or False (which: DUET_NONE, DUET_TRUE, DUET_FALSE)

// ---- callbacks: Go functions as Python callables (callbacks.c) -------------
//
// A callback is a builtin function (PyCFunction, METH_FASTCALL|METH_KEYWORDS)
// whose m_self is a PyCapsule. The capsule owns a duet_cb (C memory) holding
// the Go cgo.Handle and the PyMethodDef; CPython runs the capsule's
// destructor when the last reference to the function (and so to m_self) is
// gone, and the destructor hands the handle back to Go
// (duetCallbackRelease) and frees the duet_cb. That is the whole lifetime
// contract: the Go function lives exactly as long as Python holds it.
enum {
	DUET_CB_METHOD = 1, // wrap in an instancemethod so it binds like a Python method
	DUET_CB_BROKEN = 2, // deliberately broken ownership (see callbacks.GoOwnedBroken)
	DUET_CB_DEAD = 4,   // freed, kept in quarantine (DUET_DEBUG=callbacks; internal)
};
// p: the native state (duet_cb), for duet_callback_free_native.
// Strings are (pointer, length); a NULL doc or module means none.
duet_res duet_callback_new(uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen,
                           const char *module, int64_t mlen, int flags);
// duet_callback_free_native frees a broken-mode callback's native state while
// Python may still hold the function: the use-after-free the broken mode
// exists to reproduce. Never called for correctly owned callbacks.
void duet_callback_free_native(void *native);

// Whether r is a Go callback made by duet_callback_new, and its handle (0 if not).
int duet_is_callback(duet_ref r);
uintptr_t duet_callback_handle(duet_ref r);

// A capsule that owns a Go handle (released through duetHandleRelease).
duet_res duet_handle_capsule(uintptr_t handle);
// The handle inside such a capsule, or 0.
uintptr_t duet_capsule_handle(duet_ref r);

// Inside a callback: raise the exception exc designates, releasing exc (in
// one crossing, so no release runs with the exception pending); or raise a
// builtin exception with a message (kind 0 TypeError, 1 RuntimeError, 2
// SystemError).
int duet_raise_owned(duet_ref exc);
void duet_raise_msg(int kind, const char *msg, int64_t len);
void duet_print_raised(void); // print and clear what is raised (attached)

// ---- signals (signals.c) -----------------------------------------------------
void duet_signals_save(void);        // before Python starts: Go's handlers
int duet_signals_install(void);      // at start-up, main thread, GIL held
void duet_signal_interrupt(int sig); // a signal for Python (any thread)
void duet_signals_finalized(void);  // after Py_FinalizeEx: Go's fatal-signal handlers back
void duet_set_go_text(uintptr_t lo, uintptr_t hi); // where Go's code is (faulthandler's front)
int duet_fault_dump(int sig);
int duet_pc_in_go(void *ctx);      // a fault's program counter is in Go's code       // a faulthandler.register'd signal arrived: tracebacks to its file
struct sigaction;
int duet_python_action(int sig, struct sigaction *out); // interpose.c: what CPython asked for
int duet_interposing(void);
void duet_interpose_prepare(void); // before Python starts: where CPython's code is
int duet_interpose_mode(void);     // 0 none, 1 libpython.so, 2 symbol table, 3 dynamic symbol table
int duet_from_python_at(uintptr_t a); // the test of interpose.c's caller list
uintptr_t duet_exe_bias(void);
int duet_os_sigaction(int sig, const struct sigaction *act, struct sigaction *old); // libc's, for duet's own calls
int duet_forked_child(void);  // a child forked from the Go program (interpose.c)
void duet_child_signals(void); // Python's dispositions for such a child
int duet_python_main_is_process_main(void); // Python's main thread is the UI thread
duet_res duet_check_signals(void);   // run arrived signals' Python handlers (runtime.c)

// ---- forensics (forensics.c) -----------------------------------------------------
// One recorded boundary crossing; kind is a string literal in C memory.
typedef struct {
	uint64_t seq;
	int32_t tid;
	int32_t _pad;
	const char *kind;
	char what[48];
} duet_crossing;
void duet_ring_enable(int on);
int duet_ring_read(duet_crossing *out, int max);
// The report file (append mode; -1 for stderr only) and the SIGABRT
// handler, chained to Go's; 0 or -1 (sigaction failed).
int duet_crash_install(int fd, int dirfd, const char *name, const char *path);
void duet_debug_set(int callbacks); // DUET_DEBUG=callbacks: quarantine freed callbacks
int duet_quarantined(void);         // callbacks in quarantine now
duet_res duet_census_refs(void);    // {type name: count} of the references Go holds

// ---- the cycle collector on the UI thread (gcstate.c) ------------------------
int duet_gc_due(void);          // the generation due for collection, or -1
int duet_gc_due_ui(void);       // the same with a follow-up collection (see gcstate.c); UI thread
void duet_gc_collected(int64_t freed); // the loop's collection freed that many; UI thread
void duet_gc_poke(void);        // wake the loop if a collection is due
void duet_gc_loop(int on);      // the loop starts (1) or stops (0) collecting; UI thread
void duet_gc_set_wanted(int on); // gc.enable()/gc.disable() as Python code asked

#endif
