// gobject.c: one GObject seen from both sides. PyGObject's C API (the
// gi._gobject._PyGObject_API capsule) gives the Python wrapper of a GObject
// pointer; a wrapper's obj field gives the pointer back.
#include "duet_impl.h"

#include <pygobject.h>

#include "_cgo_export.h"
#include "gobject.h"

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

// Finalisation is observed through object data with a destroy notify, not
// through g_object_weak_ref: GLib notifies weak references at dispose,
// which GTK may run on an object that then lives on, while object data is
// cleared only when the object is really finalised. One datum per object
// holds every watch on it (a quark per watch would never be freed).
static void finalized(gpointer data) {
	GArray *handles = data;
	for (guint i = 0; i < handles->len; i++) duetGObjectFinalized(g_array_index(handles, uintptr_t, i));
	g_array_free(handles, TRUE);
}

void duet_gobject_watch(uintptr_t gobj, uintptr_t handle) {
	static GQuark q;
	if (!q) q = g_quark_from_static_string("duet-finalize-watches");
	GArray *handles = g_object_get_qdata((GObject *)gobj, q);
	if (!handles) {
		handles = g_array_new(FALSE, FALSE, sizeof(uintptr_t));
		g_object_set_qdata_full((GObject *)gobj, q, handles, finalized);
	}
	g_array_append_val(handles, handle);
}

int duet_gobject_refcount(uintptr_t gobj) { return (int)g_atomic_int_get(&((GObject *)gobj)->ref_count); }

const char *duet_gobject_type_name(uintptr_t gobj) { return G_OBJECT_TYPE_NAME((GObject *)gobj); }

// ---- releasing gotk4's toggle references ------------------------------------------
//
// gotk4 v0.2.2 adds a toggle reference (notify goToggleNotify, data NULL) for
// every GObject it wraps and, once it has lost the Go side of the object,
// never removes it. duet's widgets package releases those references itself
// (see widgets/lifetime.go for when that is safe). It counts them exactly,
// from GLib's own toggle-reference record: with GLib 2.74 that record is
// {GObject *object; guint n; {notify, data} refs[]} under the quark
// "GObject-toggle-references". The object field is checked against the
// object, so a GLib with another layout is detected and nothing is released.
// The symbol is weak so that binaries that do not link gotk4 still link.
extern void goToggleNotify(gpointer, GObject *, gboolean) __attribute__((weak));

typedef struct {
	GObject *object;
	guint n_toggle_refs;
	struct {
		GToggleNotify notify;
		gpointer data;
	} toggle_refs[1];
} duet_toggle_stack;

// count_gotk4 returns the number of gotk4's toggle references on obj, or -2
// when the record is not laid out as expected.
static int count_gotk4(GObject *obj) {
	duet_toggle_stack *s = g_object_get_qdata(obj, g_quark_from_static_string("GObject-toggle-references"));
	if (!s) return 0;
	if (s->object != obj || s->n_toggle_refs > 64) return -2; // not the layout we know
	int n = 0;
	for (guint i = 0; i < s->n_toggle_refs; i++)
		if (s->toggle_refs[i].notify == (GToggleNotify)goToggleNotify && s->toggle_refs[i].data == NULL) n++;
	return n;
}

// Who may change an object's toggle references while they are counted and
// removed here: gotk4 (intern.Get, and the removal finalizeBox queues on the
// default main context), and PyGObject (switching a wrapper to a toggle
// reference and back). GLib's own lock for the record is private, so this
// runs on the UI thread, where duet confines every gotk4 wrap it makes and
// where the main context dispatches gotk4's queued removals, and attached to
// Python, which excludes PyGObject's changes (they happen under the GIL).
// The count and the removal are one step: nothing can add a reference in
// between that would then be removed by mistake.
int duet_gotk4_release_all(uintptr_t gobj) {
	if (!goToggleNotify) return -1;
	GObject *obj = (GObject *)gobj;
	PyGILState_STATE st = duet_enter();
	int n = count_gotk4(obj);
	// May finalise obj: its dispose can run Python code (we are attached)
	// and GTK code (we are on the UI thread).
	for (int i = 0; i < n; i++) g_object_remove_toggle_ref(obj, (GToggleNotify)goToggleNotify, NULL);
	duet_leave(st);
	return n;
}

