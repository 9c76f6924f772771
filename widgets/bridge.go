package widgets

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

// ErrNotGObject: a Python object that is not a GObject was given to the bridge.
var ErrNotGObject = errors.New("widgets: not a GObject")

// pointer returns the GObject* behind a PyGObject object. It is borrowed:
// valid while o (which holds a reference to the GObject) is alive.
func pointer(o *pygi.Object) (unsafe.Pointer, error) {
	if err := bridge.Enter(); err != nil {
		return nil, err
	}
	defer bridge.Exit()
	r, err := bridge.RefOf(o)
	if err != nil {
		return nil, err
	}
	p, st, exc := capi.GObjectPointer(r)
	runtime.KeepAlive(o)
	switch st {
	case capi.OK:
		return p, nil
	case capi.Err:
		return nil, fmt.Errorf("%w: %w", ErrNotGObject, bridge.NewError(exc))
	}
	return nil, pygi.ErrClosed
}

// Pointer returns the address of the GObject behind a PyGObject object,
// for identity checks; it is only meaningful while o lives.
func Pointer(o *pygi.Object) (uintptr, error) {
	p, err := pointer(o)
	return uintptr(p), err
}

// ToGo returns gotk4's view of the GObject behind a PyGObject object: the
// same object, not a copy. gotk4 takes its own reference (a toggle
// reference; see the package documentation for what that means for
// lifetime).
func ToGo(o *pygi.Object) (*coreglib.Object, error) {
	p, err := pointer(o)
	if err != nil {
		return nil, err
	}
	obj := takeTracked(p) // gotk4 takes its own reference while o still holds one
	runtime.KeepAlive(o)
	return obj, nil
}

// As returns the GObject behind a PyGObject object as the gotk4 type T
// (for example *gtk.Button, or gtk.Widgetter): an error, not a panic, when
// the object is not a T.
func As[T any](o *pygi.Object) (T, error) {
	var zero T
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
// alive (PyGObject keeps the mapping).
func ToPython(obj coreglib.Objector) (*pygi.Object, error) {
	base := coreglib.BaseObject(obj)
	if base == nil {
		return nil, fmt.Errorf("widgets: ToPython of a nil object")
	}
	if err := bridge.Enter(); err != nil {
		return nil, err
	}
	defer bridge.Exit()
	r, st, exc := capi.WrapGObject(base.Native())
	runtime.KeepAlive(obj)
	if st != capi.OK {
		return nil, bridge.NewError(exc)
	}
	return bridge.WrapOwned(r).(*pygi.Object), nil
}

// Call calls a PyGObject method on a gotk4 object, through its Python
// wrapper. It is how Python widgets are packed into gotk4 containers
// without giving them a gotk4 wrapper: Call(box, "append", chart.Object).
func Call(obj coreglib.Objector, method string, args ...any) (*pygi.Object, error) {
	py, err := ToPython(obj)
	if err != nil {
		return nil, err
	}
	defer py.Close()
	return py.CallMethod(method, args...)
}
