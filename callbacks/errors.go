package callbacks

import (
	"embed"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

// The Python side of the package: the exception classes and the
// coroutine functions over Go async funcs (errors.py), and the connect
// hook (connect.py).
//
//go:embed *.py
var pyFiles embed.FS

var python = pysrc.Embed("callbacks", pyFiles)

var excPy = python.Module("duet_callbacks", "errors.py")

func excModule() (*pygi.Object, error) { return excPy.Load() }

// Go errors that exceptions carry, by handle. A capsule holding the handle
// rides on the exception; its destructor releases the entry.
var goErrors struct {
	m    sync.Map // uintptr -> error
	next atomic.Uintptr
}

func releaseHandle(h uintptr) { goErrors.m.Delete(h) }

// raiseGo raises GoError (or GoPanic for a *pygi.PanicError) carrying
// err. Runs inside a callback, with the GIL held. The exception is raised
// last, in the same crossing that releases Go's reference to it: every
// other reference made here is released before, so no release (which can
// run __del__ or GTK dispose) runs with the exception pending.
func raiseGo(err error) {
	e, msg, ok := makeGoException(err)
	if !ok {
		capi.RaiseMessage(capi.RuntimeError, msg)
		return
	}
	if capi.RaiseOwned(e) != capi.OK {
		capi.RaiseMessage(capi.RuntimeError, msg)
	}
}

// makeGoException builds the exception instance carrying err (GoError, or
// GoPanic for a *pygi.PanicError) and returns Go's owned ref to it, every
// temporary already released, and its message.
func makeGoException(err error) (_ capi.Ref, msg string, ok bool) {
	cls, msg, stack := "GoError", err.Error(), ""
	var p *pygi.PanicError
	if errors.As(err, &p) {
		// str(e) stays one line; the Go stack is a note (PEP 678), which
		// Python's tracebacks print after the message.
		cls, msg, stack = "GoPanic", p.Error(), p.Stack
	}
	m, merr := excModule()
	if merr != nil {
		return capi.Ref{}, msg, false
	}
	h := goErrors.next.Add(1)
	goErrors.m.Store(h, err)
	capRef, st := capi.HandleCapsule(h)
	if st != capi.OK {
		goErrors.m.Delete(h)
		return capi.Ref{}, msg, false
	}
	capsule := pyobj.Owned(capRef) // owns the handle from now on
	defer capsule.Close()
	class, err2 := m.Attr(cls)
	if err2 != nil {
		return capi.Ref{}, msg, false
	}
	defer class.Close()
	e, cerr := m.CallMethod("make", class, msg, capsule, stack)
	if cerr != nil {
		return capi.Ref{}, msg, false
	}
	defer e.Close()
	r, rerr := pyobj.Ref(e)
	if rerr != nil {
		return capi.Ref{}, msg, false
	}
	own, st := capi.Clone(r)
	return own, msg, st == capi.OK
}

// errorCause finds the Go error an exception carries: its __go_error__
// attribute is a capsule holding a handle into goErrors. It runs for every
// *pygi.Error pygi builds (registered with internal/lifetime), at the capi
// level so that it makes no Objects of its own.
func errorCause(exc capi.Ref) error {
	has, st, e := capi.HasAttr(exc, "__go_error__")
	if st != capi.OK || !has {
		capi.Drain([]capi.Ref{e})
		return nil
	}
	c, st, e := capi.GetAttr(exc, "__go_error__")
	if st != capi.OK {
		capi.Drain([]capi.Ref{e})
		return nil
	}
	h := capi.CapsuleHandle(c)
	capi.Close(c)
	if v, ok := goErrors.m.Load(h); ok {
		return v.(error)
	}
	return nil
}