int duet_gotk4_toggles(uintptr_t gobj) {
	if (!goToggleNotify) return -1;
	PyGILState_STATE st = duet_enter();
	int n = count_gotk4((GObject *)gobj);
	duet_leave(st);
	return n;
}

// duet_toggle_layout_known checks, once, on an object of our own, that GLib
// keeps toggle references in the record this file reads: an object with
// one toggle reference of a known notify must show exactly that.
static void probe_notify(gpointer data, GObject *obj, gboolean is_last) {}

int duet_toggle_layout_known(void) {
	GObject *obj = g_object_new(G_TYPE_OBJECT, NULL);
	g_object_add_toggle_ref(obj, probe_notify, (gpointer)obj);
	g_object_unref(obj); // the toggle reference is now the only one
	duet_toggle_stack *s = g_object_get_qdata(obj, g_quark_from_static_string("GObject-toggle-references"));
	int ok = s && s->object == obj && s->n_toggle_refs == 1 && s->toggle_refs[0].notify == probe_notify &&
	         s->toggle_refs[0].data == (gpointer)obj;
	g_object_remove_toggle_ref(obj, probe_notify, (gpointer)obj); // the last reference: obj is finalised
	return ok;
}

// ---- a fresh idle, after the ones already queued --------------------------------
//
// GLib dispatches the ready sources of one priority in the order they were
// attached, so a default-priority idle attached now runs after every
// default-priority idle attached before it (g_main_context_invoke from
// another thread queues exactly such idles). A lower priority would be
// starved while the loop is busy.

static gboolean idle_after(gpointer data) {
	duetIdleAfter();
	return G_SOURCE_REMOVE;
}

void duet_idle_after(void) { g_idle_add_full(G_PRIORITY_DEFAULT, idle_after, NULL, NULL); }

// ---- weak references to GObjects ----------------------------------------------------
//
// A GWeakRef (C memory, owned by the Go WeakRef that made it) does not keep
// the object alive, is thread-safe, and is cleared by GLib when the object
// is finalised. Get hands out PyGObject's wrapper (a new reference) while
// the object lives.

void *duet_weak_new(uintptr_t gobj) {
	GWeakRef *w = g_new0(GWeakRef, 1);
	g_weak_ref_init(w, (GObject *)gobj);
	return w;
}

duet_res duet_weak_get(void *weak) {
	duet_res res = {0};
	GObject *o = g_weak_ref_get((GWeakRef *)weak); // a strong reference, or NULL
	if (!o) {
		res.status = DUET_NONE;
		return res;
	}
	PyGILState_STATE st = duet_enter();
	if (ensure_pygobject() < 0) {
		res.status = duet_fail(&res.ref);
	} else {
		PyObject *w = pygobject_new(o);
		if (!w) {
			res.status = duet_fail(&res.ref);
		} else {
			res.ref = duet_new_ref(w);
			res.status = res.ref.s ? DUET_OK : duet_fail(&res.ref);
		}
	}
	duet_leave(st);
	g_object_unref(o); // the wrapper holds its own
	return res;
}

// duet_weak_free: any thread; never touches Python (a GC cleanup calls it).
void duet_weak_free(void *weak) {
	g_weak_ref_clear((GWeakRef *)weak);
	g_free(weak);
}

// ---- which GObjects Go callbacks hold ------------------------------------------------

typedef struct {
	uintptr_t *out;     // pairs: callback handle, GObject*
	const char **names; // and each one's type name
	int n, max;
} used_acc;

static void collect_used(PyObject *ob, uintptr_t used_by, void *data) {
	used_acc *a = data;
	if (a->n >= a->max || !PyObject_TypeCheck(ob, &PyGObject_Type) || !pygobject_get(ob)) return;
	GObject *g = pygobject_get(ob);
	a->out[2 * a->n] = used_by;
	a->out[2 * a->n + 1] = (uintptr_t)g;
	// The type's name now, while the slot keeps the object alive: GLib's
	// type names live as long as the process, the object may not.
	a->names[a->n] = G_OBJECT_TYPE_NAME(g);
	a->n++;
}

// duet_used_gobjects fills out with up to max (callback handle, GObject*)
// pairs and names with their type names: GObjects that Go holds references
// to and that a Go callback used while it ran. Returns how many.
int duet_used_gobjects(uintptr_t *out, const char **names, int max) {
	PyGILState_STATE st = duet_enter();
	used_acc a = {out, names, 0, max};
	if (ensure_pygobject() == 0) duet_slot_walk(collect_used, &a);
	else PyErr_Clear();
	duet_leave(st);
	return a.n;
}

