package widgets

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
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
	// (Wrap, Widget) and pack it into gotk4 containers with Call.
	ErrToggleTrap = errors.New("widgets: the object's Python wrapper holds a toggle reference; a gotk4 wrapper would keep it alive forever (use its Python side, and widgets.CallMethod to pack it)")
)

// pointer returns the GObject* behind a PyGObject object. It is borrowed:
// valid while o (which holds a reference to the GObject) is alive.
func pointer(o *pygi.Object) (unsafe.Pointer, bool, error) {
	if err := lifetime.Enter(); err != nil {
		return nil, false, err
	}
	defer lifetime.Exit()
	r, err := bridge.RefOf(o)
	if err != nil {
		return nil, false, err
	}
	p, toggled, st, exc := capi.GObjectPointer(r)
	runtime.KeepAlive(o)
	switch st {
	case capi.OK:
		return p, toggled, nil
	case capi.Err:
		return nil, false, fmt.Errorf("%w: %w", ErrNotGObject, bridge.NewError(exc))
	}
	return nil, false, pygi.ErrClosed
}

// Pointer returns the address of the GObject behind a PyGObject object,
// for identity checks; it is only meaningful while o lives. Any goroutine.
func Pointer(o *pygi.Object) (uintptr, error) {
	p, _, err := pointer(o)
	return uintptr(p), err
}

// ToGo returns gotk4's view of the GObject behind a PyGObject object: the
// same object, not a copy. gotk4 takes its own reference (a toggle
// reference; see the package documentation for what that means for
// lifetime).
//
// Objects whose Python wrapper holds a toggle reference are refused with
// ErrToggleTrap (see there). UI thread only: gotk4's wrappers are made
// there, where duet also releases them (lifetime.go).
func ToGo(o *pygi.Object) (*coreglib.Object, error) {
	if err := eventloop.RequireMain("widgets.ToGo"); err != nil {
		return nil, err
	}
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

// Cast returns the GObject behind a PyGObject object as the gotk4 type T
// (for example *gtk.Button, or gtk.Widgetter): an error, not a panic, when
// the object is not a T. UI thread only, like ToGo. (pygi.As converts
// Python values to Go values; Cast gives gotk4's view of a GObject.)
func Cast[T any](o *pygi.Object) (T, error) {
	var zero T
	if err := eventloop.RequireMain("widgets.Cast"); err != nil {
		return zero, err
	}
	obj, err := ToGo(o)
	if err != nil {
		return zero, err
	}
	v, ok := any(obj.Cast()).(T)
	if !ok {
		return zero, fmt.Errorf("widgets: the GObject is a %s, not a %T", obj.Type().Name(), zero)
	}
	return v, nil
}

// ToPython returns PyGObject's wrapper of a gotk4 object: the same GObject.
// Wrapping the same object twice gives the same Python wrapper while one is
// alive (PyGObject keeps the mapping). UI thread only.
func ToPython(obj coreglib.Objector) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.ToPython"); err != nil {
		return nil, err
	}
	base := coreglib.BaseObject(obj)
	if base == nil {
		return nil, fmt.Errorf("widgets: ToPython of a nil object")
	}
	if err := lifetime.Enter(); err != nil {
		return nil, err
	}
	defer lifetime.Exit()
	r, st, exc := capi.WrapGObject(base.Native())
	runtime.KeepAlive(obj)
	if st != capi.OK {
		return nil, bridge.NewError(exc)
	}
	return bridge.WrapOwned(r).(*pygi.Object), nil
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
