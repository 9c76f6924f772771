// gobject.h: GObjects seen from Go (gotk4) and Python (PyGObject).
#ifndef DUET_GOBJECT_H
#define DUET_GOBJECT_H
#include <stdint.h>
#include "duet.h"

// p: the GObject* a PyGObject wrapper designates (borrowed, valid while the
// wrapper lives); n: 1 when the wrapper holds a toggle reference. TypeError
// for anything that is not a GObject wrapper.
duet_res duet_gobject_pointer(duet_ref r);
// ref: the PyGObject wrapper of gobj (a new reference); the wrapper keeps
// gobj alive (PyGObject takes its own GObject reference).
duet_res duet_gobject_wrap(uintptr_t gobj);
// duetGObjectFinalized(handle) runs when gobj is finalised.
void duet_gobject_watch(uintptr_t gobj, uintptr_t handle);
int duet_gobject_refcount(uintptr_t gobj);
const char *duet_gobject_type_name(uintptr_t gobj);
// The number of gotk4 toggle references on gobj; -1 when gotk4 is not
// linked in, -2 when GLib's record has a layout this code does not know.
int duet_gotk4_toggles(uintptr_t gobj);
// Counts and removes gotk4's toggle references on gobj in one step (UI
// thread; may finalise gobj): returns how many, -1 without gotk4, -2 for a
// record layout this code does not know (nothing removed).
int duet_gotk4_release_all(uintptr_t gobj);
// Whether GLib's toggle-reference record has the layout this code reads
// (checked on an object of its own).
int duet_toggle_layout_known(void);
// Schedules duetIdleAfter() in a fresh default-priority idle, which GLib
// dispatches after every default-priority idle attached before it.
void duet_idle_after(void);
// Weak references to GObjects (GWeakRef, C memory owned by the caller):
// get returns the object's wrapper (DUET_OK) or DUET_NONE once it is gone.
void *duet_weak_new(uintptr_t gobj);
duet_res duet_weak_get(void *weak);
void duet_weak_free(void *weak);
// Up to max (callback handle, GObject*) pairs: GObjects Go holds that a Go
// callback used while it ran (see duet_current_cb in duet_impl.h).
int duet_used_gobjects(uintptr_t *out, const char **names, int max);
// Go callbacks on signals through duet's own GClosure (see gobject.c);
// nargs: how many of the signal's values the Go function takes (-1: all);
// bare: 1 when it takes and returns nothing, and runs without the GIL; 2
// when it takes only GObjects (nargs of them) and returns nothing, and runs
// without the GIL until it first uses Python (lazy: see gobject.c).
duet_res duet_connect_native(duet_ref obj, const char *sig, int64_t slen, duet_ref fn, int after, int nargs,
                             int bare);
// The same for a Go handle whose callback is made here (the connection
// holds its only reference).
duet_res duet_connect_new(duet_ref obj, const char *sig, int64_t slen, uintptr_t handle, const char *name,
                          int64_t nlen, const char *doc, int64_t dlen, const char *module, int64_t mlen, int after,
                          int nargs, int bare);
// res.n: 1 when handler id was connected to obj and is now disconnected.
duet_res duet_disconnect(duet_ref obj, uint64_t id);
int64_t duet_drain_off_ui(duet_ref *refs, int64_t n);
// ref: a tuple (set_property, construct) of builtins that write GObject
// properties through PyGObject after checking each value against the
// property's spec (see gobject.c).
duet_res duet_property_funcs(void);
// Emits sig on gobj n times from C (see gobject.c); ns per emission.
double duet_emit_n(uintptr_t gobj, const char *sig, int64_t n);
// Connects a C handler that does nothing (the floor of any handler).
int duet_connect_noop(uintptr_t gobj, const char *sig);
#endif
