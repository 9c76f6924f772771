package callbacks

import (
	"errors"
	"runtime"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// ErrNotConnected is returned by Disconnect for a handler id that is not
// connected to the object (never was, or already disconnected).
var ErrNotConnected = errors.New("callbacks: no such handler connected")

// Connect connects fn to the signal of the GObject obj (a PyGObject
// wrapper) and returns the handler id; ConnectAfter connects it after the
// signal's default handler. fn is a Go func (adapted as New adapts it) or
// a callback New made (to give it a name, say).
//
// fn receives the emitter, then the signal's arguments in order, then
// data, exactly as PyGObject's connect(signal, handler, *data) passes
// them: a handler never needs to capture the object it is connected to,
// and data is held on the Python side, where Python's collector sees
// cycles through it. fn may take fewer values than it is given.
//
// Without data the handler runs through duet's own closure: GLib hands the
// signal's values straight to Go and only the arguments fn takes are made;
// a Go func is made into its callable and connected in one crossing. A
// handler that takes nothing and returns nothing or an error runs there
// bare, without the GIL; one that takes only GObjects (as *pygi.Object)
// runs lazily, taking the GIL at its first use of Python (see the package
// doc). With data it runs through PyGObject's closure, which holds the
// data, under the GIL.
//
// The connection owns the callback, as a PyGObject connection would:
// disconnecting it, or the object's finalisation, frees it. Every
// connection of a Go handler is recorded, whichever way it was made (this
// function, Widget.Connect, PyGObject's connect and connect_after,
// connect_object and connect_object_after called from Python or Go,
// widgets.LoadUI): that is what Cycles reads, and how package widgets
// disconnects the Go handlers of every widget of a window that is
// destroyed. GTK's thread rules apply (see package widgets).
func Connect(obj *pygi.Object, signal string, fn any, data ...any) (uint64, error) {
	return connect(obj, signal, fn, false, data, captureSite(2))
}

// ConnectAfter is Connect for the phase after the signal's default
// handler (g_signal_connect_after; PyGObject's connect_after).
func ConnectAfter(obj *pygi.Object, signal string, fn any, data ...any) (uint64, error) {
	return connect(obj, signal, fn, true, data, captureSite(2))
}

// connect is the one way a Go handler gets connected.
func connect(obj *pygi.Object, signal string, fn any, after bool, data []any, where *site) (uint64, error) {
	installConnectHook() // PyGObject's connect, from Python, records too
	if cb, ok := fn.(*pygi.Object); ok {
		if len(data) > 0 {
			return connectData(obj, signal, cb, after, data)
		}
		return connectCallback(obj, signal, cb, after)
	}
	if len(data) > 0 {
		cb, err := newCallback(fn, false, nil, where)
		if err != nil {
			return 0, err
		}
		defer cb.Close()
		return connectData(obj, signal, cb, after, data)
	}
	sig, cfg, code, err := prepare(fn, false, nil)
	if err != nil {
		return 0, err
	}
	if err := lifetime.Enter(); err != nil {
		return 0, err
	}
	defer lifetime.Exit()
	o, err := pyobj.Ref(obj)
	if err != nil {
		return 0, err
	}
	e := &entry{sig: sig, name: cfg.name, code: code, site: where}
	h := register(e)
	id, gobj, st, exc := capi.ConnectNew(o, signal, h, cfg.name, e.sig.doc(cfg), cfg.module, after, nargsOf(&e.sig), runOf(&e.sig))
	runtime.KeepAlive(obj)
	switch st {
	case capi.OK:
		lifetime.NoteConnection(gobj, h, id)
		return id, nil
	}
	releaseCallback(h) // a no-op when freeing the callable already gave it back
	if st == capi.Err {
		return 0, pyobj.Error(exc)
	}
	return 0, pygi.ErrClosed
}

// nargsOf is how many of a signal's values a Go function takes; -1: all.
func nargsOf(sig *signature) int {
	if sig.rest != nil {
		return -1
	}
	return len(sig.fixed)
}

// runOf says how a Go function runs on a signal (see
// internal/capi/gobject.c): bare, without the GIL, when it takes nothing
// from Python and gives nothing back; lazily, without the GIL until it
// first uses Python, when it takes only GObjects (as *pygi.Object, after
// an optional *pygi.Block) and gives nothing back but an error; otherwise
// holding the GIL.
func runOf(sig *signature) capi.HandlerRun {
	switch {
	case sig.fast0 != nil || sig.fast0err != nil:
		return capi.RunBare
	case sig.lazy:
		return capi.RunLazy
	}
	return capi.RunGIL
}

func connectCallback(obj *pygi.Object, signal string, cb *pygi.Object, after bool) (uint64, error) {
	if err := lifetime.Enter(); err != nil {
		return 0, err
	}
	defer lifetime.Exit()
	o, err := pyobj.Ref(obj)
	if err != nil {
		return 0, err
	}
	c, err := pyobj.Ref(cb)
	if err != nil {
		return 0, err
	}
	h := capi.CallbackHandle(c)
	e := registry.handles.get(h)
	if e == nil {
		return 0, errNotGoCallback
	}
	id, gobj, st, exc := capi.ConnectNative(o, signal, c, after, nargsOf(&e.sig), runOf(&e.sig))
	runtime.KeepAlive(obj)
	runtime.KeepAlive(cb)
	switch st {
	case capi.OK:
		lifetime.NoteConnection(gobj, h, id)
		return id, nil
	case capi.Err:
		return 0, pyobj.Error(exc)
	}
	return 0, pygi.ErrClosed
}

var errNotGoCallback = errors.New("callbacks: Connect: not a Go callback (want a Go func or a callback New made)")

// connectData connects through PyGObject's closure, which holds data; the
// connect hook records it (or this, should the hook be missing).
func connectData(obj *pygi.Object, signal string, cb *pygi.Object, after bool, data []any) (uint64, error) {
	if callbackHandle(cb) == 0 {
		return 0, errNotGoCallback
	}
	method := "connect"
	if after {
		method = "connect_after"
	}
	r, err := obj.CallMethod(method, append([]any{signal, cb}, data...)...)
	if err != nil {
		return 0, err
	}
	id, err := pygi.As[uint64](r)
	if err != nil {
		return 0, err
	}
	if connectPy.Loaded() == nil { // else the hook recorded it already
		recordConnection(obj, id, cb)
	}
	return id, nil
}

// recordConnection records a connection PyGObject made of a Go callback.
func recordConnection(obj *pygi.Object, id uint64, cb *pygi.Object) {
	h := callbackHandle(cb)
	if h == 0 || registry.handles.get(h) == nil {
		return // a capsule function, but not one of duet's
	}
	// Not a GObject: PyGObject's connect would have said so.
	_ = pyobj.Use(obj, func(r capi.Ref) (capi.Status, capi.Ref) {
		p, _, st, exc := capi.GObjectPointer(r)
		if st == capi.OK {
			lifetime.NoteConnection(uintptr(p), h, id)
		}
		return st, exc
	})
}

// callbackHandle is the Go handle behind a duet callback, or 0.
func callbackHandle(o *pygi.Object) (h uintptr) {
	pyobj.Use(o, func(r capi.Ref) (capi.Status, capi.Ref) {
		h = capi.CallbackHandle(r)
		return capi.OK, capi.Ref{}
	})
	return h
}

// Disconnect disconnects handler id from the GObject obj, in one crossing
// (no Python call); the callback is freed if nothing else holds it. An id
// that is not connected gives ErrNotConnected.
func Disconnect(obj *pygi.Object, id uint64) error {
	var ok bool
	err := pyobj.Use(obj, func(r capi.Ref) (st capi.Status, exc capi.Ref) {
		var gobj uintptr
		ok, gobj, st, exc = capi.Disconnect(r, id)
		if ok {
			// The record goes with the connection (the callback may live
			// on, held by Go or another connection).
			lifetime.ForgetConnection(gobj, id)
		}
		return st, exc
	})
	if err == nil && !ok {
		return ErrNotConnected
	}
	return err
}
