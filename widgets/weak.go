package widgets

import (
	"runtime"
	"unsafe"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// WeakRef refers to a GObject without keeping it alive: the capture to use
// when a handler must reach an object other than the ones its arguments
// give it (the role of gtk-rs' glib::clone!(@weak ...)). A handler that
// holds a WeakRef to its own widget, or to a widget that holds the handler,
// makes no cycle: the widget is finalised when GTK and Python let go of it,
// and Get then reports it gone.
//
// It is a GLib GWeakRef: safe from any goroutine; Get makes a Python
// wrapper, which, like the object, belongs on the UI thread.
type WeakRef struct {
	weak unsafe.Pointer // GWeakRef* (C memory), freed by the cleanup; never touches Python
	Type string         // the object's type name, for messages
}

// Weak makes a weak reference to the GObject behind o.
func Weak(o *pygi.Object) (*WeakRef, error) {
	p, _, err := pointer(o)
	if err != nil {
		return nil, err
	}
	w := &WeakRef{weak: capi.WeakNew(uintptr(p)), Type: capi.GObjectTypeName(uintptr(p))}
	runtime.KeepAlive(o)
	runtime.AddCleanup(w, capi.WeakFree, w.weak)
	return w, nil
}

// Get returns the object (a new reference, to Close or drop) and true
// while it lives; nil and false once it is gone.
func (w *WeakRef) Get() (*Widget, bool) {
	if err := lifetime.Enter(); err != nil {
		return nil, false
	}
	defer lifetime.Exit()
	r, st, exc := capi.WeakGet(w.weak)
	runtime.KeepAlive(w)
	switch st {
	case capi.OK:
		return &Widget{pyobj.Owned(r)}, true
	case capi.Err:
		capi.Drain([]capi.Ref{exc})
	}
	return nil, false
}
