// ops.c: the operations Go runs on Python objects. Each is one cgo crossing
// that attaches itself (duet_enter/duet_leave) and returns its outcome by
// value (DUET_ENTRY, duet_impl.h).
#include <string.h>

#include "duet_impl.h"


// TAKE holds a reference to r's object for the whole operation: Python code
// run by the operation may release the GIL, and another thread may close r.
#define TAKE(r, o)             \
	PyObject *o = duet_deref(r);   \
	if (!o) {                      \
		duet_leave(st);            \
		return DUET_CLOSED;        \
	}                              \
	DUET_RING_WHAT(Py_TYPE(o)->tp_name, NULL, 0); \
	duet_mark_use(r);              \
	Py_INCREF(o)

static int impl_import(const char *name, int64_t len, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	DUET_RING_WHAT(NULL, name, len);
	PyObject *n = PyUnicode_DecodeUTF8(name, len, "strict");
	PyObject *m = n ? PyImport_Import(n) : NULL;
	Py_XDECREF(n);
	int rc = duet_finish(m, out, exc);
	duet_leave(st);
	return rc;
}

// attr_name is the str for an attribute or method name Go passes (a new
// reference, or NULL with an exception). Go passes the same few names
// again and again (a handler's CallMethod(item, "get_child") for every
// row): each is decoded once and interned, and kept in a small
// direct-mapped table by its text, so that a call neither decodes nor
// hashes it again and the lookups in type and instance dicts compare it by
// identity, as the names in Python's own code are. ASCII names only (the
// table compares bytes); a miss replaces the entry. GIL held.
#define NAMES 512
#define NAME_MAX_LEN 64
static PyObject *names[NAMES]; // strong references; forgotten with the interpreter (duet_ops_finalized)

