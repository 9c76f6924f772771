// callbacks.c: Go functions as Python callables. See duet.h for the
// lifetime contract; this file keeps it.
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"
#include "duet_impl.h"

#define HANDLE_CAPSULE "duet.gohandle"

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
	DUET_RING("callback freed by Python");
	DUET_RING_WHAT(cb->def.ml_name, NULL, 0);
	duet_callback_retire(cb, 0);
	duetCallbackRelease(h);
}

// The one C entry point of every Go callback (METH_FASTCALL|METH_KEYWORDS).
// Arguments are lent to Go in borrowed slots that are released (generation
// bumped, no decref) when Go returns: a Go Object kept past the call reads as
// closed, never as freed memory.
static PyObject *cb_trampoline(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
	duet_cb *cb = PyCapsule_GetPointer(self, CB_CAPSULE);
	if (!cb) return NULL;
	DUET_RING("Python calls Go");
	DUET_RING_WHAT(cb->def.ml_name, NULL, 0);
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	Py_ssize_t total = nargs + nkw;
	duet_ref small[8];
	duet_ref *refs = small;
	if (total > 8) {
		refs = PyMem_Malloc(total * sizeof(duet_ref));
		if (!refs) return PyErr_NoMemory();
	}
	Py_ssize_t lent = 0;
	duet_ref kw = duet_no_ref;
	PyObject *res = NULL;
	for (; lent < total; lent++) {
		duet_slot *s = duet_slot_get();
		if (!s) {
			PyErr_NoMemory();
			goto done;
		}
		s->ob = (PyObject *)args[lent];
		refs[lent] = (duet_ref){s, s->gen};
	}
	if (nkw) {
		duet_slot *s = duet_slot_get();
		if (!s) {
			PyErr_NoMemory();
			goto done;
		}
		s->ob = kwnames;
		kw = (duet_ref){s, s->gen};
	}
	duet_ref result = duet_no_ref;
	// Go runs attached: its pygi operations nest inside this call, and the
	// references they use are marked as this callback's.
	duet_depth++;
	uintptr_t outer = duet_current_cb;
	duet_current_cb = cb->handle;
	int rc = duetCallbackInvoke(cb->handle, refs, nargs, nkw, kw, &result);
	duet_current_cb = outer;
	duet_depth--;
	if (rc == -2) duet_callback_gone(cb->handle, NULL, NULL, 0); // Python called it
	if (rc == 0) {
		res = duet_deref(result);
		if (res) {
			duet_slot_put(result.s); // the reference moves to our caller
		} else if (!PyErr_Occurred()) {
			PyErr_SetString(PyExc_SystemError, "duet: callback returned a stale result");
		}
	} else if (rc == 1) {
		res = Py_NewRef(Py_None);
	} else if (!PyErr_Occurred()) {
		PyErr_SetString(PyExc_SystemError, "duet: callback failed without setting an exception");
	}
done:
	for (Py_ssize_t j = 0; j < lent; j++) duet_slot_put(refs[j].s);
	if (kw.s) duet_slot_put(kw.s);
	if (refs != small) PyMem_Free(refs);
	return res;
}

PyObject *duet_callback_make(uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen,
                             const char *module, int64_t mlen, int flags, void **native) {
	*native = NULL;
	// One allocation holds the state, the name and the doc (NUL-terminated
	// copies: the Go strings are only valid during this call).
	size_t size = sizeof(duet_cb) + nlen + 1 + (doc ? dlen + 1 : 0);
	duet_cb *cb = calloc(1, size);
	if (!cb) return PyErr_NoMemory();
	cb->handle = handle;
	cb->flags = flags;
	cb->size = size;
	if (nlen) memcpy(cb->text, name, nlen); // Go's "" may come as NULL
	if (doc && dlen) memcpy(cb->text + nlen + 1, doc, dlen);
	cb->def.ml_name = cb->text;
	cb->def.ml_meth = (PyCFunction)(void (*)(void))cb_trampoline;
	cb->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
	cb->def.ml_doc = doc ? cb->text + nlen + 1 : NULL;
	// In the broken mode the capsule has no destructor: Go's GC frees the
	// native state instead (duet_callback_free_native), whatever Python holds.
	PyObject *cap = PyCapsule_New(cb, CB_CAPSULE, (flags & DUET_CB_BROKEN) ? NULL : cb_capsule_destructor);
	if (!cap) {
		free(cb);
		return NULL;
	}
	PyObject *mod = NULL;
	if (module) {
		mod = PyUnicode_DecodeUTF8(module, mlen, "strict");
		if (!mod) { // an error, not a callback with an exception left set
			Py_DECREF(cap); // the destructor gives the handle back (broken mode: none ran)
			if (flags & DUET_CB_BROKEN) free(cb);
			return NULL;
		}
	}
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
	return fn;
}

