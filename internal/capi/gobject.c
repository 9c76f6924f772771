// gobject.c: one GObject seen from both sides. PyGObject's C API (the
// gi._gobject._PyGObject_API capsule) gives the Python wrapper of a GObject
// pointer; a wrapper's obj field gives the pointer back.
#include "duet_impl.h"

#include <math.h>
#include <string.h>
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
	int lazy = duet_lazy_pause(); // a finalisation is no lazy handler's use of Python
	for (guint i = 0; i < handles->len; i++) duetGObjectFinalized(g_array_index(handles, uintptr_t, i));
	duet_lazy_resume(lazy);
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

// gotk4's signal closures. Each Go handler gotk4 connects is a GClosure
// that gotk4 watches on the object (g_object_watch_closure) and that has
// one of these finalize notifiers; its Go function lives in gotk4's box for
// the object. duet releases gotk4's toggle references once that box is
// gone, so from then on such a closure has nothing to call: gotk4's
// trampoline panics ("given unknown closure user_data"), inside GLib's
// emission, when the signal fires, and the release itself can make it
// fire (a widget's dispose emits destroy, unrealize, notify). So the
// closures are invalidated, which disconnects them, before the release.
// GLib keeps watched closures in {GObject *object; guint n; GClosure
// *closures[]} under "GObject-closure-array" (gobject.c says the layout
// stays until it supplies an accessor); the object field is checked.
extern void _gotk4_removeClosure(GObject *, GClosure *) __attribute__((weak));
extern void _gotk4_removeGeneratedClosure(guintptr, GClosure *) __attribute__((weak));

typedef struct {
	GObject *object;
	guint n_closures;
	GClosure *closures[1];
} duet_closure_array;

static int is_gotk4_closure(GClosure *c) {
	guint n = (c->n_guards << 1) + c->n_fnotifiers + c->n_inotifiers;
	for (guint i = 0; i < n; i++) {
		GClosureNotify f = c->notifiers[i].notify;
		if ((_gotk4_removeClosure && f == (GClosureNotify)_gotk4_removeClosure) ||
		    (_gotk4_removeGeneratedClosure && f == (GClosureNotify)_gotk4_removeGeneratedClosure))
			return 1;
	}
	return 0;
}

// invalidate_gotk4_closures disconnects gotk4's dead closures on obj and
// returns how many; -2 when the record is not laid out as expected.
static int invalidate_gotk4_closures(GObject *obj) {
	duet_closure_array *a = g_object_get_qdata(obj, g_quark_from_static_string("GObject-closure-array"));
	if (!a) return 0;
	if (a->object != obj || a->n_closures > (1u << 20)) return -2;
	// Invalidating one removes it from the array: pick them first.
	GClosure *stack[16], **dead = a->n_closures <= 16 ? stack : g_new(GClosure *, a->n_closures);
	guint n = 0;
	for (guint i = 0; i < a->n_closures; i++)
		if (is_gotk4_closure(a->closures[i])) dead[n++] = g_closure_ref(a->closures[i]);
	for (guint i = 0; i < n; i++) {
		g_closure_invalidate(dead[i]);
		g_closure_unref(dead[i]);
	}
	if (dead != stack) g_free(dead);
	return (int)n;
}

