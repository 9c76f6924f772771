package widgets

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// Errors of the bridge.
var (
	// ErrNotGObject: a Python object that is not a GObject was given.
	ErrNotGObject = errors.New("widgets: not a GObject")
	// ErrToggleTrap: the object's Python wrapper holds a toggle reference
	// (an instance of a Python subclass, or a wrapper carrying attributes).
	// gotk4 would add a second one, and GLib notifies no toggle reference
	// while two exist: neither side could ever let go, and the object
	// would never be finalised. Use the object from its Python side
	// (Wrap, Widget) and pack it into gotk4 containers with CallMethod.
	ErrToggleTrap = errors.New("widgets: the object's Python wrapper holds a toggle reference; a gotk4 wrapper would keep it alive forever (use its Python side, and widgets.CallMethod to pack it)")
)

// pointer returns the GObject* behind a PyGObject object. It is borrowed:
// valid while o (which holds a reference to the GObject) is alive.
func pointer(o *pygi.Object) (p unsafe.Pointer, toggled bool, err error) {
	var notGObject bool
	err = pyobj.Use(o, func(r capi.Ref) (st capi.Status, exc capi.Ref) {
		p, toggled, st, exc = capi.GObjectPointer(r)
		notGObject = st == capi.Err
		return st, exc
	})
	if notGObject {
		return nil, false, fmt.Errorf("%w: %w", ErrNotGObject, err)
	}
	return p, toggled, err
}

// toGo is Cast's core: gotk4's own wrapper of the object, tracked.
func toGo(o *pygi.Object) (*coreglib.Object, error) {
	p, toggled, err := pointer(o)
	if err != nil {
		return nil, err
	}
	if toggled {
		return nil, ErrToggleTrap
	}
	obj := takeTracked(p) // gotk4 takes its own reference while o still holds one
	runtime.KeepAlive(o)
	return obj, nil
}

// Cast returns gotk4's view of the GObject behind a PyGObject object (the
// same object, not a copy) as the gotk4 type T: *gtk.Button, say, or
// gtk.Widgetter, or *coreglib.Object for the object itself; an error, not
// a panic, when the object is not a T. (pygi.As converts Python values to
// Go values; Cast gives gotk4's view of a GObject.)
//
// gotk4 takes its own reference (a toggle reference; see the package
// documentation for what that means for lifetime). Objects whose Python
// wrapper holds a toggle reference are refused with ErrToggleTrap (see
// there). UI thread only: gotk4's wrappers are made there, where duet also
// releases them (lifetime.go).
func Cast[T any](o *pygi.Object) (T, error) {
	var zero T
	if err := eventloop.RequireMain("widgets.Cast"); err != nil {
		return zero, err
	}
	obj, err := toGo(o)
	if err != nil {
		return zero, err
	}
	if v, ok := any(obj).(T); ok {
		return v, nil
	}
	v, ok := any(obj.Cast()).(T)
	if !ok {
		return zero, fmt.Errorf("widgets: the GObject is a %s, not a %T", obj.Type().Name(), zero)
	}
	return v, nil
}

// isNilPointer reports a typed nil pointer in v: its methods, promoted
// through embedded pointers, would dereference it.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// baseObject is gotk4's Object behind obj; an error, not a panic, for a
// nil obj (a typed nil pointer too: gotk4 would dereference it).
func baseObject(obj coreglib.Objector) (*coreglib.Object, error) {
	if obj == nil {
		return nil, fmt.Errorf("%w: nil", ErrNotGObject)
	}
	if isNilPointer(obj) {
		return nil, fmt.Errorf("%w: a nil %T", ErrNotGObject, obj)
	}
	base := coreglib.BaseObject(obj)
	if base == nil || base.Native() == 0 {
		return nil, fmt.Errorf("%w: %T has no GObject", ErrNotGObject, obj)
	}
	return base, nil
}

// ToPython returns PyGObject's wrapper of a gotk4 object: the same GObject.
// Wrapping the same object twice gives the same Python wrapper while one is
// alive (PyGObject keeps the mapping). UI thread only.
func ToPython(obj coreglib.Objector) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.ToPython"); err != nil {
		return nil, err
	}
	base, err := baseObject(obj)
	if err != nil {
		return nil, err
	}
	if err := lifetime.Enter(); err != nil {
		return nil, err
	}
	defer lifetime.Exit()
	r, st, exc := capi.WrapGObject(base.Native())
	runtime.KeepAlive(obj)
	if st != capi.OK {
		return nil, pyobj.Error(exc)
	}
	return pyobj.Owned(r), nil
}

// CallMethod calls a PyGObject method on a gotk4 object, through its Python
// wrapper. It is how Python widgets are packed into gotk4 containers
// without giving them a gotk4 wrapper: CallMethod(box, "append", chart.Object).
// UI thread only.
func CallMethod(obj coreglib.Objector, method string, args ...any) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.CallMethod"); err != nil {
		return nil, err
	}
	py, err := ToPython(obj)
	if err != nil {
		return nil, err
	}
	defer py.Close()
	return py.CallMethod(method, args...)
}