static int impl_callback_new(uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen,
                             const char *module, int64_t mlen, int flags, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	PyObject *fn = duet_callback_make(handle, name, nlen, doc, dlen, module, mlen, flags, &res->p);
	int rc = duet_finish(fn, &res->ref, &res->ref); // res->p: for duet_callback_free_native
	duet_leave(st);
	return rc;
}

void duet_callback_free_native(void *native) {
	duet_cb *cb = native;
	DUET_RING("callback freed by the Go GC");
	DUET_RING_WHAT(cb->def.ml_name, NULL, 0);
	duet_callback_retire(cb, 1);
}

static void handle_capsule_destructor(PyObject *cap) {
	void *p = PyCapsule_GetPointer(cap, HANDLE_CAPSULE);
	if (!p) {
		PyErr_Clear();
		return;
	}
	duetHandleRelease((uintptr_t)p);
}

static int impl_handle_capsule(uintptr_t handle, duet_res *res) {
	duet_ref *out = &res->ref;
	PyGILState_STATE st = duet_enter();
	PyObject *cap = PyCapsule_New((void *)handle, HANDLE_CAPSULE, handle_capsule_destructor);
	int rc = DUET_ERR;
	if (cap) {
		*out = duet_new_ref(cap);
		if (out->s) rc = DUET_OK;
	}
	PyErr_Clear();
	duet_leave(st);
	return rc;
}

uintptr_t duet_capsule_handle(duet_ref r) {
	PyGILState_STATE st = duet_enter();
	PyObject *o = duet_deref(r);
	uintptr_t h = 0;
	if (o && PyCapsule_IsValid(o, HANDLE_CAPSULE)) h = (uintptr_t)PyCapsule_GetPointer(o, HANDLE_CAPSULE);
	duet_leave(st);
	return h;
}

// duet_raise_owned raises the exception exc designates and releases exc's
// slot (its reference) in the same crossing: nothing else runs between the
// two, so no release can run Python code with the exception pending.
int duet_raise_owned(duet_ref exc) {
	PyGILState_STATE st = duet_enter();
	PyObject *e = duet_deref(exc);
	int rc = DUET_CLOSED;
	if (e) {
		PyErr_SetObject((PyObject *)Py_TYPE(e), e);
		duet_slot_put(exc.s);
		Py_DECREF(e); // PyErr_SetObject holds its own reference: e lives on
		rc = DUET_OK;
	}
	duet_leave(st);
	return rc;
}

void duet_raise_msg(int kind, const char *msg, int64_t len) {
	PyGILState_STATE st = duet_enter();
	PyObject *type = kind == 0 ? PyExc_TypeError : kind == 1 ? PyExc_RuntimeError : PyExc_SystemError;
	PyObject *m = PyUnicode_DecodeUTF8(msg, len, "replace");
	if (m) {
		PyErr_SetObject(type, m);
		Py_DECREF(m);
	}
	duet_leave(st);
}

// What a bare Go handler raised (see gobject.c): printed and cleared, as
// PyGObject's marshaller prints what a Python handler raised. Attached.
void duet_print_raised(void) {
	PyGILState_STATE st = duet_enter();
	if (PyErr_Occurred()) PyErr_Print();
	duet_leave(st);
}

DUET_ENTRY(callback_new,
           (uintptr_t handle, const char *name, int64_t nlen, const char *doc, int64_t dlen, const char *module,
            int64_t mlen, int flags),
           (handle, name, nlen, doc, dlen, module, mlen, flags, ))
DUET_ENTRY(handle_capsule, (uintptr_t handle), (handle, ))

// duet_is_callback: whether r is a Go callback made by duet (its __self__ is
// one of our capsules).
int duet_is_callback(duet_ref r) {
	PyGILState_STATE st = duet_enter();
	PyObject *o = duet_deref(r);
	int yes = 0;
	if (o && PyCFunction_Check(o)) {
		PyObject *self = PyCFunction_GET_SELF(o);
		yes = self && PyCapsule_IsValid(self, CB_CAPSULE);
	}
	duet_leave(st);
	return yes;
}

// duet_callback_handle: the Go handle of a duet callback, or 0.
uintptr_t duet_callback_handle(duet_ref r) {
	PyGILState_STATE st = duet_enter();
	PyObject *o = duet_deref(r);
	uintptr_t h = 0;
	if (o && PyCFunction_Check(o)) {
		PyObject *self = PyCFunction_GET_SELF(o);
		if (self && PyCapsule_IsValid(self, CB_CAPSULE)) h = ((duet_cb *)PyCapsule_GetPointer(self, CB_CAPSULE))->handle;
	}
	duet_leave(st);
	return h;
}