// duet_closure_layout_known checks, once, that GLib keeps watched closures
// in the record invalidate_gotk4_closures reads.
static int duet_closure_layout_known(void) {
	GObject *obj = g_object_new(G_TYPE_OBJECT, NULL);
	GClosure *c = g_closure_new_simple(sizeof(GClosure), NULL);
	g_object_watch_closure(obj, c);
	duet_closure_array *a = g_object_get_qdata(obj, g_quark_from_static_string("GObject-closure-array"));
	int ok = a && a->object == obj && a->n_closures == 1 && a->closures[0] == c;
	g_object_unref(obj); // invalidates and drops the watched closure
	return ok;
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
	if (n > 0 && invalidate_gotk4_closures(obj) < 0) n = -2; // leave it: unreleased, not a crash
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
// keeps toggle references in the record this file reads (an object with
// one toggle reference of a known notify must show exactly that), and its
// watched closures in theirs.
static void probe_notify(gpointer data, GObject *obj, gboolean is_last) {}

int duet_toggle_layout_known(void) {
	GObject *obj = g_object_new(G_TYPE_OBJECT, NULL);
	g_object_add_toggle_ref(obj, probe_notify, (gpointer)obj);
	g_object_unref(obj); // the toggle reference is now the only one
	duet_toggle_stack *s = g_object_get_qdata(obj, g_quark_from_static_string("GObject-toggle-references"));
	int ok = s && s->object == obj && s->n_toggle_refs == 1 && s->toggle_refs[0].notify == probe_notify &&
	         s->toggle_refs[0].data == (gpointer)obj;
	g_object_remove_toggle_ref(obj, probe_notify, (gpointer)obj); // the last reference: obj is finalised
	return ok && duet_closure_layout_known();
}

// ---- a fresh idle, after the ones already queued --------------------------------
//
// GLib dispatches the ready sources of one priority in the order they were
// attached, so a default-priority idle attached now runs after every
// default-priority idle attached before it (g_main_context_invoke from
// another thread queues exactly such idles). A lower priority would be
// starved while the loop is busy.

static gboolean idle_after(gpointer data) {
	int lazy = duet_lazy_pause(); // no lazy handler's use of Python (see duet_lazy)
	duetIdleAfter();
	duet_lazy_resume(lazy);
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

//
// A Go function that takes nothing and returns nothing (or only an error)
// runs bare: without the GIL, as gotk4's own handlers run, so that a
// handler that touches no Python costs GLib's dispatch and one crossing
// into Go, and one that does takes the GIL only for what it calls. Bare,
// the marshal must not touch the callback's Python objects, which another
// thread may free meanwhile (a disconnect racing the emission, under the
// GIL): what it needs, the handle and the name, is copied into the closure
// at connect time, and callable is read and cleared atomically. A Go
// handle found gone while callable is still set is the broken ownership
// mode (or a bug): the same diagnosis as under the GIL. Found gone after
// callable was cleared, it is the race with a disconnect, which GLib
// allows (an emission under way still calls a handler disconnected
// meanwhile), and the emission just goes on.
//
// A Go function that takes only GObjects (the emitter, a list item: nargs
// *pygi.Object, after an optional *pygi.Block) and returns nothing or an
// error runs lazily: bare as well, given the GObject pointers, which Go
// makes into Python wrappers only when it uses them. Its first use of
// Python (its own first duet entry on this thread: duet_lazy) attaches, and the
// attachment is kept until the handler returns, so from there on it runs
// as it would have run holding the GIL all along; a handler that never
// touches Python costs what a bare one costs. An emission whose values are
// not all GObjects (a signal with an integer where the function takes an
// Object) takes the GIL path, which converts them as PyGObject does.

typedef struct {
	GClosure closure;
	PyObject *callable; // owned; NULL once invalidated; atomic (read bare)
	int nargs;          // how many of the signal's values the Go function takes; -1: all
	int bare;           // 0: under the GIL; 1: bare; 2: lazy (see above)
	uintptr_t handle;   // bare: the callback's Go handle, copied at connect time
	char name[];        // bare: the callback's name, for crash reports' ring
} duet_closure;

static void closure_invalidate_in(gpointer data, GClosure *closure) {
	duet_closure *c = (duet_closure *)closure;
	if (!__atomic_load_n(&c->callable, __ATOMIC_ACQUIRE)) return;
	if (!duet_python_usable()) { // gone (or going) with the interpreter
		__atomic_store_n(&c->callable, NULL, __ATOMIC_SEQ_CST);
		return;
	}
	PyGILState_STATE st = duet_enter();
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	// Cleared before the reference is dropped, which may free the callback
	// (its capsule gives the handle back): a bare emission that then finds
	// the handle gone sees it cleared, and knows a disconnect raced it.
	Py_XDECREF(__atomic_exchange_n(&c->callable, NULL, __ATOMIC_SEQ_CST));
	PyErr_Restore(t, v, tb);
	duet_leave(st);
}

// release_made releases the wrappers a lazy handler made for its GObjects
// (references Go handed back), as the GIL path releases the ones it made,
// on this thread: under the hold when the handler took it, else attached
// for the release alone (made on another goroutine's thread).
static void release_made(duet_ref *made, int k) {
	int any = 0;
	for (int i = 0; i < k; i++) any |= made[i].s != NULL;
	if (!any) return;
	int held = duet_lazy == 2;
	duet_lazy = 0; // this entry is no first use
	PyGILState_STATE st = held ? PyGILState_LOCKED : duet_enter();
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb); // a wrapper's dealloc runs with nothing raised
	for (int i = 0; i < k; i++) {
		PyObject *o = made[i].s ? duet_deref(made[i]) : NULL;
		if (!o) continue;
		duet_slot_put(made[i].s);
		Py_DECREF(o);
	}
	PyErr_Restore(t, v, tb);
	if (!held) duet_leave(st);
	duet_lazy = held ? 2 : 0;
}

// quarantined says whether the callback behind a bare closure is in
// DUET_DEBUG=callbacks' quarantine (freed by Go, its native state kept),
// read under the GIL (a disconnect on another thread may free the
// callable meanwhile); the GIL is let go again, so that a live callback
// runs as it does without the debug mode.
static int quarantined(duet_closure *c) {
	PyGILState_STATE st = duet_enter(); // lazy state paused by closure_marshal
	PyObject *fn = __atomic_load_n(&c->callable, __ATOMIC_ACQUIRE);
	duet_cb *cb = fn ? PyCapsule_GetPointer(PyCFunction_GET_SELF(fn), CB_CAPSULE) : NULL;
	if (fn && !cb) PyErr_Clear();
	int dead = cb && (cb->flags & DUET_CB_DEAD);
	duet_leave(st);
	return dead;
}

// closure_marshal_bare runs a bare closure's Go function without the GIL;
// 0 when this emission needs the GIL path instead: a return value other
// than a boolean (None converts to it only through PyGObject), or a
// callback DUET_DEBUG=callbacks keeps in quarantine (the GIL path
// diagnoses the call).
static int closure_marshal_bare(duet_closure *c, GValue *ret, guint n, const GValue *params, gpointer hint) {
	if (ret && G_IS_VALUE(ret) && G_VALUE_TYPE(ret) != G_TYPE_BOOLEAN) return 0;
	if (__atomic_load_n(&duet_debug_callbacks, __ATOMIC_RELAXED) && quarantined(c)) return 0;
	// Lazy: the GObjects Go takes, borrowed from the emission (which holds
	// them until it returns; Go ends its Objects before the handler returns).
	uintptr_t gobjs[8];
	duet_ref made[8];
	int k = 0;
	if (c->bare == 2) {
		k = c->nargs;
		if (k < 0 || k > (int)n || k > 8) return 0;
		for (int i = 0; i < k; i++) {
			made[i] = duet_no_ref;
			// An object type's value (the emitter's always is), or an
			// interface's whose prerequisite is GObject: its pointer is
			// data[0], as g_value_get_object reads it (without its check).
			GType t = G_VALUE_TYPE(&params[i]);
			if (G_TYPE_FUNDAMENTAL(t) != G_TYPE_OBJECT && !G_VALUE_HOLDS_OBJECT(&params[i])) return 0;
			gobjs[i] = (uintptr_t)params[i].data[0].v_pointer;
		}
	}
	// This thread holds the GIL outside any duet entry (a Python thread
	// emitting through code that keeps it, ctypes say): the GIL path takes
	// nothing more, and runs the handler attached, so that WithoutGIL in
	// it lets go of that GIL as it says.
	// (Not PyGILState_Check: CPython turns it off for good once a
	// sub-interpreter has existed, and it then says yes to everyone.)
	PyThreadState *mine = PyGILState_GetThisThreadState();
	int holds = mine && mine == _PyThreadState_UncheckedGet();
	if (duet_depth == 0 && holds) return 0;
	if (!__atomic_load_n(&c->callable, __ATOMIC_ACQUIRE)) return 1; // disconnected
	DUET_RING("signal calls Go");
	if (duet_ring_cur) {
		GObject *inst = n > 0 && G_VALUE_HOLDS_OBJECT(&params[0]) ? g_value_get_object(&params[0]) : NULL;
		DUET_RING_WHAT(c->name, hint ? g_signal_name(((GSignalInvocationHint *)hint)->signal_id) : NULL, SIZE_MAX);
		if (inst) DUET_RING_MORE(G_OBJECT_TYPE_NAME(inst));
	}
	// Nested: inside an entry or another callback on this thread, or
	// detached from one (WithoutGIL), which Finalize already waits for
	// (the gate lets a nested entry in). Asked before this handler counts
	// as a callback on the thread.
	int nested = duet_nested();
	uintptr_t outer = duet_current_cb;
	duet_current_cb = c->handle;
	// This thread may be inside a duet entry whose Python code let go of
	// the GIL around the emission (PyGObject's emit, a property set, a
	// wrapper's dealloc): its depth says attached, the GIL says otherwise.
	// The Go handler runs outside that entry, as it would on a thread that
	// never entered, so that pygi (WithoutGIL, an exception check) sees the
	// truth; both are put back for the entry's own leave.
	int depth = duet_depth, entry_exc = duet_entry_exc;
	if (depth > 0 && !holds) duet_depth = 0;
	int lazy = duet_lazy, lazy_base = duet_lazy_base;
	PyGILState_STATE lazy_st = duet_lazy_st;
	// Attached already (an emission under the GIL: a property set from
	// Python, say), a lazy handler has nothing to take; a bare one is told
	// nothing (its calls take the GIL each, as the package doc says).
	duet_lazy = c->bare == 2 && duet_depth == 0 ? 1 : 0;
	if (duet_lazy) duet_lazy_base = mine ? mine->gilstate_counter : -1;
	int rc = duetCallbackInvokeBare(c->handle, nested, gobjs, made, k);
	release_made(made, k);
	if (duet_lazy == 2) duet_leave(duet_lazy_st); // the hold its first entry took
	duet_lazy = lazy;
	duet_lazy_base = lazy_base;
	duet_lazy_st = lazy_st;
	duet_depth = depth;
	duet_entry_exc = entry_exc;
	duet_current_cb = outer;
	if (rc == -3) return 1; // not run: Python was finalised meanwhile, as a GIL-path emission is not
	// None, as under PyGObject; a handler that raised leaves the value as
	// the handlers before it set it.
	if (rc == 1 && ret && G_IS_VALUE(ret)) g_value_set_boolean(ret, FALSE);
	if (rc == -2 && __atomic_load_n(&c->callable, __ATOMIC_SEQ_CST)) {
		GObject *inst = n > 0 && G_VALUE_HOLDS_OBJECT(&params[0]) ? g_value_get_object(&params[0]) : NULL;
		const char *signame = hint ? g_signal_name(((GSignalInvocationHint *)hint)->signal_id) : NULL;
		duet_callback_gone(c->handle, signame, inst ? G_OBJECT_TYPE_NAME(inst) : NULL, (uintptr_t)inst);
	}
	return 1;
}

// keep_boxed runs on each argument of an emission after the handler: a
// boxed argument's wrapper lends the emission's own memory (made without a
// copy, as PyGObject's closures make them), which GLib frees when the
// emission ends. A handler that kept the wrapper (a Go Clone, a Python
// list) holds another reference: the wrapper is given a copy of its own
// then, as PyGObject's closure for introspected signals does (its closure
// for signals defined in Python lends; here those are copied too).
static void keep_boxed(PyObject *o) {
	if (Py_REFCNT(o) == 1 || !PyObject_TypeCheck(o, &PyGBoxed_Type)) return;
	PyGBoxed *b = (PyGBoxed *)o;
	if (b->free_on_dealloc || !b->boxed || !G_TYPE_IS_BOXED(b->gtype)) return;
	b->boxed = g_boxed_copy(b->gtype, b->boxed);
	b->free_on_dealloc = TRUE;
}

static void closure_marshal_in(GClosure *closure, GValue *ret, guint n, const GValue *params, gpointer hint,
                               gpointer marshal_data) {
	duet_closure *c = (duet_closure *)closure;
	if (!duet_python_usable() || !__atomic_load_n(&c->callable, __ATOMIC_ACQUIRE)) return;
	if (c->bare && closure_marshal_bare(c, ret, n, params, hint)) return;
	PyGILState_STATE st = duet_enter();
	PyObject *fn = __atomic_load_n(&c->callable, __ATOMIC_ACQUIRE);
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
	if (rc == -2) { // the free raced this emission: say which signal called it
		GObject *inst = n > 0 && G_VALUE_HOLDS_OBJECT(&params[0]) ? g_value_get_object(&params[0]) : NULL;
		const char *signame = hint ? g_signal_name(((GSignalInvocationHint *)hint)->signal_id) : NULL;
		duet_callback_gone(cb->handle, signame, inst ? G_OBJECT_TYPE_NAME(inst) : NULL, (uintptr_t)inst);
	}
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
		keep_boxed(objs[j]);
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
//
// What GLib runs here is never a lazy handler's own use of Python, even
// inside one (a handler it emits to, one a nested loop dispatches, a
// disconnect): the handler's state is put aside for it (duet_lazy_pause),
// so that only its own calls take its hold; a lazy handler emitted here
// sets up its own.
static void closure_invalidate(gpointer data, GClosure *closure) {
	if (!duet_glib_enter()) {
		__atomic_store_n(&((duet_closure *)closure)->callable, NULL, __ATOMIC_SEQ_CST); // gone with the interpreter
		return;
	}
	int lazy = duet_lazy_pause();
	closure_invalidate_in(data, closure);
	duet_lazy_resume(lazy);
	duet_glib_exit();
}

static void closure_marshal(GClosure *closure, GValue *ret, guint n, const GValue *params, gpointer hint,
                            gpointer marshal_data) {
	if (!duet_glib_enter()) return;
	int lazy = duet_lazy_pause();
	closure_marshal_in(closure, ret, n, params, hint, marshal_data);
	duet_lazy_resume(lazy);
	duet_glib_exit();
}

// connect_closure connects fn (a duet callback whose Go function takes
// nargs values, -1 for all) to the signal sig of the GObject wrapper obj;
// 0, *id and the GObject in *gobj (borrowed: obj holds it), or -1 with an
// exception set. GIL held.
static int connect_closure(PyObject *obj, const char *sig, int64_t slen, PyObject *fn, int after, int nargs,
                           int bare, uint64_t *id, void **gobj) {
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
		// fn is a duet callback (the caller checked), so its capsule holds
		// its native state; NULL only in the broken mode once Go freed it.
		duet_cb *cb = bare ? PyCapsule_GetPointer(PyCFunction_GET_SELF(fn), CB_CAPSULE) : NULL;
		if (bare && !cb) PyErr_Clear();
		size_t nlen = cb ? strlen(cb->def.ml_name) : 0;
		GClosure *closure = g_closure_new_simple(sizeof(duet_closure) + nlen + 1, NULL);
		duet_closure *c = (duet_closure *)closure;
		c->callable = Py_NewRef(fn); // the connection's reference
		c->nargs = nargs;
		c->bare = cb ? bare : 0;
		c->handle = cb ? cb->handle : 0;
		if (cb) memcpy(c->name, cb->def.ml_name, nlen);
		c->name[nlen] = 0;
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
                               int bare, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	PyObject *obj = duet_deref(objr), *fn = duet_deref(fnr);
	uint64_t id = 0;
	if (!obj || !fn) {
		rc = DUET_CLOSED;
	} else if (connect_closure(obj, sig, slen, fn, after, nargs, bare, &id, &res->p) < 0) {
		rc = duet_fail(&res->ref);
	}
	res->n = id;
	duet_leave(st);
	return rc;
}
DUET_ENTRY(connect_native, (duet_ref obj, const char *sig, int64_t slen, duet_ref fn, int after, int nargs, int bare),
           (obj, sig, slen, fn, after, nargs, bare, ))

// impl_connect_new makes the callback for a Go handle and connects it in
// one crossing: the connection holds the only reference, so disconnecting
// frees it. res->n is the id, res->p the GObject.
static int impl_connect_new(duet_ref objr, const char *sig, int64_t slen, uintptr_t handle, const char *name,
                            int64_t nlen, const char *doc, int64_t dlen, const char *module, int64_t mlen, int after,
                            int nargs, int bare, duet_res *res) {
	PyGILState_STATE st = duet_enter();
	int rc = DUET_OK;
	PyObject *obj = duet_deref(objr);
	uint64_t id = 0;
	void *native;
	if (!obj) {
		rc = DUET_CLOSED;
	} else {
		PyObject *fn = duet_callback_make(handle, name, nlen, doc, dlen, module, mlen, 0, &native);
		if (!fn || connect_closure(obj, sig, slen, fn, after, nargs, bare, &id, &res->p) < 0) rc = duet_fail(&res->ref);
		Py_XDECREF(fn); // on failure this frees it, and the handle goes back to Go
	}
	res->n = id;
	duet_leave(st);
	return rc;
}
DUET_ENTRY(connect_new,
           (duet_ref obj, const char *sig, int64_t slen, uintptr_t handle, const char *name, int64_t nlen,
            const char *doc, int64_t dlen, const char *module, int64_t mlen, int after, int nargs, int bare),
           (obj, sig, slen, handle, name, nlen, doc, dlen, module, mlen, after, nargs, bare, ))

// impl_disconnect disconnects handler id from the GObject wrapper obj;
// res->n is 1 and res->p the GObject (an address only: for the records),
// or res->n is 0 when no such handler is connected (GLib would only warn).
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
		res->p = pygobject_get(obj);
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

// ---- property writes GLib would refuse ---------------------------------------
//
// GLib refuses a property value its param spec's validation would change
// (out of range, NaN, not a value of the enum, ...): it prints a warning
// and drops the write, and PyGObject's set_property returns as if it had
// written it. duet's property writes go through these two functions
// instead, which check the value against the spec first and raise
// ValueError with the property, the value and what the spec allows. The
// write itself stays PyGObject's (set_property, or the class called with
// the keyword arguments), so values convert exactly as they always did.

static PyObject *str_set_property; // interned, for the life of the interpreter

// value_text is repr(value) as UTF-8 in buf (always terminated).
static void value_text(PyObject *value, char *buf, size_t n) {
	PyObject *r = PyObject_Repr(value);
	const char *s = r ? PyUnicode_AsUTF8(r) : NULL;
	if (!s) {
		PyErr_Clear();
		s = "<unprintable value>";
	}
	g_strlcpy(buf, s, n);
	Py_XDECREF(r);
}

static void double_text(double d, char *buf, size_t n) {
	char *s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
	if (!s) {
		PyErr_Clear();
		g_snprintf(buf, n, "%g", d);
		return;
	}
	g_strlcpy(buf, s, n);
	PyMem_Free(s);
}

typedef struct {
	enum { R_NONE, R_SIGNED, R_UNSIGNED, R_FLOAT } kind;
	long long smin, smax;
	unsigned long long umin, umax;
	double fmin, fmax;
} prop_range;

static prop_range range_of(GParamSpec *p) {
	prop_range r = {R_NONE};
#define SIGNED(T, S) else if (T(p)) r = (prop_range){R_SIGNED, S(p)->minimum, S(p)->maximum}
#define UNSIGNED(T, S) else if (T(p)) r = (prop_range){R_UNSIGNED, 0, 0, S(p)->minimum, S(p)->maximum}
#define FLOATING(T, S) else if (T(p)) r = (prop_range){R_FLOAT, 0, 0, 0, 0, S(p)->minimum, S(p)->maximum}
	if (0) {
	}
	SIGNED(G_IS_PARAM_SPEC_CHAR, G_PARAM_SPEC_CHAR);
	SIGNED(G_IS_PARAM_SPEC_INT, G_PARAM_SPEC_INT);
	SIGNED(G_IS_PARAM_SPEC_LONG, G_PARAM_SPEC_LONG);
	SIGNED(G_IS_PARAM_SPEC_INT64, G_PARAM_SPEC_INT64);
	UNSIGNED(G_IS_PARAM_SPEC_UCHAR, G_PARAM_SPEC_UCHAR);
	UNSIGNED(G_IS_PARAM_SPEC_UINT, G_PARAM_SPEC_UINT);
	UNSIGNED(G_IS_PARAM_SPEC_ULONG, G_PARAM_SPEC_ULONG);
	UNSIGNED(G_IS_PARAM_SPEC_UINT64, G_PARAM_SPEC_UINT64);
	FLOATING(G_IS_PARAM_SPEC_FLOAT, G_PARAM_SPEC_FLOAT);
	FLOATING(G_IS_PARAM_SPEC_DOUBLE, G_PARAM_SPEC_DOUBLE);
#undef SIGNED
#undef UNSIGNED
#undef FLOATING
	return r;
}

static int out_of_range(const char *type, GParamSpec *p, const prop_range *r, PyObject *value, const char *why) {
	char v[200], lo[64], hi[64];
	value_text(value, v, sizeof v);
	switch (r->kind) {
	case R_SIGNED:
		g_snprintf(lo, sizeof lo, "%lld", r->smin);
		g_snprintf(hi, sizeof hi, "%lld", r->smax);
		break;
	case R_UNSIGNED:
		g_snprintf(lo, sizeof lo, "%llu", r->umin);
		g_snprintf(hi, sizeof hi, "%llu", r->umax);
		break;
	default:
		double_text(r->fmin, lo, sizeof lo);
		double_text(r->fmax, hi, sizeof hi);
	}
	PyErr_Format(PyExc_ValueError, "property '%s' of %s: %s %s (it takes %s to %s)", p->name, type, v, why, lo, hi);
	return -1;
}

// check_integer: value (an int, or a float that is a whole number) within
// the range of an integer spec.
static int check_integer(const char *type, GParamSpec *p, const prop_range *r, PyObject *value) {
	PyObject *n = NULL;
	if (PyFloat_Check(value)) {
		// PyGObject would truncate 50.7 to 50 without a word.
		double d = PyFloat_AS_DOUBLE(value);
		if (!isfinite(d) || d != floor(d)) return out_of_range(type, p, r, value, "is not a whole number");
		n = PyLong_FromDouble(d);
		if (!n) return -1;
	} else {
		n = Py_NewRef(value);
	}
	int ok = 0;
	if (r->kind == R_SIGNED) {
		int overflow = 0;
		long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
		if (v == -1 && PyErr_Occurred()) {
			Py_DECREF(n);
			return -1;
		}
		ok = !overflow && v >= r->smin && v <= r->smax;
	} else {
		int overflow = 0;
		long long s = PyLong_AsLongLongAndOverflow(n, &overflow);
		if (s == -1 && PyErr_Occurred()) {
			Py_DECREF(n);
			return -1;
		}
		if (overflow > 0) {
			unsigned long long v = PyLong_AsUnsignedLongLong(n);
			if (v == (unsigned long long)-1 && PyErr_Occurred()) {
				if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
					Py_DECREF(n);
					return -1;
				}
				PyErr_Clear(); // beyond 64 bits
			} else {
				ok = v >= r->umin && v <= r->umax;
			}
		} else if (overflow == 0 && s >= 0) {
			ok = (unsigned long long)s >= r->umin && (unsigned long long)s <= r->umax;
		}
	}
	Py_DECREF(n);
	return ok ? 0 : out_of_range(type, p, r, value, "is out of range");
}

static int check_float(const char *type, GParamSpec *p, const prop_range *r, PyObject *value) {
	double d = PyFloat_AsDouble(value); // an int too large for a double raises OverflowError
	if (d == -1.0 && PyErr_Occurred()) {
		if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
		PyErr_Clear();
		return out_of_range(type, p, r, value, "is out of range");
	}
	// GLib clamps, and NaN compares unequal to what it clamps to: refused.
	if (isnan(d)) return out_of_range(type, p, r, value, "is not a number");
	if (d < r->fmin || d > r->fmax) return out_of_range(type, p, r, value, "is out of range");
	return 0;
}

// check_value: 0 when GLib's validation of pspec leaves value as it is (or
// when the value does not convert: PyGObject's write then says why), -1
// with ValueError set when it would change it. GIL held.
static int check_value(const char *type, GParamSpec *pspec, PyObject *value) {
	prop_range r = range_of(pspec);
	int number = PyLong_Check(value) || PyFloat_Check(value);
	if (r.kind == R_SIGNED || r.kind == R_UNSIGNED) return number ? check_integer(type, pspec, &r, value) : 0;
	if (r.kind == R_FLOAT) return number ? check_float(type, pspec, &r, value) : 0;
	if (G_IS_PARAM_SPEC_BOOLEAN(pspec)) return 0; // every value converts to TRUE or FALSE
	// Everything else: GLib's own validation, on the value as PyGObject
	// converts it for this spec.
	GValue v = G_VALUE_INIT;
	g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(pspec));
	if (pyg_param_gvalue_from_pyobject(&v, value, pspec) < 0) {
		PyErr_Clear();
		g_value_unset(&v);
		return 0;
	}
	gboolean changed = g_param_value_validate(pspec, &v);
	g_value_unset(&v);
	if (!changed) return 0;
	char text[200];
	value_text(value, text, sizeof text);
	const char *vt = g_type_name(G_PARAM_SPEC_VALUE_TYPE(pspec));
	if (G_IS_PARAM_SPEC_ENUM(pspec))
		PyErr_Format(PyExc_ValueError, "property '%s' of %s: %s is not a value of %s", pspec->name, type, text, vt);
	else if (G_IS_PARAM_SPEC_FLAGS(pspec))
		PyErr_Format(PyExc_ValueError, "property '%s' of %s: %s has bits that are not flags of %s (mask %#x)",
		             pspec->name, type, text, vt, G_PARAM_SPEC_FLAGS(pspec)->flags_class->mask);
	else
		PyErr_Format(PyExc_ValueError, "property '%s' of %s: %s is not valid for the spec (%s, %s)", pspec->name,
		             type, text, G_PARAM_SPEC_TYPE_NAME(pspec), vt);
	return -1;
}