// ---- Go handlers on signals, natively --------------------------------------------------
//
// A Go callback connected to a GObject signal without extra data runs
// through this GClosure instead of PyGObject's: GLib calls closure_marshal,
// which makes Python objects of only the arguments the Go function takes
// (nargs, known at connect time: a handler that does not take the emitter
// gets none made), lends them to Go in the same crossing the trampoline
// uses (duetCallbackInvoke), and sets the return value. No argument tuple,
// no Python call of the callback. The lifetime contract is the same: the
// closure holds a reference to the callback (the capsule-owned function),
// dropped when GLib invalidates the closure (disconnect, or the object's
// finalisation), which is when Python lets go of it. The Go handle is read
// from the callback's capsule on every emission, exactly as the trampoline
// does, so the deliberately broken ownership mode still breaks here.

typedef struct {
	GClosure closure;
	PyObject *callable; // owned; NULL once invalidated
	int nargs;          // how many of the signal's values the Go function takes; -1: all
} duet_closure;

static void closure_invalidate_in(gpointer data, GClosure *closure) {
	duet_closure *c = (duet_closure *)closure;
	if (!c->callable) return;
	if (!duet_python_usable()) { // gone (or going) with the interpreter
		c->callable = NULL;
		return;
	}
	PyGILState_STATE st = duet_enter();
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	Py_CLEAR(c->callable); // may free the callback: its capsule gives the handle back
	PyErr_Restore(t, v, tb);
	duet_leave(st);
}

static void closure_marshal_in(GClosure *closure, GValue *ret, guint n, const GValue *params, gpointer hint,
                               gpointer marshal_data) {
	duet_closure *c = (duet_closure *)closure;
	if (!duet_python_usable() || !c->callable) return;
	PyGILState_STATE st = duet_enter();
	PyObject *fn = c->callable;
	if (!fn) {
		duet_leave(st);
		return;
	}
	Py_INCREF(fn);
	duet_cb *cb = PyCapsule_GetPointer(PyCFunction_GET_SELF(fn), CB_CAPSULE);
	// What forensics wants to know (the signal's name takes GLib's signal
	// lock, the emitter's type a type check): looked up only when it is
	// wanted, never on the plain path.
	DUET_RING("signal calls Go");
	if ((cb && (cb->flags & DUET_CB_DEAD)) || duet_ring_cur) {
		GObject *inst = n > 0 && G_VALUE_HOLDS_OBJECT(&params[0]) ? g_value_get_object(&params[0]) : NULL;
		const char *signame = hint ? g_signal_name(((GSignalInvocationHint *)hint)->signal_id) : NULL;
		if (cb && (cb->flags & DUET_CB_DEAD))
			duet_callback_dead(cb, signame, inst ? G_OBJECT_TYPE_NAME(inst) : NULL, (uintptr_t)inst);
		if (cb) DUET_RING_WHAT(cb->def.ml_name, signame, SIZE_MAX);
		if (inst) DUET_RING_MORE(G_OBJECT_TYPE_NAME(inst));
	}
	int k = c->nargs < 0 ? (int)n : c->nargs;
	// The arguments are made here and owned here (objs); Go borrows them
	// through slots that live for this call only, as in the trampoline.
	PyObject *small_objs[8], **objs = small_objs;
	duet_ref small_refs[8], *refs = small_refs;
	int made = 0;
	if (!cb) goto out;
	if (k > (int)n) {
		PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments but the signal gives %u", cb->def.ml_name, k,
		             n);
		goto out;
	}
	if (k > 8) {
		objs = PyMem_Malloc(k * sizeof(PyObject *));
		refs = PyMem_Malloc(k * sizeof(duet_ref));
		if (!objs || !refs) {
			PyErr_NoMemory();
			goto out;
		}
	}
	for (; made < k; made++) {
		duet_slot *s = duet_slot_get();
		if (!s) {
			PyErr_NoMemory();
			goto out;
		}
		PyObject *o = pyg_value_as_pyobject(&params[made], FALSE);
		if (!o) {
			duet_slot_put(s);
			goto out;
		}
		objs[made] = s->ob = o;
		refs[made] = (duet_ref){s, s->gen};
	}
	duet_ref result = duet_no_ref;
	uintptr_t outer = duet_current_cb;
	duet_current_cb = cb->handle; // duet_enter counted the attach
	int rc = duetCallbackInvoke(cb->handle, refs, k, 0, duet_no_ref, &result);
	duet_current_cb = outer;
	PyObject *r = NULL;
	if (rc == 0) {
		r = duet_deref(result);
		if (r) {
			duet_slot_put(result.s); // ours now
		} else if (!PyErr_Occurred()) {
			PyErr_SetString(PyExc_SystemError, "duet: callback returned a stale result");
		}
	} else if (rc == 1) {
		r = Py_NewRef(Py_None);
	} else if (!PyErr_Occurred()) {
		PyErr_SetString(PyExc_SystemError, "duet: callback failed without setting an exception");
	}
	if (r) {
		// None for a boolean return is False, as under PyGObject.
		if (ret && G_IS_VALUE(ret) && pyg_value_from_pyobject(ret, r) != 0 && !PyErr_Occurred())
			PyErr_Format(PyExc_TypeError, "%s(): cannot convert the return value to %s", cb->def.ml_name,
			             G_VALUE_TYPE_NAME(ret));
		Py_DECREF(r);
	}
