// Package bridge lets duet's own packages reach pygi's internals without
// widening pygi's public API. pygi fills the hooks in its init; the values
// typed any are *pygi.Object (bridge cannot name the type: pygi imports it).
package bridge

import (
	"io/fs"
	"reflect"

	"github.com/duet-gtk/duet/internal/capi"
)

var (
	// WrapOwned makes an Object that takes over r.
	WrapOwned func(r capi.Ref) any
	// WrapBorrowed makes an Object for a callback argument: it does not own
	// r and reads as closed once Invalidate is called.
	WrapBorrowed func(r capi.Ref) any
	// Invalidate ends a borrowed Object's validity.
	Invalidate func(o any)
	// WrapLazy makes the Object a lazy signal handler is given for a
	// GObject (see capi.RunLazy): borrowed, its wrapper made on first use.
	WrapLazy func(gobj uintptr) any
	// EndLazy ends a lazy argument when its handler returns and hands
	// back the reference of the wrapper made for it, if any (owned: the
	// caller releases it). Inside the handler's entry.
	EndLazy func(o any) (capi.Ref, bool)
	// RefOf returns the ref an Object designates (ErrClosed and friends
	// otherwise). The caller keeps the Object alive while it uses the ref.
	RefOf func(o any) (capi.Ref, error)
	// NewRef converts a Go value as pygi.New does, but returns the owned ref
	// itself (status capi.None, and no ref, for None).
	NewRef func(v any) (capi.Ref, capi.Status, error)
	// NewError turns an exception ref (taken over) into a Go error.
	NewError func(exc capi.Ref) error
	// Keep makes an Object permanent: shared, never released, Close a no-op.
	Keep func(o any)
	// PythonFiles is pygi's embedded Python (its bootstrap, which
	// internal/pysrc lists with every package's files).
	PythonFiles fs.FS
	// ExecCompiled is pygi.ExecModule given src compiled ahead as well
	// (nil: compile src), for internal/pysrc's precompiled files.
	ExecCompiled func(name, src, filename string, compiled []byte) (any, error)
)

// FuncToPython makes a Go func (a non-nil reflect.Func) into a Python
// callable, an *Object (package callbacks sets it, through
// internal/pyobj.SetFuncConverter).
var FuncToPython func(v reflect.Value) (any, error)

// Decode converts an Object into the value dst points to, as pygi.As does
// for a type known at compile time.
var Decode func(o any, dst any) error