// prop_name is name as C text, NULL (no exception) when it is not a str or
// holds a NUL (what GLib would look up is not the property named).
static const char *prop_name(PyObject *name) {
	Py_ssize_t n;
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
	if (!s) {
		PyErr_Clear();
		return NULL;
	}
	return strlen(s) == (size_t)n ? s : NULL;
}

// set_property(obj, name, value): obj.set_property(name, value) after the
// check. What the check cannot judge (not a GObject, no such property, not
// writable, construct-only, a value of the wrong type) is left to
// PyGObject's set_property, which raises its own error.
static PyObject *prop_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
	if (nargs != 3) {
		PyErr_Format(PyExc_TypeError, "set_property() takes 3 arguments (%zd given)", nargs);
		return NULL;
	}
	PyObject *obj = args[0], *name = args[1], *value = args[2];
	if (ensure_pygobject() < 0) return NULL;
	const char *n = prop_name(name);
	if (n && PyObject_TypeCheck(obj, &PyGObject_Type) && pygobject_get(obj)) {
		GObject *g = pygobject_get(obj);
		GParamSpec *pspec = g_object_class_find_property(G_OBJECT_GET_CLASS(g), n);
		if (pspec && (pspec->flags & G_PARAM_WRITABLE) && !(pspec->flags & G_PARAM_CONSTRUCT_ONLY) &&
		    check_value(G_OBJECT_TYPE_NAME(g), pspec, value) < 0)
			return NULL;
	}
	return PyObject_CallMethodObjArgs(obj, str_set_property, name, value, NULL);
}

