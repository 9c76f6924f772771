// Package pyobj is how duet's own packages reach what a *pygi.Object holds
// without widening pygi's public API: typed functions over the hooks pygi
// fills in internal/bridge (which cannot name *pygi.Object: pygi imports
// it), and Use, the one way to run a C call on an Object's reference.
package pyobj

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
)

// Owned makes an Object that takes over r.
func Owned(r capi.Ref) *pygi.Object { return bridge.WrapOwned(r).(*pygi.Object) }

// Borrowed makes an Object for a callback argument: it does not own r and
// reads as closed once Invalidate is called.
func Borrowed(r capi.Ref) *pygi.Object { return bridge.WrapBorrowed(r).(*pygi.Object) }

// Invalidate ends a borrowed Object's validity.
func Invalidate(o *pygi.Object) { bridge.Invalidate(o) }

// Lazy makes the Object a lazy signal handler is given for a GObject
// (capi.RunLazy): borrowed, its Python wrapper made on first use.
func Lazy(gobj uintptr) *pygi.Object { return bridge.WrapLazy(gobj).(*pygi.Object) }

// EndLazy ends a lazy argument when its handler returns and hands back
// the reference of the wrapper made for it, if any (owned: the caller
// releases it). Inside the handler's entry.
func EndLazy(o *pygi.Object) (capi.Ref, bool) { return bridge.EndLazy(o) }

// Keep makes an Object permanent: shared, never released, Close a no-op.
func Keep(o *pygi.Object) { bridge.Keep(o) }

// NewRef converts a Go value as pygi.New does, but returns the owned ref
// itself (status capi.None, and no ref, for None). Inside the gate.
func NewRef(v any) (capi.Ref, capi.Status, error) { return bridge.NewRef(v) }

// Error turns an exception ref (taken over) into a Go error.
func Error(exc capi.Ref) error { return bridge.NewError(exc) }

// Use runs f inside the lifetime gate with the reference o designates,
// keeping o alive until f returns, and turns f's status into an error:
// capi.Err gives the exception f returns (taken over), a stale or closed
// reference pygi.ErrClosed. capi.None counts as success.
func Use(o *pygi.Object, f func(r capi.Ref) (capi.Status, capi.Ref)) error {
	if err := lifetime.Enter(); err != nil {
		return err
	}
	defer lifetime.Exit()
	r, err := bridge.RefOf(o)
	if err != nil {
		return err
	}
	st, exc := f(r)
	runtime.KeepAlive(o)
	return Status(st, exc)
}

// Status is the error a C call's status says (see Use).
func Status(st capi.Status, exc capi.Ref) error {
	switch st {
	case capi.OK, capi.None:
		return nil
	case capi.Err:
		return bridge.NewError(exc)
	}
	return pygi.ErrClosed
}

// Ref returns the reference o designates, for callers already inside the
// gate that keep o alive themselves.
func Ref(o *pygi.Object) (capi.Ref, error) { return bridge.RefOf(o) }

// NewCallback makes a callback as callbacks.New (or callbacks.Async) does,
// named name; broken makes it with the deliberately broken ownership that
// reproduces the classic crash (see callbacks' goOwnedBroken): for the
// stress harness only. The callback's creation site is NewCallback's
// caller, or skip frames above it (a wrapper's caller). Package callbacks
// sets it.
var NewCallback func(fn any, name string, broken, async bool, skip int) (*pygi.Object, error)

// SetFuncConverter sets how pygi converts Go funcs (package callbacks:
// into callables).
func SetFuncConverter(f func(v reflect.Value) (*pygi.Object, error)) {
	bridge.FuncToPython = func(v reflect.Value) (any, error) {
		o, err := f(v)
		if err != nil {
			return nil, err
		}
		return o, nil
	}
}

// Decode converts o into the value dst points to, as pygi.As does for a
// type known at compile time (package callbacks' arguments, by reflection).
func Decode(o *pygi.Object, dst any) error { return bridge.Decode(o, dst) }

// ErrNotException: ExceptionError was given something else (a hook called
// by hand with a value that is no exception).
var ErrNotException = errors.New("pyobj: not an exception")

// ExceptionError describes a Python exception instance (an object Python
// code caught, or a hook received) as a *pygi.Error, as if it had been
// raised through a pygi call.
func ExceptionError(exc *pygi.Object) (*pygi.Error, error) {
	base, err := pygi.Eval("BaseException", nil)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	if ok, err := exc.IsInstance(base); err != nil {
		return nil, err
	} else if !ok {
		name, _ := exc.TypeName()
		return nil, fmt.Errorf("%w: a %s", ErrNotException, name)
	}
	var described error
	err = Use(exc, func(r capi.Ref) (capi.Status, capi.Ref) {
		c, st := capi.Clone(r)
		if st == capi.OK {
			described = bridge.NewError(c) // takes c over
		}
		return st, capi.Ref{}
	})
	if err != nil {
		return nil, err
	}
	e, ok := described.(*pygi.Error)
	if !ok {
		return nil, fmt.Errorf("pyobj: not an exception: %v", described)
	}
	return e, nil
}