out:
	for (int j = 0; j < made; j++) {
		duet_slot_put(refs[j].s);
		Py_DECREF(objs[j]);
	}
	if (objs != small_objs) PyMem_Free(objs);
	if (refs != small_refs) PyMem_Free(refs);
	// What the handler raised is printed (through sys.excepthook), as
	// PyGObject's marshaller does; the emission goes on.
	if (PyErr_Occurred()) PyErr_Print();
	Py_DECREF(fn);
	duet_leave(st);
}

// GLib runs these on any thread: counted in flight, so that finalisation
// waits for them, and refused on other threads once it has begun.
static void closure_invalidate(gpointer data, GClosure *closure) {
	if (!duet_glib_enter()) {
		((duet_closure *)closure)->callable = NULL; // gone with the interpreter
		return;
	}
	closure_invalidate_in(data, closure);
	duet_glib_exit();
}

static void closure_marshal(GClosure *closure, GValue *ret, guint n, const GValue *params, gpointer hint,
                            gpointer marshal_data) {
	if (!duet_glib_enter()) return;
	closure_marshal_in(closure, ret, n, params, hint, marshal_data);
	duet_glib_exit();
}

// connect_closure connects fn (a duet callback whose Go function takes
// nargs values, -1 for all) to the signal sig of the GObject wrapper obj;
// 0, *id and the GObject in *gobj (borrowed: obj holds it), or -1 with an
// exception set. GIL held.
static int connect_closure(PyObject *obj, const char *sig, int64_t slen, PyObject *fn, int after, int nargs,
                           uint64_t *id, void **gobj) {
	if (ensure_pygobject() < 0) return -1;
	if (!PyObject_TypeCheck(obj, &PyGObject_Type) || !pygobject_get(obj)) {
		PyErr_SetString(PyExc_TypeError, "connect: not a GObject");
		return -1;
	}
	GObject *g = pygobject_get(obj);
	char *name = g_strndup(sig, slen);
	guint sid;
	GQuark detail;
	int rc = 0;
	if (!g_signal_parse_name(name, G_OBJECT_TYPE(g), &sid, &detail, TRUE)) {
		PyErr_Format(PyExc_TypeError, "%s: unknown signal name: %s", G_OBJECT_TYPE_NAME(g), name);
		rc = -1;
	} else {
		GClosure *closure = g_closure_new_simple(sizeof(duet_closure), NULL);
		((duet_closure *)closure)->callable = Py_NewRef(fn); // the connection's reference
		((duet_closure *)closure)->nargs = nargs;
		g_closure_add_invalidate_notifier(closure, NULL, closure_invalidate);
		g_closure_set_marshal(closure, closure_marshal);
		*id = g_signal_connect_closure_by_id(g, sid, detail, closure, after != 0);
		*gobj = g;
	}
	g_free(name);
	return rc;
}