// construct(cls, **kw): cls(**kw), after checking each keyword argument
// that names a property of cls's GType (GObject classes only; any other
// class is just called). A property that cannot be written at all is
// refused here: GLib would report a critical and construct without it.
static PyObject *prop_construct(PyObject *self, PyObject *args, PyObject *kw) {
	PyObject *cls;
	if (!PyArg_ParseTuple(args, "O:construct", &cls)) return NULL;
	if (ensure_pygobject() < 0) return NULL;
	if (kw && PyDict_GET_SIZE(kw) > 0 && PyType_Check(cls) && PyType_IsSubtype((PyTypeObject *)cls, &PyGObject_Type)) {
		GType t = pyg_type_from_object(cls);
		if (!t) {
			PyErr_Clear();
		} else if (G_TYPE_IS_OBJECT(t)) {
			GObjectClass *k = g_type_class_ref(t);
			PyObject *key, *value;
			Py_ssize_t pos = 0;
			int rc = 0;
			while (rc == 0 && PyDict_Next(kw, &pos, &key, &value)) {
				const char *n = prop_name(key);
				if (!n) continue; // the class says what it makes of it
				GParamSpec *pspec = g_object_class_find_property(k, n);
				if (!pspec) continue;
				if (!(pspec->flags & G_PARAM_WRITABLE)) {
					PyErr_Format(PyExc_TypeError, "property '%s' of %s is not writable", pspec->name, g_type_name(t));
					rc = -1;
				} else {
					rc = check_value(g_type_name(t), pspec, value);
				}
			}
			g_type_class_unref(k);
			if (rc < 0) return NULL;
		}
	}
	PyObject *empty = PyTuple_New(0);
	if (!empty) return NULL;
	PyObject *r = PyObject_Call(cls, empty, kw);
	Py_DECREF(empty);
	return r;
}

