// duet.h: the only C interface between Go and CPython in duet.
//
// Ownership rules for everything declared here:
//  - duet_slot is C memory holding one strong reference (ob) or NULL once
//    closed. It is owned by exactly one Go *pygi.Object; ob is read and
//    written only while holding the GIL, so the GIL orders Close against use.
//    The slot itself is freed by duet_drain after the Go object is
//    unreachable (never earlier, so a closed slot can still be read).
//  - duet_val arrays are Go memory that holds no Go pointers: p is a
//    duet_slot* (C memory) and strings live in a separate byte arena
//    addressed by offset.
//  - Every duet_* entry point below acquires the GIL itself (PyGILState_Ensure
//    with a per-thread pinned thread state) and releases it before returning,
//    unless its comment says otherwise.
#ifndef DUET_H
#define DUET_H

#include <stdint.h>

typedef struct duet_slot duet_slot;

enum {
	DV_NONE = 0,
	DV_BOOL,   // i != 0
	DV_INT,    // i
	DV_UINT,   // (uint64_t)i
	DV_BIGINT, // decimal text at arena[i : i+n]
	DV_FLOAT,  // f
	DV_STR,    // UTF-8 at arena[i : i+n]
	DV_BYTES,  // arena[i : i+n]
	DV_LIST,   // n items follow
	DV_TUPLE,  // n items follow
	DV_DICT,   // n key/value pairs follow
	DV_SET,    // n items follow (Python to Go only)
	DV_SLOT,   // p is a duet_slot*; Go to Python: borrowed; Python to Go: a new slot the caller owns
	DV_HANDLE, // i is a callback handle; Go to Python: make a Go callable (n = flags)
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
	DUET_OK = 0,      // *out holds a new slot
	DUET_NONE = 1,    // the result was None; *out is NULL
	DUET_END = 2,     // iteration finished
	DUET_ERR = -1,    // a Python exception was raised; *exc holds it as a new slot
	DUET_CLOSED = -2, // a slot involved was closed
	DUET_NOTINIT = -3,
};

// Lifecycle. duet_init and duet_finalize must run on the same OS thread.
int duet_init(const char *argv0, char **errmsg);
void duet_finalize(void);
int duet_is_initialized(void);

// Batch scopes: duet_attach returns the state to hand back to duet_detach.
int duet_attach(void);
void duet_detach(int state);
// Detach from Python while blocking (the GIL must be held on entry).
void *duet_save_thread(void);
void duet_restore_thread(void *ts);

// Lifetime.
void duet_close(duet_slot *s);
void duet_drain(duet_slot **slots, int64_t n, int python_alive);
duet_slot *duet_clone(duet_slot *s); // NULL when closed
int64_t duet_refcount(duet_slot *s); // -1 when closed

// Values.
int duet_from_vals(const duet_val *v, int64_t nv, const char *arena, duet_slot **out, duet_slot **exc);
// duet_to_vals encodes s into this thread's scratch buffer; the pointers stay
// valid until the next duet_to_vals on the same thread, so the caller reads
// them before it unlocks its OS thread.
int duet_to_vals(duet_slot *s, duet_val **vals, int64_t *nvals, char **bytes, int64_t *nbytes, duet_slot **exc);

// Operations. args: nargs positional values then nkw (name, value) pairs,
// all encoded as a flat prefix sequence in v.
int duet_import(const char *name, int64_t len, duet_slot **out, duet_slot **exc);
int duet_getattr(duet_slot *s, const char *name, int64_t len, duet_slot **out, duet_slot **exc);
int duet_setattr(duet_slot *s, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena, duet_slot **exc);
int duet_delattr(duet_slot *s, const char *name, int64_t len, duet_slot **exc);
int duet_hasattr(duet_slot *s, const char *name, int64_t len, int *res, duet_slot **exc);
int duet_call(duet_slot *s, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
              int64_t nargs, int64_t nkw, duet_slot **out, duet_slot **exc);
int duet_getitem(duet_slot *s, const duet_val *v, int64_t nv, const char *arena, duet_slot **out, duet_slot **exc);
int duet_setitem(duet_slot *s, const duet_val *v, int64_t nv, const char *arena, duet_slot **exc); // key then value
int duet_delitem(duet_slot *s, const duet_val *v, int64_t nv, const char *arena, duet_slot **exc);
int duet_len(duet_slot *s, int64_t *n, duet_slot **exc);
int duet_str(duet_slot *s, int repr, char **text, int64_t *len, duet_slot **exc); // text: a per-thread buffer valid until the next text result
int duet_typename(duet_slot *s, char **text, int64_t *len);                      // likewise
int duet_truth(duet_slot *s, int *res, duet_slot **exc);
int duet_is(duet_slot *a, duet_slot *b, int *res);
int duet_isinstance(duet_slot *s, duet_slot *cls, int *res, duet_slot **exc);
int duet_iter(duet_slot *s, duet_slot **out, duet_slot **exc);
int duet_next(duet_slot *it, duet_slot **out, duet_slot **exc);
int duet_run(const char *src, int64_t len, const char *filename, int mode, duet_slot *globals, duet_slot **out, duet_slot **exc);
int duet_new_dict_with_builtins(duet_slot **out);
int duet_none(duet_slot **out);

#endif
