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
	cls := "GoError"
	msg := err.Error()
	stack := ""
	var p *pygi.PanicError
	if errors.As(err, &p) {
		// str(e) stays one line; the Go stack is a note (PEP 678), which
		// Python's tracebacks print after the message.
		cls = "GoPanic"
		msg = p.Error()
		stack = p.Stack
	}
	e, ok := makeGoException(cls, msg, stack, err)
	if !ok {
		capi.RaiseMessage(capi.RuntimeError, msg)
		return
	}
	if capi.RaiseOwned(e) != capi.OK {
		capi.RaiseMessage(capi.RuntimeError, msg)
	}
}

// makeGoException builds the exception instance and returns Go's owned ref
// to it, every temporary already released.
func makeGoException(cls, msg, stack string, err error) (capi.Ref, bool) {
	m, merr := excModule()
	if merr != nil {
		return capi.Ref{}, false
	}
	h := goErrors.next.Add(1)
	goErrors.m.Store(h, err)
	capRef, st := capi.HandleCapsule(h)
	if st != capi.OK {
		goErrors.m.Delete(h)
		return capi.Ref{}, false
	}
	capsule := pyobj.Owned(capRef) // owns the handle from now on
	defer capsule.Close()
	class, err2 := m.Attr(cls)
	if err2 != nil {
		return capi.Ref{}, false
	}
	defer class.Close()
	e, cerr := m.CallMethod("make", class, msg, capsule, stack)
	if cerr != nil {
		return capi.Ref{}, false
	}
	defer e.Close()
	r, rerr := pyobj.Ref(e)
	if rerr != nil {
		return capi.Ref{}, false
	}
	own, st := capi.Clone(r)
	return own, st == capi.OK
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
