// duet.c: CPython side of duet's raw layer. See duet.h for the ownership
// rules; this file keeps them and says why where it is not obvious.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "duet.h"

#include <stddef.h>
_Static_assert(sizeof(duet_val) == 40, "duet_val layout is mirrored in Go (Val)");
_Static_assert(offsetof(duet_val, n) == 8 && offsetof(duet_val, i) == 16 && offsetof(duet_val, f) == 24 &&
                   offsetof(duet_val, p) == 32,
               "duet_val layout is mirrored in Go (Val)");

struct duet_slot {
	PyObject *ob;    // owned or borrowed (see duet.h); NULL while free
	uint64_t gen;    // bumped on every release
	duet_slot *next; // free list link
};

// Slots are carved from chunks that are never returned to the system: a
// stale ref must always point at readable slot memory. The pool is bounded by
// the peak number of live references. GIL-protected.
#define SLOT_CHUNK 512
static duet_slot *free_slots;

static duet_slot *slot_get(void) {
	if (!free_slots) {
		duet_slot *chunk = calloc(SLOT_CHUNK, sizeof(duet_slot));
		if (!chunk) return NULL;
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

static void slot_put(duet_slot *s) {
	s->ob = NULL;
	s->gen++;
	s->next = free_slots;
	free_slots = s;
}

// deref returns the object a ref designates (borrowed), or NULL when stale.
static inline PyObject *deref(duet_ref r) { return r.s && r.s->gen == r.gen ? r.s->ob : NULL; }

static const duet_ref no_ref = {NULL, 0};

// Nesting limit for container conversion. Deeper structures (or a container
// that contains itself) are refused with ValueError instead of exhausting
// the C stack.
#define DUET_MAX_DEPTH 100

static int initialized;

// A thread keeps the Python thread state it gets on its first attach for as
// long as it lives: PyGILState_Ensure would otherwise create and destroy one
// on every call (about 8 us each, and it breaks extensions that cache thread
// states). Pinning is one extra PyGILState_Ensure that is never released.
static __thread int pinned;

static inline PyGILState_STATE enter(void) {
	PyGILState_STATE st = PyGILState_Ensure();
	if (!pinned) {
		pinned = 1;
		(void)PyGILState_Ensure(); // never released: pins this thread's state
	}
	return st;
}

static inline void leave(PyGILState_STATE st) { PyGILState_Release(st); }

// The UI thread (the one running the GLib loop) is marked by the event loop.
// While the loop runs, references are released there only: dropping the
// last reference to a GTK object's wrapper finalises the widget, and GTK
// must only be touched from its own thread.
static __thread int on_ui_thread;

void duet_mark_ui_thread(int on) { on_ui_thread = on; }
int duet_on_ui_thread(void) { return on_ui_thread; }

// ---- per-thread scratch buffer for results Go copies out ------------------

typedef struct {
	duet_val *v;
	int64_t n, cap;
	char *b;
	int64_t nb, bcap;
} scratch_t;
static __thread scratch_t scratch;

static void scratch_reset(void) {
	// Give back memory after an unusually large conversion.
	if (scratch.cap > 65536) {
		free(scratch.v);
		scratch.v = NULL;
		scratch.cap = 0;
	}
	if (scratch.bcap > (1 << 20)) {
		free(scratch.b);
		scratch.b = NULL;
		scratch.bcap = 0;
	}
	scratch.n = 0;
	scratch.nb = 0;
}

static duet_val *push_val(int32_t kind) {
	if (scratch.n == scratch.cap) {
		int64_t nc = scratch.cap ? scratch.cap * 2 : 64;
		duet_val *nv = realloc(scratch.v, nc * sizeof(duet_val));
		if (!nv) {
			PyErr_NoMemory();
			return NULL;
		}
		scratch.v = nv;
		scratch.cap = nc;
	}
	duet_val *v = &scratch.v[scratch.n++];
	memset(v, 0, sizeof *v);
	v->kind = kind;
	return v;
}

// push_bytes copies data into the byte arena and returns its offset, or -1.
static int64_t push_bytes(const char *data, int64_t len) {
	if (scratch.nb + len > scratch.bcap) {
		int64_t nc = scratch.bcap ? scratch.bcap : 256;
		while (nc < scratch.nb + len) nc *= 2;
		char *nb = realloc(scratch.b, nc);
		if (!nb) {
			PyErr_NoMemory();
			return -1;
		}
		scratch.b = nb;
		scratch.bcap = nc;
	}
	int64_t off = scratch.nb;
	if (len) memcpy(scratch.b + off, data, len);
	scratch.nb += len;
	return off;
}

// ---- slots and errors ------------------------------------------------------

// new_ref stores an owned reference in a fresh slot; on failure it drops
// the reference and returns an empty ref with MemoryError set.
static duet_ref new_ref(PyObject *owned) {
	duet_slot *s = slot_get();
	if (!s) {
		Py_DECREF(owned);
		PyErr_NoMemory();
		return no_ref;
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

static int fail(duet_ref *exc) {
	PyObject *e = fetch_exc();
	*exc = e ? new_ref(e) : no_ref;
	if (e && !exc->s) PyErr_Clear(); // out of memory while reporting: report nothing
	return DUET_ERR;
}

// finish turns a result (a new reference, or NULL with an exception set)
// into a status and a slot. GIL held.
static int finish(PyObject *res, duet_ref *out, duet_ref *exc) {
	if (res == NULL) return fail(exc);
	if (res == Py_None) {
		Py_DECREF(res);
		*out = no_ref;
		return DUET_NONE;
	}
	*out = new_ref(res);
	if (!out->s) return fail(exc);
	return DUET_OK;
}

// A closed slot met while decoding arguments. Reported as DUET_CLOSED, not
// as a Python exception, so Go can return its ErrClosed sentinel.
static __thread int closed_hit;

static PyObject *take(duet_ref r) {
	PyObject *o = deref(r);
	if (!o) {
		closed_hit = 1;
		return NULL;
	}
	return Py_NewRef(o);
}

// ---- Go values to Python ----------------------------------------------------

static PyObject *decode(const duet_val *v, int64_t nv, int64_t *pos, const char *arena, int depth) {
	if (*pos >= nv) {
		PyErr_SetString(PyExc_SystemError, "duet: truncated value encoding");
		return NULL;
	}
	if (depth > DUET_MAX_DEPTH) {
		PyErr_SetString(PyExc_ValueError, "duet: value nested too deeply");
		return NULL;
	}
	const duet_val *x = &v[(*pos)++];
	PyObject *o, *k, *val;
	switch (x->kind) {
	case DV_NONE:
		return Py_NewRef(Py_None);
	case DV_BOOL:
		return PyBool_FromLong(x->i != 0);
	case DV_INT:
		return PyLong_FromLongLong(x->i);
	case DV_UINT:
		return PyLong_FromUnsignedLongLong((unsigned long long)x->i);
	case DV_BIGINT: {
		char *text = PyMem_Malloc(x->n + 1);
		if (!text) return PyErr_NoMemory();
		memcpy(text, arena + x->i, x->n);
		text[x->n] = 0;
		o = PyLong_FromString(text, NULL, 10);
		PyMem_Free(text);
		return o;
	}
	case DV_FLOAT:
		return PyFloat_FromDouble(x->f);
	case DV_STR:
		return PyUnicode_DecodeUTF8(arena + x->i, x->n, "strict");
	case DV_BYTES:
		return PyBytes_FromStringAndSize(arena + x->i, x->n);
	case DV_LIST:
	case DV_TUPLE:
		o = x->kind == DV_LIST ? PyList_New(x->n) : PyTuple_New(x->n);
		if (!o) return NULL;
		for (int64_t j = 0; j < x->n; j++) {
			val = decode(v, nv, pos, arena, depth + 1);
			if (!val) {
				Py_DECREF(o);
				return NULL;
			}
			if (x->kind == DV_LIST)
				PyList_SET_ITEM(o, j, val);
			else
				PyTuple_SET_ITEM(o, j, val);
		}
		return o;
	case DV_DICT:
		o = PyDict_New();
		if (!o) return NULL;
		for (int64_t j = 0; j < x->n; j++) {
			k = decode(v, nv, pos, arena, depth + 1);
			if (!k) {
				Py_DECREF(o);
				return NULL;
			}
			val = decode(v, nv, pos, arena, depth + 1);
			if (!val || PyDict_SetItem(o, k, val) < 0) {
				Py_DECREF(k);
				Py_XDECREF(val);
				Py_DECREF(o);
				return NULL;
			}
			Py_DECREF(k);
			Py_DECREF(val);
		}
		return o;
	case DV_SLOT:
		return take((duet_ref){(duet_slot *)x->p, (uint64_t)x->n});
	default:
		PyErr_Format(PyExc_SystemError, "duet: unknown value kind %d", (int)x->kind);
		return NULL;
	}
}

// decode_one decodes one value at *pos, reporting a closed slot as
// DUET_CLOSED. Returns a new reference or NULL.
static PyObject *decode_one(const duet_val *v, int64_t nv, int64_t *pos, const char *arena) {
	closed_hit = 0;
	return decode(v, nv, pos, arena, 0);
}

static int decode_fail(duet_ref *exc) {
	if (closed_hit) {
		closed_hit = 0;
		PyErr_Clear();
		*exc = no_ref;
		return DUET_CLOSED;
	}
	return fail(exc);
}

// ---- Python values to Go ------------------------------------------------------

static int encode(PyObject *o, int depth) {
	duet_val *x;
	if (depth > DUET_MAX_DEPTH) {
		PyErr_SetString(PyExc_ValueError, "nested too deeply (or a container holds itself)");
		return -1;
	}
	if (o == Py_None) return push_val(DV_NONE) ? 0 : -1;
	if (PyBool_Check(o)) {
		if (!(x = push_val(DV_BOOL))) return -1;
		x->i = o == Py_True;
		return 0;
	}
	// Scalar subclasses (GObject enums are int subclasses) are read as their
	// base type: the C accessors below never run Python code for them.
	if (PyLong_Check(o)) {
		int overflow = 0;
		long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
		if (i == -1 && PyErr_Occurred()) return -1;
		if (!overflow) {
			if (!(x = push_val(DV_INT))) return -1;
			x->i = i;
			return 0;
		}
		if (overflow > 0) {
			unsigned long long u = PyLong_AsUnsignedLongLong(o);
			if (!PyErr_Occurred()) {
				if (!(x = push_val(DV_UINT))) return -1;
				x->i = (int64_t)u;
				return 0;
			}
			PyErr_Clear();
		}
		PyObject *text = PyNumber_ToBase(o, 10);
		if (!text) return -1;
		Py_ssize_t len;
		const char *s = PyUnicode_AsUTF8AndSize(text, &len);
		int64_t off = s ? push_bytes(s, len) : -1;
		Py_DECREF(text);
		if (off < 0 || !(x = push_val(DV_BIGINT))) return -1;
		x->i = off;
		x->n = len;
		return 0;
	}
	if (PyFloat_Check(o)) {
		if (!(x = push_val(DV_FLOAT))) return -1;
		x->f = PyFloat_AS_DOUBLE(o);
		return 0;
	}
	if (PyUnicode_Check(o)) {
		Py_ssize_t len;
		const char *s = PyUnicode_AsUTF8AndSize(o, &len);
		if (!s) return -1;
		int64_t off = push_bytes(s, len);
		if (off < 0 || !(x = push_val(DV_STR))) return -1;
		x->i = off;
		x->n = len;
		return 0;
	}
	if (PyBytes_Check(o) || PyByteArray_Check(o)) {
		const char *s = PyBytes_Check(o) ? PyBytes_AS_STRING(o) : PyByteArray_AS_STRING(o);
		Py_ssize_t len = PyBytes_Check(o) ? PyBytes_GET_SIZE(o) : PyByteArray_GET_SIZE(o);
		int64_t off = push_bytes(s, len);
		if (off < 0 || !(x = push_val(DV_BYTES))) return -1;
		x->i = off;
		x->n = len;
		return 0;
	}
	// Containers are walked only for their exact builtin types: a subclass
	// could run Python code from its accessors in the middle of the walk.
	if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
		int isl = PyList_CheckExact(o);
		Py_ssize_t n = isl ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
		if (!(x = push_val(isl ? DV_LIST : DV_TUPLE))) return -1;
		x->n = n;
		for (Py_ssize_t j = 0; j < n; j++) {
			// A list cannot change size here: no Python code runs during the walk.
			if (encode(isl ? PyList_GET_ITEM(o, j) : PyTuple_GET_ITEM(o, j), depth + 1) < 0) return -1;
		}
		return 0;
	}
	if (PyDict_CheckExact(o)) {
		if (!(x = push_val(DV_DICT))) return -1;
		x->n = PyDict_GET_SIZE(o);
		Py_ssize_t p = 0;
		PyObject *k, *val;
		while (PyDict_Next(o, &p, &k, &val)) {
			if (encode(k, depth + 1) < 0 || encode(val, depth + 1) < 0) return -1;
		}
		return 0;
	}
	if (PySet_CheckExact(o) || PyFrozenSet_CheckExact(o)) {
		int64_t at = scratch.n;
		if (!push_val(DV_SET)) return -1;
		scratch.v[at].n = PySet_GET_SIZE(o);
		Py_ssize_t p = 0;
		PyObject *k;
		Py_hash_t h;
		while (_PySet_NextEntry(o, &p, &k, &h)) {
			if (encode(k, depth + 1) < 0) return -1;
		}
		return 0;
	}
	if (!(x = push_val(DV_SLOT))) return -1;
	duet_ref r = new_ref(Py_NewRef(o));
	if (!r.s) {
		scratch.n--;
		return -1;
	}
	x->p = r.s;
	x->n = (int64_t)r.gen;
	return 0;
}

// release_encoded gives back the slots an aborted encoding already made.
static void release_encoded(void) {
	for (int64_t j = 0; j < scratch.n; j++) {
		if (scratch.v[j].kind == DV_SLOT) {
			duet_slot *s = scratch.v[j].p;
			PyObject *o = s->ob;
			slot_put(s);
			Py_XDECREF(o);
		}
	}
	scratch.n = 0;
	scratch.nb = 0;
}

static int impl_to_vals(duet_ref r, duet_val **vals, int64_t *nvals, char **bytes, int64_t *nbytes, duet_ref *exc) {
	PyGILState_STATE st = enter();
	int rc = DUET_OK;
	scratch_reset();
	if (!deref(r)) {
		rc = DUET_CLOSED;
	} else {
		PyObject *o = Py_NewRef(deref(r));
		if (encode(o, 0) < 0) {
			release_encoded();
			rc = fail(exc);
		}
		Py_DECREF(o);
	}
	*vals = scratch.v;
	*nvals = scratch.n;
	*bytes = scratch.b;
	*nbytes = scratch.nb;
	leave(st);
	return rc;
}

static int impl_from_vals(const duet_val *v, int64_t nv, const char *arena, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	int64_t pos = 0;
	PyObject *o = decode_one(v, nv, &pos, arena);
	int rc = o ? finish(o, out, exc) : decode_fail(exc);
	leave(st);
	return rc;
}

// ---- lifecycle --------------------------------------------------------------

int duet_init(const char *argv0, char **errmsg) {
	if (Py_IsInitialized()) {
		*errmsg = strdup("Python was already initialised by someone else in this process");
		return -1;
	}
	PyConfig config;
	// Py_InitializeEx(0), but through PyConfig so that a failure comes back
	// as a status instead of Py_FatalError aborting the process. Signal
	// handlers stay off: Go owns signals and needs SA_ONSTACK on each one.
	PyConfig_InitPythonConfig(&config);
	config.install_signal_handlers = 0;
	config.parse_argv = 0;
	char *argv[1] = {(char *)argv0};
	PyStatus status = PyConfig_SetBytesArgv(&config, 1, argv);
	if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(status)) {
		const char *m = status.err_msg ? status.err_msg : "unknown error";
		const char *f = status.func ? status.func : "Py_InitializeFromConfig";
		size_t n = strlen(m) + strlen(f) + 4;
		*errmsg = malloc(n);
		if (*errmsg) snprintf(*errmsg, n, "%s: %s", f, m);
		// Nothing holds the GIL after a failed initialisation.
		return -1;
	}
	pinned = 1;
	(void)PyGILState_Ensure(); // pins the main thread state like any other thread's

	// threading must learn its main thread on the thread that initialised.
	PyObject *th = PyImport_ImportModule("threading");
	if (!th) {
		PyErr_Print();
	}
	Py_XDECREF(th);
	initialized = 1;
	// Release the GIL at once: a thread that keeps it after init deadlocks
	// every other thread.
	(void)PyEval_SaveThread();
	return 0;
}

void duet_finalize(void) {
	(void)PyGILState_Ensure();
	initialized = 0;
	Py_FinalizeEx();
	// The interpreter is gone; every thread state with it.
}

int duet_holds_gil(void) { return initialized && PyGILState_Check(); }

int duet_attach(void) { return (int)enter(); }
void duet_detach(int state) { leave((PyGILState_STATE)state); }
void *duet_save_thread(void) { return PyEval_SaveThread(); }
void duet_restore_thread(void *ts) { PyEval_RestoreThread((PyThreadState *)ts); }

// ---- lifetime ---------------------------------------------------------------

int duet_close_on_ui(duet_ref r) {
	if (!on_ui_thread) return 1; // the caller queues the release for the UI thread
	duet_close(r);
	return 0;
}

void duet_close(duet_ref r) {
	PyGILState_STATE st = enter();
	PyObject *o = deref(r);
	if (o) {
		slot_put(r.s);
		Py_DECREF(o); // may run arbitrary code: the slot is already released
	}
	leave(st);
}

int64_t duet_drain(const duet_ref *refs, int64_t n) {
	PyGILState_STATE st = enter();
	int64_t released = 0;
	for (int64_t j = 0; j < n; j++) {
		PyObject *o = deref(refs[j]);
		if (o) {
			slot_put(refs[j].s);
			Py_DECREF(o);
			released++;
		}
	}
	leave(st);
	return released;
}

static int impl_clone(duet_ref r, duet_ref *out) {
	PyGILState_STATE st = enter();
	int rc = DUET_CLOSED;
	PyObject *o = deref(r);
	if (o) {
		*out = new_ref(Py_NewRef(o));
		if (out->s) {
			rc = DUET_OK;
		} else {
			PyErr_Clear();
			rc = DUET_ERR;
		}
	}
	leave(st);
	return rc;
}

int64_t duet_refcount(duet_ref r) {
	PyGILState_STATE st = enter();
	PyObject *o = deref(r);
	int64_t n = o ? (int64_t)Py_REFCNT(o) : -1;
	leave(st);
	return n;
}

// ---- operations ---------------------------------------------------------------

// TAKE holds a reference to r's object for the whole operation: Python code
// run by the operation may release the GIL, and another thread may close r.
#define TAKE(r, o)                     \
	PyObject *o = deref(r);            \
	if (!o) {                          \
		leave(st);                     \
		return DUET_CLOSED;            \
	}                                  \
	Py_INCREF(o)

static int impl_import(const char *name, int64_t len, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	PyObject *n = PyUnicode_DecodeUTF8(name, len, "strict");
	PyObject *m = n ? PyImport_Import(n) : NULL;
	Py_XDECREF(n);
	int rc = finish(m, out, exc);
	leave(st);
	return rc;
}

static PyObject *attr_name(const char *name, int64_t len) { return PyUnicode_DecodeUTF8(name, len, "strict"); }

static int impl_getattr(duet_ref s, const char *name, int64_t len, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	PyObject *n = attr_name(name, len);
	PyObject *r = n ? PyObject_GetAttr(o, n) : NULL;
	Py_XDECREF(n);
	Py_DECREF(o);
	int rc = finish(r, out, exc);
	leave(st);
	return rc;
}

static int impl_setattr(duet_ref s, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena,
                 duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc = DUET_OK;
	PyObject *val = decode_one(v, nv, &pos, arena);
	if (!val) {
		rc = decode_fail(exc);
	} else {
		PyObject *n = attr_name(name, len);
		if (!n || PyObject_SetAttr(o, n, val) < 0) rc = fail(exc);
		Py_XDECREF(n);
		Py_DECREF(val);
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_delattr(duet_ref s, const char *name, int64_t len, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = DUET_OK;
	PyObject *n = attr_name(name, len);
	if (!n || PyObject_DelAttr(o, n) < 0) rc = fail(exc);
	Py_XDECREF(n);
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_hasattr(duet_ref s, const char *name, int64_t len, int *res, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = DUET_OK;
	PyObject *n = attr_name(name, len);
	if (!n) {
		rc = fail(exc);
	} else {
		// Like hasattr(): only AttributeError means "no"; anything else is an error.
		PyObject *r = PyObject_GetAttr(o, n);
		if (r) {
			*res = 1;
			Py_DECREF(r);
		} else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
			PyErr_Clear();
			*res = 0;
		} else {
			rc = fail(exc);
		}
		Py_DECREF(n);
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

// Arguments for a call are decoded into a small stack array when they fit.
#define SMALL_ARGS 8

static int impl_call(duet_ref s, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
              int64_t nargs, int64_t nkw, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc;
	int64_t total = nargs + nkw;
	// One leading slot for the receiver of a method call (vectorcall convention).
	PyObject *small[SMALL_ARGS + 1];
	PyObject **argv = small;
	PyObject *kwnames = NULL, *res = NULL, *name = NULL;
	int64_t made = 0;
	if (total + 1 > SMALL_ARGS + 1) {
		argv = PyMem_Malloc((total + 1) * sizeof(PyObject *));
		if (!argv) {
			PyErr_NoMemory();
			rc = fail(exc);
			goto done;
		}
	}
	closed_hit = 0;
	int64_t pos = 0;
	for (; made < nargs; made++) {
		argv[1 + made] = decode(v, nv, &pos, arena, 0);
		if (!argv[1 + made]) {
			rc = decode_fail(exc);
			goto done;
		}
	}
	if (nkw) {
		kwnames = PyTuple_New(nkw);
		if (!kwnames) {
			rc = fail(exc);
			goto done;
		}
		for (int64_t j = 0; j < nkw; j++) {
			PyObject *k = decode(v, nv, &pos, arena, 0);
			if (!k) {
				rc = decode_fail(exc);
				goto done;
			}
			PyTuple_SET_ITEM(kwnames, j, k);
			argv[1 + made] = decode(v, nv, &pos, arena, 0);
			if (!argv[1 + made]) {
				rc = decode_fail(exc);
				goto done;
			}
			made++;
		}
	}
	if (method) {
		name = PyUnicode_DecodeUTF8(method, mlen, "strict");
		if (!name) {
			rc = fail(exc);
			goto done;
		}
		argv[0] = o;
		res = PyObject_VectorcallMethod(name, argv, (1 + nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
	} else {
		res = PyObject_Vectorcall(o, argv + 1, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
	}
	rc = finish(res, out, exc);
done:
	for (int64_t j = 0; j < made; j++) Py_DECREF(argv[1 + j]);
	if (argv != small) PyMem_Free(argv);
	Py_XDECREF(kwnames);
	Py_XDECREF(name);
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_getitem(duet_ref s, const duet_val *v, int64_t nv, const char *arena, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc;
	PyObject *k = decode_one(v, nv, &pos, arena);
	if (!k) {
		rc = decode_fail(exc);
	} else {
		rc = finish(PyObject_GetItem(o, k), out, exc);
		Py_DECREF(k);
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_setitem(duet_ref s, const duet_val *v, int64_t nv, const char *arena, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc = DUET_OK;
	PyObject *k = decode_one(v, nv, &pos, arena);
	PyObject *val = k ? decode(v, nv, &pos, arena, 0) : NULL;
	if (!k || !val) {
		rc = decode_fail(exc);
	} else if (PyObject_SetItem(o, k, val) < 0) {
		rc = fail(exc);
	}
	Py_XDECREF(k);
	Py_XDECREF(val);
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_delitem(duet_ref s, const duet_val *v, int64_t nv, const char *arena, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc = DUET_OK;
	PyObject *k = decode_one(v, nv, &pos, arena);
	if (!k) {
		rc = decode_fail(exc);
	} else {
		if (PyObject_DelItem(o, k) < 0) rc = fail(exc);
		Py_DECREF(k);
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_len(duet_ref s, int64_t *n, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = DUET_OK;
	Py_ssize_t l = PyObject_Length(o);
	if (l < 0)
		rc = fail(exc);
	else
		*n = l;
	Py_DECREF(o);
	leave(st);
	return rc;
}

// Text results get their own per-thread buffer, so that str() and type
// names never overwrite a duet_to_vals encoding the caller is still reading.
static __thread char *textbuf;
static __thread int64_t textcap;

static int text_copy(const char *s, int64_t l, char **text, int64_t *len) {
	if (l + 1 > textcap || (textcap > (1 << 20) && l < 4096)) {
		char *nb = realloc(textbuf, l + 1 > 256 ? l + 1 : 256);
		if (!nb) {
			PyErr_NoMemory();
			return -1;
		}
		textbuf = nb;
		textcap = l + 1 > 256 ? l + 1 : 256;
	}
	memcpy(textbuf, s, l);
	textbuf[l] = 0;
	*text = textbuf;
	*len = l;
	return 0;
}

static int text_out(PyObject *u, char **text, int64_t *len) {
	Py_ssize_t l;
	const char *s = PyUnicode_AsUTF8AndSize(u, &l);
	if (!s) return -1;
	return text_copy(s, l, text, len);
}

static int impl_str(duet_ref s, int repr, char **text, int64_t *len, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = DUET_OK;
	PyObject *u = repr ? PyObject_Repr(o) : PyObject_Str(o);
	if (!u || text_out(u, text, len) < 0) rc = fail(exc);
	Py_XDECREF(u);
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_typename(duet_ref s, char **text, int64_t *len) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	const char *n = Py_TYPE(o)->tp_name;
	int rc = DUET_OK;
	if (text_copy(n, strlen(n), text, len) < 0) {
		PyErr_Clear();
		rc = DUET_ERR;
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_truth(duet_ref s, int *res, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = DUET_OK;
	int t = PyObject_IsTrue(o);
	if (t < 0)
		rc = fail(exc);
	else
		*res = t;
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_is(duet_ref a, duet_ref b, int *res) {
	PyGILState_STATE st = enter();
	int rc = DUET_OK;
	if (!deref(a) || !deref(b))
		rc = DUET_CLOSED;
	else
		*res = deref(a) == deref(b);
	leave(st);
	return rc;
}

static int impl_isinstance(duet_ref s, duet_ref cls, int *res, duet_ref *exc) {
	PyGILState_STATE st = enter();
	if (!deref(s) || !deref(cls)) {
		leave(st);
		return DUET_CLOSED;
	}
	PyObject *o = Py_NewRef(deref(s)), *c = Py_NewRef(deref(cls));
	int rc = DUET_OK;
	int t = PyObject_IsInstance(o, c);
	if (t < 0)
		rc = fail(exc);
	else
		*res = t;
	Py_DECREF(o);
	Py_DECREF(c);
	leave(st);
	return rc;
}

static int impl_iter(duet_ref s, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = finish(PyObject_GetIter(o), out, exc);
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_next(duet_ref it, duet_ref *out, duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(it, o);
	int rc;
	if (!PyIter_Check(o)) {
		PyErr_Format(PyExc_TypeError, "'%.200s' object is not an iterator", Py_TYPE(o)->tp_name);
		rc = fail(exc);
	} else {
		PyObject *r = PyIter_Next(o);
		if (!r && !PyErr_Occurred()) {
			rc = DUET_END;
		} else if (r == Py_None) {
			// None is a real item here, not the end: hand it out as a ref.
			*out = new_ref(r);
			rc = out->s ? DUET_OK : fail(exc);
		} else {
			rc = finish(r, out, exc);
		}
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

static int impl_run(const char *src, int64_t len, const char *filename, int mode, duet_ref globals, duet_ref *out,
             duet_ref *exc) {
	PyGILState_STATE st = enter();
	TAKE(globals, g);
	int rc;
	if (!PyDict_Check(g)) {
		PyErr_SetString(PyExc_TypeError, "globals must be a dict");
		rc = fail(exc);
	} else {
		// Compile from a NUL-terminated copy: source text may contain NUL
		// bytes, which the compiler rejects with a clear error instead of
		// silently stopping there.
		char *text = PyMem_Malloc(len + 1);
		if (!text) {
			PyErr_NoMemory();
			rc = fail(exc);
		} else {
			memcpy(text, src, len);
			text[len] = 0;
			PyObject *code = NULL;
			if (memchr(src, 0, len)) {
				PyErr_SetString(PyExc_ValueError, "source code contains a NUL byte");
			} else {
				code = Py_CompileString(text, filename, mode == 0 ? Py_file_input : Py_eval_input);
			}
			PyMem_Free(text);
			PyObject *r = code ? PyEval_EvalCode(code, g, g) : NULL;
			Py_XDECREF(code);
			rc = finish(r, out, exc);
		}
	}
	Py_DECREF(g);
	leave(st);
	return rc;
}

static int impl_new_globals(duet_ref *out) {
	PyGILState_STATE st = enter();
	PyObject *d = PyDict_New();
	int rc = DUET_OK;
	if (!d || PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) < 0) {
		Py_XDECREF(d);
		PyErr_Clear();
		rc = DUET_ERR;
	} else {
		*out = new_ref(d);
		if (!out->s) {
			PyErr_Clear();
			rc = DUET_ERR;
		}
	}
	leave(st);
	return rc;
}

static int impl_none(duet_ref *out) {
	PyGILState_STATE st = enter();
	*out = new_ref(Py_NewRef(Py_None));
	int rc = out->s ? DUET_OK : DUET_ERR;
	PyErr_Clear();
	leave(st);
	return rc;
}

// ---- shared with gobject.c -------------------------------------------------------

PyGILState_STATE duet_enter(void) { return enter(); }
void duet_leave(PyGILState_STATE st) { leave(st); }
duet_ref duet_new_ref(PyObject *owned) { return new_ref(owned); }
PyObject *duet_deref(duet_ref r) { return deref(r); }
int duet_fail(duet_ref *exc) { return fail(exc); }

// ---- callbacks ---------------------------------------------------------------

#include "_cgo_export.h"

#define CB_CAPSULE "duet.callback"
#define HANDLE_CAPSULE "duet.gohandle"

// duet_cb is a callback's native state. The PyMethodDef comes first so that
// a use-after-free in the broken ownership mode hits the function pointer.
typedef struct {
	PyMethodDef def; // must outlive every function made from it: owned by the capsule
	uintptr_t handle;
	int flags;
	size_t size;
	char text[]; // name, then doc, NUL-terminated
} duet_cb;

static void cb_capsule_destructor(PyObject *cap) {
	// Runs when CPython frees the last reference to the function (and so to
	// its m_self), on whatever thread, possibly inside gc.collect() or during
	// finalisation. It hands the handle back to Go and frees the native
	// state; it never calls Python.
	duet_cb *cb = PyCapsule_GetPointer(cap, CB_CAPSULE);
	if (!cb) {
		PyErr_Clear();
		return;
	}
	uintptr_t h = cb->handle;
	free(cb);
	duetCallbackRelease(h);
}

// The one C entry point of every Go callback (METH_FASTCALL|METH_KEYWORDS).
// Arguments are lent to Go in borrowed slots that are released (generation
// bumped, no decref) when Go returns: a Go Object kept past the call reads as
// closed, never as freed memory.
static PyObject *cb_trampoline(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
	duet_cb *cb = PyCapsule_GetPointer(self, CB_CAPSULE);
	if (!cb) return NULL;
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	Py_ssize_t total = nargs + nkw;
	duet_ref small[8];
	duet_ref *refs = small;
	if (total > 8) {
		refs = PyMem_Malloc(total * sizeof(duet_ref));
		if (!refs) return PyErr_NoMemory();
	}
	Py_ssize_t lent = 0;
	duet_ref kw = no_ref;
	PyObject *res = NULL;
	for (; lent < total; lent++) {
		duet_slot *s = slot_get();
		if (!s) {
			PyErr_NoMemory();
			goto done;
		}
		s->ob = (PyObject *)args[lent];
		refs[lent] = (duet_ref){s, s->gen};
	}
	if (nkw) {
		duet_slot *s = slot_get();
		if (!s) {
			PyErr_NoMemory();
			goto done;
		}
		s->ob = kwnames;
		kw = (duet_ref){s, s->gen};
	}
	duet_ref result = no_ref;
	int rc = duetCallbackInvoke(cb->handle, refs, nargs, nkw, kw, &result);
	if (rc == 0) {
		res = deref(result);
		if (res) {
			slot_put(result.s); // the reference moves to our caller
		} else if (!PyErr_Occurred()) {
			PyErr_SetString(PyExc_SystemError, "duet: callback returned a stale result");
		}
	} else if (rc == 1) {
		res = Py_NewRef(Py_None);
	} else if (!PyErr_Occurred()) {
		PyErr_SetString(PyExc_SystemError, "duet: callback failed without setting an exception");
	}
done:
	for (Py_ssize_t j = 0; j < lent; j++) slot_put(refs[j].s);
	if (kw.s) slot_put(kw.s);
	if (refs != small) PyMem_Free(refs);
	return res;
}

static int impl_callback_new(uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen,
                             const char *module, int64_t mlen, int flags, duet_ref *out, void **native, duet_ref *exc) {
	PyGILState_STATE st = enter();
	// One allocation holds the state, the name and the doc (NUL-terminated
	// copies: the Go strings are only valid during this call).
	size_t size = sizeof(duet_cb) + nlen + 1 + (doc ? dlen + 1 : 0);
	duet_cb *cb = calloc(1, size);
	int rc;
	if (!cb) {
		PyErr_NoMemory();
		rc = fail(exc);
		goto out;
	}
	cb->handle = handle;
	cb->flags = flags;
	cb->size = size;
	memcpy(cb->text, name, nlen);
	if (doc) memcpy(cb->text + nlen + 1, doc, dlen);
	cb->def.ml_name = cb->text;
	cb->def.ml_meth = (PyCFunction)(void (*)(void))cb_trampoline;
	cb->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
	cb->def.ml_doc = doc ? cb->text + nlen + 1 : NULL;
	// In the broken mode the capsule has no destructor: Go's GC frees the
	// native state instead (duet_callback_free_native), whatever Python holds.
	PyObject *cap = PyCapsule_New(cb, CB_CAPSULE, (flags & DUET_CB_BROKEN) ? NULL : cb_capsule_destructor);
	if (!cap) {
		free(cb);
		rc = fail(exc);
		goto out;
	}
	PyObject *mod = module ? PyUnicode_FromStringAndSize(module, mlen) : NULL;
	PyObject *fn = PyCFunction_NewEx(&cb->def, cap, mod);
	Py_XDECREF(mod);
	// PyCFunction_NewEx took its own reference to m_self: drop ours. If it
	// failed, this runs the destructor, which gives the handle back.
	Py_DECREF(cap);
	if (fn && (flags & DUET_CB_METHOD)) {
		PyObject *m = PyInstanceMethod_New(fn);
		Py_DECREF(fn);
		fn = m;
	}
	if (!fn && (flags & DUET_CB_BROKEN)) {
		free(cb); // no destructor ran for it; Go gives the handle back
		cb = NULL;
	}
	*native = cb;
	rc = finish(fn, out, exc);
out:
	leave(st);
	return rc;
}

void duet_callback_free_native(void *native) {
	duet_cb *cb = native;
	// Poison before freeing, as glibc's MALLOC_PERTURB_ would: a later call
	// through the dangling PyMethodDef then jumps to garbage instead of
	// finding a plausible function pointer.
	memset(cb, 0xdb, cb->size);
	free(cb);
}

static void handle_capsule_destructor(PyObject *cap) {
	void *p = PyCapsule_GetPointer(cap, HANDLE_CAPSULE);
	if (!p) {
		PyErr_Clear();
		return;
	}
	duetHandleRelease((uintptr_t)p);
}

static int impl_handle_capsule(uintptr_t handle, duet_ref *out) {
	PyGILState_STATE st = enter();
	PyObject *cap = PyCapsule_New((void *)handle, HANDLE_CAPSULE, handle_capsule_destructor);
	int rc = DUET_ERR;
	if (cap) {
		*out = new_ref(cap);
		if (out->s) rc = DUET_OK;
	}
	PyErr_Clear();
	leave(st);
	return rc;
}

uintptr_t duet_capsule_handle(duet_ref r) {
	PyGILState_STATE st = enter();
	PyObject *o = deref(r);
	uintptr_t h = 0;
	if (o && PyCapsule_IsValid(o, HANDLE_CAPSULE)) h = (uintptr_t)PyCapsule_GetPointer(o, HANDLE_CAPSULE);
	leave(st);
	return h;
}

int duet_raise(duet_ref exc) {
	PyGILState_STATE st = enter();
	PyObject *e = deref(exc);
	int rc = DUET_CLOSED;
	if (e) {
		PyErr_SetObject((PyObject *)Py_TYPE(e), e);
		rc = DUET_OK;
	}
	leave(st);
	return rc;
}

// ---- the exported entry points ------------------------------------------------
//
// Each returns its outcome by value: a Go caller that passed pointers to its
// own variables would have them moved to the heap by cgo, one allocation per
// output on every call.

#define R0                                \
	duet_ref out_ = no_ref, exc_ = no_ref; \
	duet_res r_ = {0};                     \
	(void)out_;                            \
	(void)exc_
#define RDONE(expr)                                      \
	do {                                                 \
		r_.status = (expr);                              \
		r_.ref = r_.status == DUET_ERR ? exc_ : out_;    \
		return r_;                                       \
	} while (0)

duet_res duet_to_vals(duet_ref r) {
	R0;
	duet_val *v = NULL;
	char *b = NULL;
	int64_t nv = 0, nb = 0;
	int st = impl_to_vals(r, &v, &nv, &b, &nb, &exc_);
	r_.p = v;
	r_.n = nv;
	r_.p2 = b;
	r_.n2 = nb;
	RDONE(st);
}
duet_res duet_from_vals(const duet_val *v, int64_t nv, const char *arena) {
	R0;
	RDONE(impl_from_vals(v, nv, arena, &out_, &exc_));
}
duet_res duet_clone(duet_ref r) {
	R0;
	RDONE(impl_clone(r, &out_));
}
duet_res duet_import(const char *name, int64_t len) {
	R0;
	RDONE(impl_import(name, len, &out_, &exc_));
}
duet_res duet_getattr(duet_ref r, const char *name, int64_t len) {
	R0;
	RDONE(impl_getattr(r, name, len, &out_, &exc_));
}
duet_res duet_setattr(duet_ref r, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena) {
	R0;
	RDONE(impl_setattr(r, name, len, v, nv, arena, &exc_));
}
duet_res duet_delattr(duet_ref r, const char *name, int64_t len) {
	R0;
	RDONE(impl_delattr(r, name, len, &exc_));
}
duet_res duet_hasattr(duet_ref r, const char *name, int64_t len) {
	R0;
	int res = 0;
	int st = impl_hasattr(r, name, len, &res, &exc_);
	r_.n = res;
	RDONE(st);
}
duet_res duet_call(duet_ref r, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
                   int64_t nargs, int64_t nkw) {
	R0;
	RDONE(impl_call(r, method, mlen, v, nv, arena, nargs, nkw, &out_, &exc_));
}
duet_res duet_getitem(duet_ref r, const duet_val *v, int64_t nv, const char *arena) {
	R0;
	RDONE(impl_getitem(r, v, nv, arena, &out_, &exc_));
}
duet_res duet_setitem(duet_ref r, const duet_val *v, int64_t nv, const char *arena) {
	R0;
	RDONE(impl_setitem(r, v, nv, arena, &exc_));
}
duet_res duet_delitem(duet_ref r, const duet_val *v, int64_t nv, const char *arena) {
	R0;
	RDONE(impl_delitem(r, v, nv, arena, &exc_));
}
duet_res duet_len(duet_ref r) {
	R0;
	int64_t n = 0;
	int st = impl_len(r, &n, &exc_);
	r_.n = n;
	RDONE(st);
}
duet_res duet_str(duet_ref r, int repr) {
	R0;
	char *t = NULL;
	int64_t l = 0;
	int st = impl_str(r, repr, &t, &l, &exc_);
	r_.p = t;
	r_.n = l;
	RDONE(st);
}
duet_res duet_typename(duet_ref r) {
	R0;
	char *t = NULL;
	int64_t l = 0;
	int st = impl_typename(r, &t, &l);
	r_.p = t;
	r_.n = l;
	RDONE(st);
}
duet_res duet_truth(duet_ref r) {
	R0;
	int res = 0;
	int st = impl_truth(r, &res, &exc_);
	r_.n = res;
	RDONE(st);
}
duet_res duet_is(duet_ref a, duet_ref b) {
	R0;
	int res = 0;
	int st = impl_is(a, b, &res);
	r_.n = res;
	RDONE(st);
}
duet_res duet_isinstance(duet_ref r, duet_ref cls) {
	R0;
	int res = 0;
	int st = impl_isinstance(r, cls, &res, &exc_);
	r_.n = res;
	RDONE(st);
}
duet_res duet_iter(duet_ref r) {
	R0;
	RDONE(impl_iter(r, &out_, &exc_));
}
duet_res duet_next(duet_ref it) {
	R0;
	RDONE(impl_next(it, &out_, &exc_));
}
duet_res duet_run(const char *src, int64_t len, const char *filename, int mode, duet_ref globals) {
	R0;
	RDONE(impl_run(src, len, filename, mode, globals, &out_, &exc_));
}
duet_res duet_new_globals(void) {
	R0;
	RDONE(impl_new_globals(&out_));
}
duet_res duet_none(void) {
	R0;
	RDONE(impl_none(&out_));
}
duet_res duet_callback_new(uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen,
                           const char *module, int64_t mlen, int flags) {
	R0;
	void *native = NULL;
	int st = impl_callback_new(handle, name, nlen, doc, dlen, module, mlen, flags, &out_, &native, &exc_);
	r_.p = native;
	RDONE(st);
}
duet_res duet_handle_capsule(uintptr_t handle) {
	R0;
	RDONE(impl_handle_capsule(handle, &out_));
}

void duet_raise_msg(int kind, const char *msg, int64_t len) {
	PyGILState_STATE st = enter();
	PyObject *type = kind == 0 ? PyExc_TypeError : kind == 1 ? PyExc_RuntimeError : PyExc_SystemError;
	PyObject *m = PyUnicode_DecodeUTF8(msg, len, "replace");
	if (m) {
		PyErr_SetObject(type, m);
		Py_DECREF(m);
	}
	leave(st);
}
