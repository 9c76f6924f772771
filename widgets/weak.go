package widgets

import (
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"

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

// Weakly returns a handler for any connect path (Widget.Connect,
// callbacks.Connect and ConnectAfter, LoadUI's handler maps,
// app.AddAction, ...) that holds obj weakly: the capture gtk-rs writes as
// glib::clone!(@weak label => move |_| ...), without a WeakRef and its Get
// in every handler.
//
// obj is a *pygi.Object, a *Widget or a gotk4 object (*gtk.Label, say: any
// coreglib.Objector). fn is a func whose first parameter has exactly obj's
// type; the handler has fn's type without that parameter. Each call
// upgrades the weak reference and calls fn with the live object and the
// call's arguments, returning fn's results. Once the object is gone the
// call is skipped: it returns the zero values of fn's results and logs
// "duet: weak capture gone, handler skipped" at slog's debug level, with
// the object's type and the handler's name.
//
//	button.Connect("clicked", widgets.Weakly(label, func(label, button *pygi.Object) {
//		label.CallMethod("set_label", "clicked")
//	}))
//
// Naming fn's parameter after the captured variable, as above, shadows it,
// so fn cannot capture it strongly by mistake. The object fn receives is
// valid for the call: a *pygi.Object or *Widget is closed when fn returns
// (Clone it to keep it). Where a connect path takes a typed func, assert
// the handler's type: a.AddAction("bump", nil, widgets.Weakly(label,
// func(label *gtk.Label) { ... }).(func())).
//
// A fn that is not a func, has no parameter or a first parameter of
// another type, or an obj that is nil or not a GObject, is a programmer's
// error at the line that calls Weakly, which panics with a message
// starting "widgets.Weakly: ", as sort.Slice does for a value that is not a
// slice. Weakly is safe from any goroutine; the handler, like the object,
// belongs on the UI thread.
func Weakly(obj any, fn any) any {
	fv := reflect.ValueOf(fn)
	if fv.Kind() != reflect.Func || fv.IsNil() {
		panic(fmt.Sprintf("widgets.Weakly: fn is %T, not a func", fn))
	}
	ft := fv.Type()
	if ft.NumIn() == 0 {
		panic(fmt.Sprintf("widgets.Weakly: fn (%s) has no parameter to receive obj", ft))
	}
	if obj == nil {
		panic("widgets.Weakly: obj is nil")
	}
	if isNilPointer(obj) {
		panic(fmt.Sprintf("widgets.Weakly: obj is a nil %T", obj))
	}
	if ot := reflect.TypeOf(obj); ft.In(0) != ot {
		panic(fmt.Sprintf("widgets.Weakly: fn's first parameter is %s, not obj's type %s", ft.In(0), ot))
	}
	get, typeName := weakUpgrade(obj)
	in := make([]reflect.Type, ft.NumIn()-1)
	for i := range in {
		in[i] = ft.In(i + 1)
	}
	out := make([]reflect.Type, ft.NumOut())
	for i := range out {
		out[i] = ft.Out(i)
	}
	handler := runtime.FuncForPC(fv.Pointer()).Name()
	variadic := ft.IsVariadic()
	call := fv.Call
	if variadic {
		call = fv.CallSlice // the tail arrives as the slice it was packed into
	}
	// Only get, fn and strings below: the handler must not hold obj.
	return reflect.MakeFunc(reflect.FuncOf(in, out, variadic), func(args []reflect.Value) []reflect.Value {
		live, release, ok := get()
		if !ok {
			slog.Debug("duet: weak capture gone, handler skipped", "type", typeName, "handler", handler)
			zeros := make([]reflect.Value, len(out))
			for i, t := range out {
				zeros[i] = reflect.Zero(t)
			}
			return zeros
		}
		defer release()
		return call(append([]reflect.Value{live}, args...))
	}).Interface()
}

// weakUpgrade makes the weak reference behind Weakly: get returns the
// live object as a value of obj's own type and what releases it, or false
// once the object is gone.
func weakUpgrade(obj any) (get func() (live reflect.Value, release func(), ok bool), typeName string) {
	noop := func() {}
	switch o := obj.(type) {
	case *Widget:
		if o.Object == nil {
			panic("widgets.Weakly: obj is a *widgets.Widget with a nil Object")
		}
		w := mustWeak(o.Object)
		return func() (reflect.Value, func(), bool) {
			live, ok := w.Get()
			if !ok {
				return reflect.Value{}, noop, false
			}
			return reflect.ValueOf(live), func() { live.Close() }, true
		}, w.Type
	case *pygi.Object:
		w := mustWeak(o)
		return func() (reflect.Value, func(), bool) {
			live, ok := w.Get()
			if !ok {
				return reflect.Value{}, noop, false
			}
			return reflect.ValueOf(live.Object), func() { live.Close() }, true
		}, w.Type
	case coreglib.Objector:
		want := reflect.TypeOf(obj)
		if want.Kind() != reflect.Pointer {
			panic(fmt.Sprintf("widgets.Weakly: obj is a %s value: pass a pointer (%s), as gotk4's constructors return", want, reflect.PointerTo(want)))
		}
		base, err := baseObject(o)
		if err != nil {
			panic(fmt.Sprintf("widgets.Weakly: obj: %v", err))
		}
		typeName := base.Type().Name()
		w := coreglib.NewWeakRef(o)
		return func() (reflect.Value, func(), bool) {
			live := w.Get() // nil once gone, or once gotk4 has let go of it for good
			if live == nil {
				return reflect.Value{}, noop, false
			}
			if v, ok := asType(live, want); ok {
				return v, noop, true // a gotk4 wrapper: Go's collector releases it
			}
			return reflect.Value{}, noop, false
		}, typeName
	}
	panic(fmt.Sprintf("widgets.Weakly: obj is a %T: want a *pygi.Object, a *widgets.Widget or a gotk4 object (coreglib.Objector)", obj))
}

// mustWeak is Weak for Weakly, whose errors are the caller's mistakes.
func mustWeak(o *pygi.Object) *WeakRef {
	w, err := Weak(o)
	if err != nil {
		panic(fmt.Sprintf("widgets.Weakly: obj: %v", err))
	}
	return w
}

// asType gives a gotk4 object as the Go type want. gotk4 casts what a weak
// reference returns to the Go type of the object's GType, which may be
// more derived than the captured variable's (a *gtk.Label for a
// *gtk.Widget).
func asType(o coreglib.Objector, want reflect.Type) (reflect.Value, bool) {
	if reflect.TypeOf(o) == want {
		return reflect.ValueOf(o), true
	}
	base := coreglib.BaseObject(o)
	if reflect.TypeOf(base) == want {
		return reflect.ValueOf(base), true
	}
	found := base.WalkCast(func(c coreglib.Objector) bool { return reflect.TypeOf(c) == want })
	if found == nil {
		return reflect.Value{}, false
	}
	return reflect.ValueOf(found), true
}