// impl_connect_native connects an existing callback; res->n is the id,
// res->p the GObject.
static int impl_connect_native(duet_ref objr, const char *sig, int64_t slen, duet_ref fnr, int after, int nargs,
                               duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	PyObject *obj = duet_deref(objr), *fn = duet_deref(fnr);
	uint64_t id = 0;
	if (!obj || !fn) {
		rc = DUET_CLOSED;
	} else if (connect_closure(obj, sig, slen, fn, after, nargs, &id, &res->p) < 0) {
		rc = duet_fail(&res->ref);
	}
	res->n = id;
	duet_leave(st);
	return rc;
}
DUET_ENTRY(connect_native, (duet_ref obj, const char *sig, int64_t slen, duet_ref fn, int after, int nargs),
           (obj, sig, slen, fn, after, nargs, ))

// impl_connect_new makes the callback for a Go handle and connects it in
// one crossing: the connection holds the only reference, so disconnecting
// frees it. res->n is the id, res->p the GObject.
static int impl_connect_new(duet_ref objr, const char *sig, int64_t slen, uintptr_t handle, const char *name,
                            int64_t nlen, const char *doc, int64_t dlen, const char *module, int64_t mlen, int after,
                            int nargs, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	PyObject *obj = duet_deref(objr);
	uint64_t id = 0;
	void *native;
	if (!obj) {
		rc = DUET_CLOSED;
	} else {
		PyObject *fn = duet_callback_make(handle, name, nlen, doc, dlen, module, mlen, 0, &native);
		if (!fn || connect_closure(obj, sig, slen, fn, after, nargs, &id, &res->p) < 0) rc = duet_fail(&res->ref);
		Py_XDECREF(fn); // on failure this frees it, and the handle goes back to Go
	}
	res->n = id;
	duet_leave(st);
	return rc;
}
DUET_ENTRY(connect_new,
           (duet_ref obj, const char *sig, int64_t slen, uintptr_t handle, const char *name, int64_t nlen,
            const char *doc, int64_t dlen, const char *module, int64_t mlen, int after, int nargs),
           (obj, sig, slen, handle, name, nlen, doc, dlen, module, mlen, after, nargs, ))

// impl_disconnect disconnects handler id from the GObject wrapper obj;
// res->n is 1, or 0 when no such handler is connected (GLib would only
// warn).
static int impl_disconnect(duet_ref objr, uint64_t id, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	PyObject *obj = duet_deref(objr);
	res->n = 0;
	if (!obj) {
		rc = DUET_CLOSED;
	} else if (ensure_pygobject() < 0) {
		rc = duet_fail(&res->ref);
	} else if (!PyObject_TypeCheck(obj, &PyGObject_Type) || !pygobject_get(obj)) {
		PyErr_SetString(PyExc_TypeError, "disconnect: not a GObject");
		rc = duet_fail(&res->ref);
	} else if (id && id <= G_MAXULONG && g_signal_handler_is_connected(pygobject_get(obj), (gulong)id)) {
		// Disconnecting may free the callback (and with it Go's handle):
		// the invalidate notifier does that under the GIL we hold.
		g_signal_handler_disconnect(pygobject_get(obj), (gulong)id);
		res->n = 1;
	}
	duet_leave(st);
	return rc;
}
DUET_ENTRY(disconnect, (duet_ref obj, uint64_t id), (obj, id, ))

// ---- releases off the UI thread, after the loop ---------------------------------

// duet_drain_off_ui releases, on a thread other than the UI thread once the
// loop has returned, every reference whose release cannot finalise a GTK
// object: all but the last reference to a GObject's wrapper (those might,
// and GTK allows that only on its own thread). What it keeps stays in refs,
// moved to the front; it returns how many it kept. A PyGObject not yet
// loaded means no GObject wrapper exists.
int64_t duet_drain_off_ui(duet_ref *refs, int64_t n) {
	PyGILState_STATE st = duet_enter();
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	int gi = pygobject_ready || PyDict_GetItemString(PyImport_GetModuleDict(), "gi._gi") != NULL;
	if (gi && !pygobject_ready && ensure_pygobject() < 0) {
		PyErr_Clear();
		gi = 0;
	}
	int64_t kept = 0;
	for (int64_t j = 0; j < n; j++) {
		PyObject *o = duet_deref(refs[j]);
		if (!o) continue;
		if (gi && Py_REFCNT(o) == 1 && PyObject_TypeCheck(o, &PyGObject_Type)) {
			refs[kept++] = refs[j];
			continue;
		}
		duet_slot_put(refs[j].s);
		Py_DECREF(o);
	}
	PyErr_Restore(t, v, tb);
	duet_leave(st);
	return kept;
}
