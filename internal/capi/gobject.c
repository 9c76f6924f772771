// gobject.c: one GObject seen from both sides. PyGObject's C API (the
// gi._gobject._PyGObject_API capsule) gives the Python wrapper of a GObject
// pointer; a wrapper's obj field gives the pointer back.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pygobject.h>

#include "_cgo_export.h"
#include "duet.h"
#include "gobject.h"

// Shared with duet.c (same GIL discipline): see duet.h.
extern PyGILState_STATE duet_enter(void);
extern void duet_leave(PyGILState_STATE st);
extern duet_ref duet_new_ref(PyObject *owned);
extern PyObject *duet_deref(duet_ref r);
extern int duet_fail(duet_ref *exc);

static int pygobject_ready; // GIL-protected

static int ensure_pygobject(void) {
	if (pygobject_ready) return 0;
	PyObject *m = pygobject_init(-1, -1, -1);
	if (!m) return -1;
	Py_DECREF(m);
	pygobject_ready = 1;
	return 0;
}

duet_res duet_gobject_pointer(duet_ref r) {
	duet_res res = {0};
	PyGILState_STATE st = duet_enter();
	PyObject *o = duet_deref(r);
	if (!o) {
		res.status = DUET_CLOSED;
	} else if (ensure_pygobject() < 0) {
		res.status = duet_fail(&res.ref);
	} else if (!PyObject_TypeCheck(o, &PyGObject_Type)) {
		PyErr_Format(PyExc_TypeError, "'%.200s' object is not a GObject", Py_TYPE(o)->tp_name);
		res.status = duet_fail(&res.ref);
	} else if (!pygobject_get(o)) {
		PyErr_SetString(PyExc_TypeError, "the GObject wrapper is not initialised (was __init__ called?)");
		res.status = duet_fail(&res.ref);
	} else {
		// Borrowed: valid while the wrapper (which holds a reference) lives.
		res.p = pygobject_get(o);
		// n: whether the wrapper holds a toggle reference (PyGObject does for
		// Python subclasses and wrappers carrying instance data).
		res.n = (((PyGObject *)o)->private_flags.flags & PYGOBJECT_USING_TOGGLE_REF) != 0;
	}
	duet_leave(st);
	return res;
}

duet_res duet_gobject_wrap(uintptr_t gobj) {
	duet_res res = {0};
	PyGILState_STATE st = duet_enter();
	if (ensure_pygobject() < 0) {
		res.status = duet_fail(&res.ref);
	} else {
		// pygobject_new returns the object's existing wrapper when there is
		// one (identity is kept), else a new one holding its own reference.
		PyObject *w = pygobject_new((GObject *)gobj);
		if (!w) {
			res.status = duet_fail(&res.ref);
		} else {
			res.ref = duet_new_ref(w);
			res.status = res.ref.s ? DUET_OK : duet_fail(&res.ref);
		}
	}
	duet_leave(st);
	return res;
}

// ---- finalisation watch -------------------------------------------------------

static void finalized(gpointer data, GObject *where_the_object_was) {
	duetGObjectFinalized((uintptr_t)data);
}

void duet_gobject_watch(uintptr_t gobj, uintptr_t handle) { g_object_weak_ref((GObject *)gobj, finalized, (gpointer)handle); }

int duet_gobject_refcount(uintptr_t gobj) { return (int)g_atomic_int_get(&((GObject *)gobj)->ref_count); }

const char *duet_gobject_type_name(uintptr_t gobj) { return G_OBJECT_TYPE_NAME((GObject *)gobj); }

// ---- releasing gotk4's toggle references ------------------------------------------
//
// gotk4 v0.2.2 adds a toggle reference (notify goToggleNotify, data NULL) for
// every GObject it wraps and, once it has lost the Go side of the object,
// never removes it: the object can then never be finalised. duet's widgets
// package removes such references itself, only for objects gotk4 no longer
// knows (see widgets/lifetime.go). The symbol is weak so that binaries that
// do not link gotk4 still link.
extern void goToggleNotify(gpointer, GObject *, gboolean) __attribute__((weak));

int duet_gotk4_release(uintptr_t gobj, int n) {
	if (!goToggleNotify) return -1;
	for (int i = 0; i < n; i++) g_object_remove_toggle_ref((GObject *)gobj, (GToggleNotify)goToggleNotify, NULL);
	return 0;
}