static PyObject *attr_name(const char *name, int64_t len) {
	if (len <= 0 || len > NAME_MAX_LEN) return PyUnicode_DecodeUTF8(name, len, "strict");
	uint32_t h = 2166136261u; // FNV-1a
	for (int64_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 16777619u;
	PyObject **e = &names[h & (NAMES - 1)];
	PyObject *c = *e;
	if (c && PyUnicode_GET_LENGTH(c) == len && memcmp(PyUnicode_DATA(c), name, (size_t)len) == 0) return Py_NewRef(c);
	PyObject *n = PyUnicode_DecodeUTF8(name, len, "strict");
	if (!n || !PyUnicode_IS_ASCII(n)) return n;
	PyUnicode_InternInPlace(&n);
	Py_XSETREF(*e, Py_NewRef(n));
	return n;
}

void duet_ops_finalized(void) { memset(names, 0, sizeof names); } // gone with the interpreter

// finish_call is duet_finish for calls: True and False come back as
// statuses of their own, as None does, so that Go hands out permanent
// Objects for them instead of making one per call, with a cleanup to
// register and a reference to release later (GTK's getters and
// predicates return booleans often).
static int finish_call(PyObject *r, duet_ref *out, duet_ref *exc) {
	if (r == Py_True || r == Py_False) {
		int st = r == Py_True ? DUET_TRUE : DUET_FALSE;
		Py_DECREF(r);
		*out = duet_no_ref;
		return st;
	}
	return duet_finish(r, out, exc);
}

// kw_name decodes a keyword argument's name through the same table: the
// callee matches keyword names against its parameters by identity first
// (they are interned in its code), by comparing the text only when that
// fails.
static PyObject *kw_name(const duet_val *v, int64_t nv, int64_t *pos, const char *arena) {
	if (*pos < nv && v[*pos].kind == DV_STR) {
		const duet_val *x = &v[(*pos)++];
		return attr_name(arena + x->i, x->n);
	}
	return duet_decode(v, nv, pos, arena, 0);
}

// Attribute names may be paths, "a.b.c", resolved in this one crossing:
// walk returns (a new reference to) the object all but the last component
// lead to, and the last component in *last/*lastlen; NULL with an
// exception when a step fails. Python attribute names never contain dots,
// so a dotted name is always a path.
static PyObject *walk(PyObject *o, const char *name, int64_t len, const char **last, int64_t *lastlen) {
	Py_INCREF(o);
	const char *p = name, *end = name + len;
	for (const char *dot; end > p && (dot = memchr(p, '.', end - p)) != NULL; p = dot + 1) {
		PyObject *n = attr_name(p, dot - p);
		PyObject *next = n ? PyObject_GetAttr(o, n) : NULL;
		Py_XDECREF(n);
		Py_DECREF(o);
		if (!next) return NULL;
		o = next;
	}
	*last = p;
	*lastlen = end - p;
	return o;
}

// getattr_path is getattr(o, "a.b.c"): a new reference, or NULL.
static PyObject *getattr_path(PyObject *o, const char *name, int64_t len) {
	const char *last;
	int64_t ll;
	PyObject *parent = walk(o, name, len, &last, &ll);
	if (!parent) return NULL;
	PyObject *n = attr_name(last, ll);
	PyObject *r = n ? PyObject_GetAttr(parent, n) : NULL;
	Py_XDECREF(n);
	Py_DECREF(parent);
	return r;
}

static int impl_getattr(duet_ref s, const char *name, int64_t len, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	DUET_RING_WHAT(Py_TYPE(o)->tp_name, name, len);
	PyObject *r = getattr_path(o, name, len);
	Py_DECREF(o);
	int rc = duet_finish(r, out, exc);
	duet_leave(st);
	return rc;
}

static int impl_setattr(duet_ref s, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	DUET_RING_WHAT(Py_TYPE(o)->tp_name, name, len);
	int64_t pos = 0;
	int rc = DUET_OK;
	PyObject *val = duet_decode_one(v, nv, &pos, arena);
	if (!val) {
		rc = duet_decode_fail(exc);
	} else {
		const char *last;
		int64_t ll;
		PyObject *parent = walk(o, name, len, &last, &ll);
		PyObject *n = parent ? attr_name(last, ll) : NULL;
		if (!n || PyObject_SetAttr(parent, n, val) < 0) rc = duet_fail(exc);
		Py_XDECREF(n);
		Py_XDECREF(parent);
		Py_DECREF(val);
	}
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_delattr(duet_ref s, const char *name, int64_t len, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	DUET_RING_WHAT(Py_TYPE(o)->tp_name, name, len);
	int rc = DUET_OK;
	const char *last;
	int64_t ll;
	PyObject *parent = walk(o, name, len, &last, &ll);
	PyObject *n = parent ? attr_name(last, ll) : NULL;
	if (!n || PyObject_DelAttr(parent, n) < 0) rc = duet_fail(exc);
	Py_XDECREF(n);
	Py_XDECREF(parent);
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_hasattr(duet_ref s, const char *name, int64_t len, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	DUET_RING_WHAT(Py_TYPE(o)->tp_name, name, len);
	int rc = DUET_OK;
	// Like hasattr(): only AttributeError (at any step of a path) means
	// "no"; anything else is an error.
	PyObject *r = getattr_path(o, name, len);
	if (r) {
		res->n = 1;
		Py_DECREF(r);
	} else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
		PyErr_Clear();
		res->n = 0;
	} else {
		rc = duet_fail(exc);
	}
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

// ring_callee adds the called function's name to the ring's record, where
// it is at hand without allocating.
static void ring_callee(PyObject *o) {
	const char *fname = NULL;
	if (PyFunction_Check(o)) {
		PyObject *q = ((PyFunctionObject *)o)->func_qualname;
		if (q && PyUnicode_Check(q) && PyUnicode_IS_COMPACT_ASCII(q)) fname = (const char *)PyUnicode_DATA(q);
	} else if (PyCFunction_Check(o)) {
		fname = ((PyCFunctionObject *)o)->m_ml->ml_name;
	}
	if (fname) DUET_RING_WHAT(Py_TYPE(o)->tp_name, fname, SIZE_MAX);
}

// Arguments for a call are decoded into a small stack array when they fit.
#define SMALL_ARGS 8

static int impl_call(duet_ref s, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
              int64_t nargs, int64_t nkw, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	if (method) {
		DUET_RING_WHAT(Py_TYPE(o)->tp_name, method, mlen);
	} else if (duet_ring_cur) {
		ring_callee(o);
	}
	int rc;
	int64_t total = nargs + nkw;
	// One leading slot for the receiver of a method call (vectorcall convention).
	PyObject *small[SMALL_ARGS + 1];
	PyObject **argv = small;
	PyObject *kwnames = NULL, *result = NULL, *name = NULL;
	int64_t made = 0;
	if (total + 1 > SMALL_ARGS + 1) {
		argv = PyMem_Malloc((total + 1) * sizeof(PyObject *));
		if (!argv) {
			PyErr_NoMemory();
			rc = duet_fail(exc);
			goto done;
		}
	}
	int64_t pos = 0;
	for (; made < nargs; made++) {
		argv[1 + made] = duet_decode(v, nv, &pos, arena, 0);
		if (!argv[1 + made]) {
			rc = duet_decode_fail(exc);
			goto done;
		}
	}
	if (nkw) {
		kwnames = PyTuple_New(nkw);
		if (!kwnames) {
			rc = duet_fail(exc);
			goto done;
		}
		for (int64_t j = 0; j < nkw; j++) {
			PyObject *k = kw_name(v, nv, &pos, arena);
			if (!k) {
				rc = duet_decode_fail(exc);
				goto done;
			}
			PyTuple_SET_ITEM(kwnames, j, k);
			argv[1 + made] = duet_decode(v, nv, &pos, arena, 0);
			if (!argv[1 + made]) {
				rc = duet_decode_fail(exc);
				goto done;
			}
			made++;
		}
	}
	if (method) {
		// A method path, "a.b.m": the receiver is what "a.b" leads to.
		const char *last;
		int64_t ll;
		PyObject *recv = walk(o, method, mlen, &last, &ll);
		name = recv ? attr_name(last, ll) : NULL;
		if (!name) {
			Py_XDECREF(recv);
			rc = duet_fail(exc);
			goto done;
		}
		argv[0] = recv;
		result = PyObject_VectorcallMethod(name, argv, (1 + nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
		Py_DECREF(recv);
	} else {
		result = PyObject_Vectorcall(o, argv + 1, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
	}
	rc = finish_call(result, out, exc);
done:
	for (int64_t j = 0; j < made; j++) Py_DECREF(argv[1 + j]);
	if (argv != small) PyMem_Free(argv);
	Py_XDECREF(kwnames);
	Py_XDECREF(name);
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

// ---- f(): the call that takes the gate itself -------------------------------
//
// f() is the commonest call, and the one made many times inside a batch
// scope (pygi.WithGIL), where the scope has already entered the lifetime
// gate and holds the GIL. duet_call0 therefore takes the gate here, in C,
// in the same crossing:
// - attached (a duet scope holds the GIL on this thread, under this
//   thread's own state): PyGILState_Ensure has nothing to do;
// - inside a scope Finalize counts already (a WithGIL scope, an entry:
//   attached, and in no Go callback, whose Python caller the gate does
//   not count, say a daemon thread's), nothing is counted either: Go's
//   gate lets every nested entry in while Python exists
//   (lifetime.enterSlow); but releases due to be drained send it down
//   Go's path (an entry drains, nested or not: a long batch of calls must
//   not pile up what Go's collector gave back);
// - otherwise one entry is counted in the gate's word, as lifetime.Enter
//   counts it, when the phase is Ready and no release waits for an entry
//   to drain it; in any other case DUET_SLOW sends Go down its full path
//   (lifetime.Enter, which waits, refuses, starts or drains, then duet_call).
// Every exit tells the loop when a collection is due (duet_gc_poke).

static inline int gate_drain_due(void) {
	if (__atomic_load_n(&duet_gate_ui_running, __ATOMIC_RELAXED)) return 0; // the loop drains, on the UI thread
	return __atomic_load_n(&duet_gate_dirty, __ATOMIC_RELAXED) || __atomic_load_n(&duet_reap_pending, __ATOMIC_RELAXED) ||
	       (duet_on_ui && __atomic_load_n(&duet_gate_ui_dirty, __ATOMIC_RELAXED));
}

// call0 is duet_call0 and duet_callm0: f(), or o.m() when method is set.
static inline duet_res0 call0(uintptr_t slot, uint64_t gen, const char *method, int64_t mlen) {
	duet_ref r = {(duet_slot *)slot, gen};
	duet_res0 res = {duet_no_ref, DUET_SLOW};
	int attached = duet_depth > 0 && _PyThreadState_UncheckedGet() == PyGILState_GetThisThreadState();
	int counted = attached && duet_current_cb == 0;
	if (counted) {
		if (gate_drain_due()) return res;
	} else {
		int64_t s = __atomic_add_fetch(&duet_gate_state, 1, __ATOMIC_SEQ_CST);
		if ((s >> DUET_GATE_SHIFT) != DUET_GATE_READY || gate_drain_due()) {
			__atomic_sub_fetch(&duet_gate_state, 1, __ATOMIC_SEQ_CST);
			return res;
		}
	}
	DUET_RING("call");
	PyGILState_STATE st = PyGILState_LOCKED;
	if (attached)
		duet_depth++;
	else
		st = duet_enter();
	PyObject *o = duet_deref(r);
	if (!o) {
		res.status = DUET_CLOSED;
	} else {
		duet_mark_use(r);
		// The reference held for the call: the callee may close r (Go code it
		// calls) or release the GIL to a thread that does.
		Py_INCREF(o);
		PyObject *result;
		if (method) {
			// A method path, "a.b.m", as duet_call walks it.
			DUET_RING_WHAT(Py_TYPE(o)->tp_name, method, mlen);
			const char *last;
			int64_t ll;
			PyObject *recv = walk(o, method, mlen, &last, &ll);
			PyObject *name = recv ? attr_name(last, ll) : NULL;
			result = name ? PyObject_CallMethodNoArgs(recv, name) : NULL;
			Py_XDECREF(name);
			Py_XDECREF(recv);
		} else {
			if (duet_ring_cur) ring_callee(o);
			result = PyObject_CallNoArgs(o);
		}
		res.status = finish_call(result, &res.ref, &res.ref);
		Py_DECREF(o);
	}
	if (attached) {
		duet_depth--;
		duet_gc_poke();
	} else {
		duet_leave(st);
	}
	if (!counted) __atomic_sub_fetch(&duet_gate_state, 1, __ATOMIC_SEQ_CST);
	return res;
}

duet_res0 duet_call0(uintptr_t slot, uint64_t gen) { return call0(slot, gen, NULL, 0); }

duet_res0 duet_callm0(uintptr_t slot, uint64_t gen, const char *method, int64_t mlen) {
	return call0(slot, gen, method, mlen);
}

static int impl_getitem(duet_ref s, const duet_val *v, int64_t nv, const char *arena, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc;
	PyObject *k = duet_decode_one(v, nv, &pos, arena);
	if (!k) {
		rc = duet_decode_fail(exc);
	} else {
		rc = duet_finish(PyObject_GetItem(o, k), out, exc);
		Py_DECREF(k);
	}
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_setitem(duet_ref s, const duet_val *v, int64_t nv, const char *arena, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc = DUET_OK;
	PyObject *k = duet_decode_one(v, nv, &pos, arena);
	PyObject *val = k ? duet_decode(v, nv, &pos, arena, 0) : NULL;
	if (!k || !val) {
		rc = duet_decode_fail(exc);
	} else if (PyObject_SetItem(o, k, val) < 0) {
		rc = duet_fail(exc);
	}
	Py_XDECREF(k);
	Py_XDECREF(val);
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_delitem(duet_ref s, const duet_val *v, int64_t nv, const char *arena, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int64_t pos = 0;
	int rc = DUET_OK;
	PyObject *k = duet_decode_one(v, nv, &pos, arena);
	if (!k) {
		rc = duet_decode_fail(exc);
	} else {
		if (PyObject_DelItem(o, k) < 0) rc = duet_fail(exc);
		Py_DECREF(k);
	}
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_len(duet_ref s, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int rc = DUET_OK;
	Py_ssize_t l = PyObject_Length(o);
	if (l < 0)
		rc = duet_fail(exc);
	else
		res->n = l;
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

// Text results get their own per-thread buffer, so that str() and type
// names never overwrite a duet_to_vals encoding the caller is still reading.
static __thread char *textbuf;
static __thread int64_t textcap;

void duet_free_thread_buffers(void) {
	free(textbuf);
	textbuf = NULL;
	textcap = 0;
	duet_free_scratch();
}

static int text_copy(const char *s, int64_t l, duet_res *res) {
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
	res->p = textbuf;
	res->n = l;
	return 0;
}

static int text_out(PyObject *u, duet_res *res) {
	Py_ssize_t l;
	const char *s = PyUnicode_AsUTF8AndSize(u, &l);
	if (!s) return -1;
	return text_copy(s, l, res);
}

static int impl_str(duet_ref s, int repr, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int rc = DUET_OK;
	PyObject *u = repr ? PyObject_Repr(o) : PyObject_Str(o);
	if (!u || text_out(u, res) < 0) rc = duet_fail(exc);
	Py_XDECREF(u);
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_typename(duet_ref s, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	const char *n = Py_TYPE(o)->tp_name;
	int rc = DUET_OK;
	if (text_copy(n, strlen(n), res) < 0) {
		PyErr_Clear();
		rc = DUET_ERR;
	}
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_truth(duet_ref s, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int rc = DUET_OK;
	int t = PyObject_IsTrue(o);
	if (t < 0)
		rc = duet_fail(exc);
	else
		res->n = t;
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_is(duet_ref a, duet_ref b, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	if (!duet_deref(a) || !duet_deref(b))
		rc = DUET_CLOSED;
	else
		res->n = duet_deref(a) == duet_deref(b);
	duet_leave(st);
	return rc;
}

static int impl_isinstance(duet_ref s, duet_ref cls, duet_res *res) {
	duet_ref *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	if (!duet_deref(s) || !duet_deref(cls)) {
		duet_leave(st);
		return DUET_CLOSED;
	}
	PyObject *o = Py_NewRef(duet_deref(s)), *c = Py_NewRef(duet_deref(cls));
	int rc = DUET_OK;
	int t = PyObject_IsInstance(o, c);
	if (t < 0)
		rc = duet_fail(exc);
	else
		res->n = t;
	Py_DECREF(o);
	Py_DECREF(c);
	duet_leave(st);
	return rc;
}

static int impl_iter(duet_ref s, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(s, o);
	int rc = duet_finish(PyObject_GetIter(o), out, exc);
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_next(duet_ref it, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(it, o);
	int rc;
	if (!PyIter_Check(o)) {
		PyErr_Format(PyExc_TypeError, "'%.200s' object is not an iterator", Py_TYPE(o)->tp_name);
		rc = duet_fail(exc);
	} else {
		PyObject *r = PyIter_Next(o);
		if (!r && !PyErr_Occurred()) {
			rc = DUET_END;
		} else if (r == Py_None) {
			// None is a real item here, not the end: hand it out as a ref.
			*out = duet_new_ref(r);
			rc = out->s ? DUET_OK : duet_fail(exc);
		} else {
			rc = duet_finish(r, out, exc);
		}
	}
	Py_DECREF(o);
	duet_leave(st);
	return rc;
}

static int impl_run(const char *src, int64_t len, const char *filename, int mode, duet_ref globals, duet_res *res) {
	duet_ref *out = &res->ref, *exc = &res->ref;
	PyGILState_STATE st = duet_enter();
	TAKE(globals, g);
	int rc;
	if (!PyDict_Check(g)) {
		PyErr_SetString(PyExc_TypeError, "globals must be a dict");
		rc = duet_fail(exc);
	} else {
		// Compile from a NUL-terminated copy: source text may contain NUL
		// bytes, which the compiler rejects with a clear error instead of
		// silently stopping there.
		char *text = PyMem_Malloc(len + 1);
		if (!text) {
			PyErr_NoMemory();
			rc = duet_fail(exc);
		} else {
			if (len) memcpy(text, src, len); // src may be NULL for ""
			text[len] = 0;
			PyObject *code = NULL;
			if (len && memchr(src, 0, len)) {
				PyErr_SetString(PyExc_ValueError, "source code contains a NUL byte");
			} else {
				code = Py_CompileString(text, filename, mode == 0 ? Py_file_input : Py_eval_input);
			}
			PyMem_Free(text);
			PyObject *r = code ? PyEval_EvalCode(code, g, g) : NULL;
			Py_XDECREF(code);
			rc = duet_finish(r, out, exc);
		}
	}
	Py_DECREF(g);
	duet_leave(st);
	return rc;
}

static int impl_new_globals(duet_res *res) {
	duet_ref *out = &res->ref;
	PyGILState_STATE st = duet_enter();
	PyObject *d = PyDict_New();
	int rc = DUET_OK;
	if (!d || PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) < 0) {
		Py_XDECREF(d);
		PyErr_Clear();
		rc = DUET_ERR;
	} else {
		*out = duet_new_ref(d);
		if (!out->s) {
			PyErr_Clear();
			rc = DUET_ERR;
		}
	}
	duet_leave(st);
	return rc;
}

static int impl_singleton(int which, duet_res *res) {
	duet_ref *out = &res->ref;
	PyGILState_STATE st = duet_enter();
	*out = duet_new_ref(Py_NewRef(which == DUET_TRUE ? Py_True : which == DUET_FALSE ? Py_False : Py_None));
	int rc = out->s ? DUET_OK : DUET_ERR;
	PyErr_Clear();
	duet_leave(st);
	return rc;
}


// ---- the exported entry points -------------------------------------------------

DUET_ENTRY(import, (const char *name, int64_t len), (name, len, ))
DUET_ENTRY(getattr, (duet_ref r, const char *name, int64_t len), (r, name, len, ))
DUET_ENTRY(setattr, (duet_ref r, const char *name, int64_t len, const duet_val *v, int64_t nv, const char *arena),
           (r, name, len, v, nv, arena, ))
DUET_ENTRY(delattr, (duet_ref r, const char *name, int64_t len), (r, name, len, ))
DUET_ENTRY(hasattr, (duet_ref r, const char *name, int64_t len), (r, name, len, ))
DUET_ENTRY(call,
           (duet_ref r, const char *method, int64_t mlen, const duet_val *v, int64_t nv, const char *arena,
            int64_t nargs, int64_t nkw),
           (r, method, mlen, v, nv, arena, nargs, nkw, ))
DUET_ENTRY(getitem, (duet_ref r, const duet_val *v, int64_t nv, const char *arena), (r, v, nv, arena, ))
DUET_ENTRY(setitem, (duet_ref r, const duet_val *v, int64_t nv, const char *arena), (r, v, nv, arena, ))
DUET_ENTRY(delitem, (duet_ref r, const duet_val *v, int64_t nv, const char *arena), (r, v, nv, arena, ))
DUET_ENTRY(len, (duet_ref r), (r, ))
DUET_ENTRY(str, (duet_ref r, int repr), (r, repr, ))
DUET_ENTRY(typename, (duet_ref r), (r, ))
DUET_ENTRY(truth, (duet_ref r), (r, ))
DUET_ENTRY(is, (duet_ref a, duet_ref b), (a, b, ))
DUET_ENTRY(isinstance, (duet_ref r, duet_ref cls), (r, cls, ))
DUET_ENTRY(iter, (duet_ref r), (r, ))
DUET_ENTRY(next, (duet_ref it), (it, ))
DUET_ENTRY(run, (const char *src, int64_t len, const char *filename, int mode, duet_ref globals),
           (src, len, filename, mode, globals, ))
DUET_ENTRY(new_globals, (void), ())
DUET_ENTRY(singleton, (int which), (which, ))