static PyMethodDef prop_set_def = {"set_property", (PyCFunction)(void (*)(void))prop_set, METH_FASTCALL,
                                   "set_property(obj, name, value): obj.set_property, refusing a value the "
                                   "property's spec does not allow (duet)."};
static PyMethodDef prop_construct_def = {"construct", (PyCFunction)(void (*)(void))prop_construct,
                                         METH_VARARGS | METH_KEYWORDS,
                                         "construct(cls, **kw): cls(**kw), refusing property values the specs "
                                         "do not allow (duet)."};

duet_res duet_property_funcs(void) {
	duet_res res = {0};
	PyGILState_STATE st = duet_enter();
	if (!str_set_property) str_set_property = PyUnicode_InternFromString("set_property");
	PyObject *set = str_set_property ? PyCFunction_New(&prop_set_def, NULL) : NULL;
	PyObject *make = set ? PyCFunction_New(&prop_construct_def, NULL) : NULL;
	PyObject *pair = make ? PyTuple_Pack(2, set, make) : NULL;
	Py_XDECREF(set);
	Py_XDECREF(make);
	if (!pair) {
		res.status = duet_fail(&res.ref);
	} else {
		res.ref = duet_new_ref(pair);
		res.status = res.ref.s ? DUET_OK : duet_fail(&res.ref);
	}
	duet_leave(st);
	return res;
}

// ---- emission from C, for make bench -------------------------------------------
//
// duet_emit_n emits the signal sig (no arguments, no return value) on gobj
// n times from C, the way GTK emits from its own code (a click, a notify),
// and returns the nanoseconds per emission; -1 for a signal gobj does not
// have. The caller holds no GIL and a reference to gobj.
static void noop_handler(void) {}

// duet_connect_noop connects a C function that does nothing to sig on gobj:
// the floor of any handler, what GLib's emission costs with one connected.
int duet_connect_noop(uintptr_t gobj, const char *sig) {
	return g_signal_connect((GObject *)gobj, sig, G_CALLBACK(noop_handler), NULL) != 0;
}

double duet_emit_n(uintptr_t gobj, const char *sig, int64_t n) {
	GObject *g = (GObject *)gobj;
	guint id;
	GQuark detail;
	if (n <= 0 || !g_signal_parse_name(sig, G_OBJECT_TYPE(g), &id, &detail, FALSE)) return -1;
	gint64 began = g_get_monotonic_time();
	for (int64_t i = 0; i < n; i++) g_signal_emit(g, id, detail);
	return (double)(g_get_monotonic_time() - began) * 1000.0 / (double)n;
}
