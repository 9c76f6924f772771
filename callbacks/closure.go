package callbacks

import (
	"runtime"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// Connect connects fn (any Go func, adapted as New adapts it) to the signal
// of the GObject obj (a PyGObject wrapper), after the default handler when
// after is set, and returns the handler id. The handler runs through
// duet's own closure: GLib hands the signal's values straight to Go, and
// only the arguments fn takes are made (the emitter first, then the
// signal's arguments in order; fn may take fewer than the signal gives).
// The connection owns the callback, as a PyGObject connection would:
// disconnecting it, or the object's finalisation, frees it. UI thread
// rules are GTK's (see package widgets, which records such handlers for
// its window teardown).
func Connect(obj *pygi.Object, signal string, fn any, after bool, opts ...Option) (uint64, error) {
	cb, ok := fn.(*pygi.Object)
	if !ok || !isCallback(cb) {
		var err error
		if cb, err = New(fn, opts...); err != nil {
			return 0, err
		}
		defer cb.Close()
	}
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
	nargs := -1
	if e := registry.handles.get(capi.CallbackHandle(c)); e != nil && e.sig.rest == nil {
		nargs = len(e.sig.fixed)
	}
	id, st, exc := capi.ConnectNative(o, signal, c, after, nargs)
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

func isCallback(o *pygi.Object) bool {
	if err := lifetime.Enter(); err != nil {
		return false
	}
	defer lifetime.Exit()
	r, err := bridge.RefOf(o)
	return err == nil && capi.IsCallback(r)
}
