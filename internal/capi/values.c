// values.c: Go values to Python and back, as one flat encoding per call
// (duet_val arrays; see duet.h).
#include <stdlib.h>
#include <string.h>

#include "duet_impl.h"

#include <stddef.h>
_Static_assert(sizeof(duet_val) == 40, "duet_val layout is mirrored in Go (Val)");
_Static_assert(offsetof(duet_val, n) == 8 && offsetof(duet_val, i) == 16 && offsetof(duet_val, f) == 24 &&
                   offsetof(duet_val, p) == 32,
               "duet_val layout is mirrored in Go (Val)");

// Nesting limit for container conversion. Deeper structures (or a container
// that contains itself) are refused with ValueError instead of exhausting
// the C stack.
#define DUET_MAX_DEPTH 100

// ---- per-thread scratch buffer for results Go copies out ------------------

typedef struct {
	duet_val *v;
	int64_t n, cap;
	char *b;
	int64_t nb, bcap;
} scratch_t;
static __thread scratch_t scratch;

void duet_free_scratch(void) {
	free(scratch.v);
	free(scratch.b);
	memset(&scratch, 0, sizeof scratch);
}

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

// A closed slot met while decoding arguments. Reported as DUET_CLOSED, not
// as a Python exception, so Go can return its ErrClosed sentinel. It is
// carried as a private exception rather than a per-thread flag: unwinding a
// half-built container decrefs what was built, which can run __del__ and a
// nested decode on this thread, and the exception state is what CPython
// saves and restores around such code.
static PyObject *closed_slot;

static PyObject *take(duet_ref r) {
	duet_mark_use(r);
	PyObject *o = duet_deref(r);
	if (!o) {
		if (!closed_slot) closed_slot = PyErr_NewException("_duet.ClosedSlot", NULL, NULL); // kept for the interpreter's life
		PyErr_SetNone(closed_slot ? closed_slot : PyExc_SystemError);
		return NULL;
	}
	return Py_NewRef(o);
}

// ---- Go values to Python ----------------------------------------------------

PyObject *duet_decode(const duet_val *v, int64_t nv, int64_t *pos, const char *arena, int depth) {
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
	case DV_BIGINT:
		return _PyLong_FromByteArray((const unsigned char *)(arena + x->i), (size_t)x->n, 0, 1);
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
			val = duet_decode(v, nv, pos, arena, depth + 1);
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
			k = duet_decode(v, nv, pos, arena, depth + 1);
			if (!k) {
				Py_DECREF(o);
				return NULL;
			}
			val = duet_decode(v, nv, pos, arena, depth + 1);
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
PyObject *duet_decode_one(const duet_val *v, int64_t nv, int64_t *pos, const char *arena) {
	return duet_decode(v, nv, pos, arena, 0);
}

int duet_decode_fail(duet_ref *exc) {
	if (closed_slot && PyErr_ExceptionMatches(closed_slot)) {
		PyErr_Clear();
		*exc = duet_no_ref;
		return DUET_CLOSED;
	}
	return duet_fail(exc);
}

void duet_values_finalized(void) { closed_slot = NULL; } // gone with the interpreter

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
		// Exact at any size, in binary (decimal text meets CPython's limit
		// on int/str conversions, 4300 digits).
		size_t nbits = _PyLong_NumBits(o);
		if (nbits == (size_t)-1 && PyErr_Occurred()) return -1;
		size_t len = nbits / 8 + 1; // room for the sign bit
		unsigned char *buf = PyMem_Malloc(len);
		if (!buf) {
			PyErr_NoMemory();
			return -1;
		}
		int64_t off = -1;
		if (_PyLong_AsByteArray((PyLongObject *)o, buf, len, 0, 1) == 0) off = push_bytes((const char *)buf, len);
		PyMem_Free(buf);
		if (off < 0 || !(x = push_val(DV_BIGINT))) return -1;
		x->i = off;
		x->n = (int64_t)len;
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
	duet_ref r = duet_new_ref(Py_NewRef(o));
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
			duet_slot_put(s);
			Py_XDECREF(o);
		}
	}
	scratch.n = 0;
	scratch.nb = 0;
}

// The encoding stays in this thread's scratch buffer (p/n: the values,
// p2/n2: the byte arena) until the next duet_to_vals on the thread.
static int impl_to_vals(duet_ref r, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	scratch_reset();
	if (!duet_deref(r)) {
		rc = DUET_CLOSED;
	} else {
		PyObject *o = Py_NewRef(duet_deref(r));
		if (encode(o, 0) < 0) {
			release_encoded();
			rc = duet_fail(&res->ref);
		}
		Py_DECREF(o);
	}
	res->p = scratch.v;
	res->n = scratch.n;
	res->p2 = scratch.b;
	res->n2 = scratch.nb;
	duet_leave(st);
	return rc;
}
DUET_ENTRY(to_vals, (duet_ref r), (r, ))

static int impl_from_vals(const duet_val *v, int64_t nv, const char *arena, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int64_t pos = 0;
	PyObject *o = duet_decode_one(v, nv, &pos, arena);
	int rc = o ? duet_finish(o, &res->ref, &res->ref) : duet_decode_fail(&res->ref);
	duet_leave(st);
	return rc;
}
DUET_ENTRY(from_vals, (const duet_val *v, int64_t nv, const char *arena), (v, nv, arena, ))
