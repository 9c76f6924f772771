// slots.c: the slots Go holds references in, and their release. See duet.h
// for the ownership rules.
#include <stdlib.h>

#include "duet_impl.h"

// Slots are carved from chunks that are never returned to the system: a
// stale ref must always point at readable slot memory. The pool is bounded by
// the peak number of live references. GIL-protected.
#define SLOT_CHUNK 512
static duet_slot *free_slots;
// Every chunk, for walks over the live references (duet_used_gobjects).
static duet_slot **chunks;
static size_t nchunks, capchunks;
__thread uintptr_t duet_current_cb;

duet_slot *duet_slot_get(void) {
	if (!free_slots) {
		if (nchunks == capchunks) {
			size_t nc = capchunks ? 2 * capchunks : 16;
			duet_slot **grown = realloc(chunks, nc * sizeof *grown);
			if (!grown) return NULL;
			chunks = grown;
			capchunks = nc;
		}
		duet_slot *chunk = calloc(SLOT_CHUNK, sizeof(duet_slot));
		if (!chunk) return NULL;
		chunks[nchunks++] = chunk;
		for (int i = 0; i < SLOT_CHUNK; i++) {
			chunk[i].gen = 1;
			chunk[i].next = free_slots;
			free_slots = &chunk[i];
		}
	}
	duet_slot *s = free_slots;
	free_slots = s->next;
	s->next = NULL;
	return s;
}

void duet_slot_put(duet_slot *s) {
	s->ob = NULL;
	s->used_by = 0;
	s->gen++;
	s->next = free_slots;
	free_slots = s;
}

duet_ref duet_new_ref(PyObject *owned) {
	duet_slot *s = duet_slot_get();
	if (!s) {
		Py_DECREF(owned);
		PyErr_NoMemory();
		return duet_no_ref;
	}
	s->ob = owned;
	return (duet_ref){s, s->gen};
}

// fetch_exc takes the raised exception as a normalised instance carrying its
// traceback (CPython 3.11 has no PyErr_GetRaisedException yet).
static PyObject *fetch_exc(void) {
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	if (!t) return NULL;
	PyErr_NormalizeException(&t, &v, &tb);
	if (tb && v) PyException_SetTraceback(v, tb);
	Py_XDECREF(t);
	Py_XDECREF(tb);
	return v;
}

int duet_fail(duet_ref *exc) {
	PyObject *e = fetch_exc();
	*exc = e ? duet_new_ref(e) : duet_no_ref;
	if (e && !exc->s) PyErr_Clear(); // out of memory while reporting: report nothing
	return DUET_ERR;
}

int duet_finish(PyObject *res, duet_ref *out, duet_ref *exc) {
	if (res == NULL) return duet_fail(exc);
	if (res == Py_None) {
		Py_DECREF(res);
		*out = duet_no_ref;
		return DUET_NONE;
	}
	*out = duet_new_ref(res);
	if (!out->s) return duet_fail(exc);
	return DUET_OK;
}

// ---- release ------------------------------------------------------------------
//
// Dropping a reference can run arbitrary code (__del__, weakref callbacks,
// GTK dispose and the Python handlers it emits to). None of it may run with
// an exception pending on this thread (a Go callback about to raise, say):
// CPython would report it as "a result with an exception set" from some
// unrelated function, or lose it. So a pending exception is set aside for
// the duration of the release and put back afterwards.

typedef struct {
	PyObject *t, *v, *tb;
} saved_exc;

static inline void save_exc(saved_exc *s) {
	s->t = NULL;
	if (PyErr_Occurred()) PyErr_Fetch(&s->t, &s->v, &s->tb);
}

static inline void restore_exc(saved_exc *s) {
	if (s->t) PyErr_Restore(s->t, s->v, s->tb); // a new exception from the release is dropped in its favour
}

static void release_slot(duet_ref r) {
	PyObject *o = duet_deref(r);
	if (o) {
		duet_slot_put(r.s);
		Py_DECREF(o); // may run arbitrary code: the slot is already released
	}
}

void duet_close(duet_ref r) {
	PyGILState_STATE st = duet_enter();
	saved_exc s;
	save_exc(&s);
	release_slot(r);
	restore_exc(&s);
	duet_leave(st);
}

int duet_close_on_ui(duet_ref r) {
	if (!duet_on_ui_thread()) return 1; // the caller queues the release for the UI thread
	duet_close(r);
	return 0;
}

int64_t duet_drain(const duet_ref *refs, int64_t n) {
	PyGILState_STATE st = duet_enter();
	saved_exc s;
	save_exc(&s);
	int64_t released = 0;
	for (int64_t j = 0; j < n; j++) {
		if (duet_deref(refs[j])) {
			release_slot(refs[j]);
			released++;
		}
	}
	restore_exc(&s);
	duet_leave(st);
	return released;
}

static int impl_clone(duet_ref r, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_CLOSED;
	PyObject *o = duet_deref(r);
	if (o) {
		res->ref = duet_new_ref(Py_NewRef(o));
		if (res->ref.s) {
			rc = DUET_OK;
		} else {
			PyErr_Clear();
			rc = DUET_ERR;
		}
	}
	duet_leave(st);
	return rc;
}
DUET_ENTRY(clone, (duet_ref r), (r, ))

int64_t duet_refcount(duet_ref r) {
	PyGILState_STATE st = duet_enter();
	PyObject *o = duet_deref(r);
	int64_t n = o ? (int64_t)Py_REFCNT(o) : -1;
	duet_leave(st);
	return n;
}

int duet_pending_exception(int clear) {
	PyGILState_STATE st = duet_enter();
	int set = PyErr_Occurred() != NULL;
	if (clear) PyErr_Clear();
	duet_leave(st);
	return set;
}

// duet_slot_walk calls fn for every owned, live reference a Go callback has
// used while it ran. GIL held.
void duet_slot_walk(void (*fn)(PyObject *ob, uintptr_t used_by, void *data), void *data) {
	for (size_t c = 0; c < nchunks; c++)
		for (int i = 0; i < SLOT_CHUNK; i++) {
			duet_slot *s = &chunks[c][i];
			if (s->ob && s->used_by) fn(s->ob, s->used_by, data);
		}
}

void duet_slot_walk_all(void (*fn)(PyObject *ob, uintptr_t used_by, void *data), void *data) {
	for (size_t c = 0; c < nchunks; c++)
		for (int i = 0; i < SLOT_CHUNK; i++) {
			duet_slot *s = &chunks[c][i];
			if (s->ob) fn(s->ob, s->used_by, data);
		}
}
