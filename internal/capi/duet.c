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
	PyObject *ob; // one strong reference, or NULL once closed; GIL-protected
};

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

static duet_slot *new_slot(PyObject *owned) {
	duet_slot *s = malloc(sizeof *s);
	if (!s) {
		Py_DECREF(owned);
		return NULL;
	}
	s->ob = owned;
	return s;
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

static int fail(duet_slot **exc) {
	PyObject *e = fetch_exc();
	*exc = e ? new_slot(e) : NULL;
	return DUET_ERR;
}

// finish turns a result (a new reference, or NULL with an exception set)
// into a status and a slot. GIL held.
static int finish(PyObject *res, duet_slot **out, duet_slot **exc) {
	if (res == NULL) return fail(exc);
	if (res == Py_None) {
		Py_DECREF(res);
		*out = NULL;
		return DUET_NONE;
	}
	*out = new_slot(res);
	if (!*out) {
		PyErr_NoMemory();
		return fail(exc);
	}
	return DUET_OK;
}

// A closed slot met while decoding arguments. Reported as DUET_CLOSED, not
// as a Python exception, so Go can return its ErrClosed sentinel.
static __thread int closed_hit;

static PyObject *slot_ref(duet_slot *s) {
	if (!s || !s->ob) {
		closed_hit = 1;
		return NULL;
	}
	return Py_NewRef(s->ob);
}

// ---- Go values to Python ----------------------------------------------------

// Go callables: set by the callbacks layer (duet_set_callback_factory).
static PyObject *(*callback_factory)(int64_t handle, int64_t flags);

void duet_set_callback_factory(PyObject *(*f)(int64_t, int64_t)) { callback_factory = f; }

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
		return slot_ref((duet_slot *)x->p);
	case DV_HANDLE:
		if (!callback_factory) {
			PyErr_SetString(PyExc_TypeError, "duet: Go funcs need the callbacks package");
			return NULL;
		}
		return callback_factory(x->i, x->n);
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

static int decode_fail(duet_slot **exc) {
	if (closed_hit) {
		closed_hit = 0;
		PyErr_Clear();
		*exc = NULL;
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
	duet_slot *s = new_slot(Py_NewRef(o));
	if (!s) {
		PyErr_NoMemory();
		return -1;
	}
	if (!(x = push_val(DV_SLOT))) {
		Py_DECREF(o);
		free(s);
		return -1;
	}
	x->p = s;
	return 0;
}

// release_encoded gives back the slots an aborted encoding already made.
static void release_encoded(void) {
	for (int64_t j = 0; j < scratch.n; j++) {
		if (scratch.v[j].kind == DV_SLOT) {
			duet_slot *s = scratch.v[j].p;
			Py_XDECREF(s->ob);
			free(s);
		}
	}
	scratch.n = 0;
	scratch.nb = 0;
}

int duet_to_vals(duet_slot *s, duet_val **vals, int64_t *nvals, char **bytes, int64_t *nbytes, duet_slot **exc) {
	PyGILState_STATE st = enter();
	int rc = DUET_OK;
	scratch_reset();
	if (!s->ob) {
		rc = DUET_CLOSED;
	} else {
		PyObject *o = Py_NewRef(s->ob);
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

int duet_from_vals(const duet_val *v, int64_t nv, const char *arena, duet_slot **out, duet_slot **exc) {
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

int duet_is_initialized(void) { return initialized; }

int duet_attach(void) { return (int)enter(); }
void duet_detach(int state) { leave((PyGILState_STATE)state); }
void *duet_save_thread(void) { return PyEval_SaveThread(); }
void duet_restore_thread(void *ts) { PyEval_RestoreThread((PyThreadState *)ts); }

// ---- lifetime ---------------------------------------------------------------

void duet_close(duet_slot *s) {
	PyGILState_STATE st = enter();
	PyObject *o = s->ob;
	s->ob = NULL;
	Py_XDECREF(o);
	leave(st);
}

void duet_drain(duet_slot **slots, int64_t n, int python_alive) {
	if (!python_alive) {
		// After finalisation the references died with the interpreter.
		for (int64_t j = 0; j < n; j++) free(slots[j]);
		return;
	}
	PyGILState_STATE st = enter();
	for (int64_t j = 0; j < n; j++) {
		Py_XDECREF(slots[j]->ob);
		free(slots[j]);
	}
	leave(st);
}

duet_slot *duet_clone(duet_slot *s) {
	PyGILState_STATE st = enter();
	duet_slot *c = s->ob ? new_slot(Py_NewRef(s->ob)) : NULL;
	leave(st);
	return c;
}

int64_t duet_refcount(duet_slot *s) {
	PyGILState_STATE st = enter();
	// The slot's own reference is included, as sys.getrefcount would
	// include its argument's.
	int64_t n = s->ob ? (int64_t)Py_REFCNT(s->ob) : -1;
	leave(st);
	return n;
}

// ---- operations ---------------------------------------------------------------

#define TAKE(s, o)                     \
	PyObject *o = NULL;                \
	if (!(s)->ob) {                    \
		leave(st);                     \
		return DUET_CLOSED;            \
	}                                  \
	o = Py_NewRef((s)->ob)

int duet_import(const char *name, int64_t len, duet_slot **out, duet_slot **exc) {
	PyGILState_STATE st = enter();
	PyObject *n = PyUnicode_DecodeUTF8(name, len, "strict");
	PyObject *m = n ? PyImport_Import(n) : NULL;
	Py_XDECREF(n);
	int rc = finish(m, out, exc);
	leave(st);
	return rc;
}

static PyObject *attr_name(const char *name, int64_t len) { return PyUnicode_DecodeUTF8(name, len, "strict"); }

int duet_getattr(duet_slot *s, const char *name, int64_t len, duet_slot **out, duet_slot **exc) {
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

int duet_setattr(duet_slot *s, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena,
                 duet_slot **exc) {
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

int duet_delattr(duet_slot *s, const char *name, int64_t len, duet_slot **exc) {
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

int duet_hasattr(duet_slot *s, const char *name, int64_t len, int *res, duet_slot **exc) {
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

int duet_call(duet_slot *s, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
              int64_t nargs, int64_t nkw, duet_slot **out, duet_slot **exc) {
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

int duet_getitem(duet_slot *s, const duet_val *v, int64_t nv, const char *arena, duet_slot **out, duet_slot **exc) {
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

int duet_setitem(duet_slot *s, const duet_val *v, int64_t nv, const char *arena, duet_slot **exc) {
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

int duet_delitem(duet_slot *s, const duet_val *v, int64_t nv, const char *arena, duet_slot **exc) {
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

int duet_len(duet_slot *s, int64_t *n, duet_slot **exc) {
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

int duet_str(duet_slot *s, int repr, char **text, int64_t *len, duet_slot **exc) {
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

int duet_typename(duet_slot *s, char **text, int64_t *len) {
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

int duet_truth(duet_slot *s, int *res, duet_slot **exc) {
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

int duet_is(duet_slot *a, duet_slot *b, int *res) {
	PyGILState_STATE st = enter();
	int rc = DUET_OK;
	if (!a->ob || !b->ob)
		rc = DUET_CLOSED;
	else
		*res = a->ob == b->ob;
	leave(st);
	return rc;
}

int duet_isinstance(duet_slot *s, duet_slot *cls, int *res, duet_slot **exc) {
	PyGILState_STATE st = enter();
	if (!s->ob || !cls->ob) {
		leave(st);
		return DUET_CLOSED;
	}
	PyObject *o = Py_NewRef(s->ob), *c = Py_NewRef(cls->ob);
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

int duet_iter(duet_slot *s, duet_slot **out, duet_slot **exc) {
	PyGILState_STATE st = enter();
	TAKE(s, o);
	int rc = finish(PyObject_GetIter(o), out, exc);
	Py_DECREF(o);
	leave(st);
	return rc;
}

int duet_next(duet_slot *it, duet_slot **out, duet_slot **exc) {
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
			// None is a real item here, not the end: hand it out as a slot.
			*out = new_slot(r);
			rc = *out ? DUET_OK : fail(exc);
		} else {
			rc = finish(r, out, exc);
		}
	}
	Py_DECREF(o);
	leave(st);
	return rc;
}

int duet_run(const char *src, int64_t len, const char *filename, int mode, duet_slot *globals, duet_slot **out,
             duet_slot **exc) {
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

int duet_new_dict_with_builtins(duet_slot **out) {
	PyGILState_STATE st = enter();
	PyObject *d = PyDict_New();
	int rc = DUET_OK;
	if (!d || PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) < 0) {
		Py_XDECREF(d);
		PyErr_Clear();
		rc = DUET_ERR;
	} else {
		*out = new_slot(d);
		if (!*out) rc = DUET_ERR;
	}
	leave(st);
	return rc;
}

int duet_none(duet_slot **out) {
	PyGILState_STATE st = enter();
	*out = new_slot(Py_NewRef(Py_None));
	leave(st);
	return *out ? DUET_OK : DUET_ERR;
}
