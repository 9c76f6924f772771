package callbacks

import (
	"errors"
	"runtime"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// ErrNotConnected is returned by Disconnect for a handler id that is not
// connected to the object (never was, or already disconnected).
var ErrNotConnected = errors.New("callbacks: no such handler connected")

// Connect connects fn to the signal of the GObject obj (a PyGObject
// wrapper), after the default handler when after is set, and returns the
// handler id. fn is a Go func (adapted as New adapts it, with opts) or a
// callback New made. The handler runs through duet's own closure: GLib
// hands the signal's values straight to Go, and only the arguments fn
// takes are made (the emitter first, then the signal's arguments in
// order; fn may take fewer than the signal gives). The connection owns the
// callback, as a PyGObject connection would: disconnecting it, or the
// object's finalisation, frees it. A Go func is made into its callable and
// connected in one crossing. UI thread rules are GTK's (see package
// widgets, which records such handlers for its window teardown).
func Connect(obj *pygi.Object, signal string, fn any, after bool, opts ...Option) (uint64, error) {
	if cb, ok := fn.(*pygi.Object); ok {
		return connectCallback(obj, signal, cb, after)
	}
	sig, cfg, code, err := prepare(fn, false, opts)
	if err != nil {
		return 0, err
	}
	if cfg.ownership == GoOwnedBroken {
		// The broken mode needs a Go object to hang its GC cleanup on.
		cb, err := newCallback(fn, false, opts, captureSite(2))
		if err != nil {
			return 0, err
		}
		defer cb.Close()
		return connectCallback(obj, signal, cb, after)
	}
	if err := lifetime.Enter(); err != nil {
		return 0, err
	}
	defer lifetime.Exit()
	o, err := bridge.RefOf(obj)
	if err != nil {
		return 0, err
	}
	e := &entry{sig: sig, name: cfg.name, code: code, site: captureSite(2)}
	h := register(e)
	id, st, exc := capi.ConnectNew(o, signal, h, cfg.name, e.sig.doc(cfg), cfg.module, after, nargsOf(&e.sig))
	runtime.KeepAlive(obj)
	switch st {
	case capi.OK:
		return id, nil
	}
	releaseCallback(h) // a no-op when freeing the callable already gave it back
	if st == capi.Err {
		return 0, bridge.NewError(exc)
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

func connectCallback(obj *pygi.Object, signal string, cb *pygi.Object, after bool) (uint64, error) {
	if err := lifetime.Enter(); err != nil {
		return 0, err
	}
	defer lifetime.Exit()
	o, err := bridge.RefOf(obj)
	if err != nil {
		return 0, err
	}
	c, err := bridge.RefOf(cb)
	if err != nil {
		return 0, err
	}
	e := registry.handles.get(capi.CallbackHandle(c))
	if e == nil {
		return 0, errors.New("callbacks: Connect: not a Go callback (want a Go func or a callback New made)")
	}
	id, st, exc := capi.ConnectNative(o, signal, c, after, nargsOf(&e.sig))
	runtime.KeepAlive(obj)
	runtime.KeepAlive(cb)
	switch st {
	case capi.OK:
		return id, nil
	case capi.Err:
		return 0, bridge.NewError(exc)
	}
	return 0, pygi.ErrClosed
}

// Disconnect disconnects handler id from the GObject obj, in one crossing
// (no Python call); the callback is freed if nothing else holds it. An id
// that is not connected gives ErrNotConnected.
func Disconnect(obj *pygi.Object, id uint64) error {
	if err := lifetime.Enter(); err != nil {
		return err
	}
	defer lifetime.Exit()
	o, err := bridge.RefOf(obj)
	if err != nil {
		return err
	}
	ok, st, exc := capi.Disconnect(o, id)
	runtime.KeepAlive(obj)
	switch {
	case st == capi.Err:
		return bridge.NewError(exc)
	case st != capi.OK:
		return pygi.ErrClosed
	case !ok:
		return ErrNotConnected
	}
	return nil
}
