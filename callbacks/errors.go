package callbacks

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// The Python exception classes, defined once per interpreter.
const excSource = `
class GoError(Exception):
    """An error returned by a Go callback; __go_error__ carries it back to Go."""

class GoPanic(BaseException):
    """A Go panic recovered at the boundary. It derives from BaseException
    so that 'except Exception' does not swallow it by accident; go_stack
    holds the Go stack."""

def make(cls, message, handle, stack):
    e = cls(message)
    e.__go_error__ = handle
    e.go_stack = stack
    return e

def make_async(start, cancel, name):
    """A coroutine function over a Go async func (callbacks.Async): start
    runs the Go func on a goroutine, which settles the future on the loop
    (duet's Invoke, not call_soon_threadsafe: no GIL taken off the UI
    thread, no self-pipe), and returns the await's token; cancel(token)
    cancels the Go func's context."""
    import asyncio

    async def call(*args):
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        token = start(fut, getattr(loop, "_duet_loop", False), *args)
        try:
            return await fut
        except asyncio.CancelledError:
            cancel(token)
            raise

    call.__name__ = call.__qualname__ = name
    return call

def settle(fut, ok, value):
    """Runs on duet's UI thread. A future of the loop running there is set
    directly; one of another loop (asyncio.run in a Python thread, say) is
    set on its own loop, which call_soon_threadsafe also wakes."""
    import asyncio

    loop = fut.get_loop()
    if loop.is_closed():
        return  # nobody awaits any more
    if asyncio._get_running_loop() is loop:
        _settle_now(fut, ok, value)
    else:
        try:
            loop.call_soon_threadsafe(_settle_now, fut, ok, value)
        except RuntimeError:
            pass  # closed meanwhile

def _settle_now(fut, ok, value):
    if fut.done():
        return  # cancelled
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)
`

var exc struct {
	once sync.Once
	err  error
	mod  *pygi.Object // holds make, GoError and GoPanic
}

func excModule() (*pygi.Object, error) {
	exc.once.Do(func() {
		exc.mod, exc.err = pygi.ExecModule("duet_callbacks", excSource, "<duet callbacks>")
	})
	return exc.mod, exc.err
}

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
		cls = "GoPanic"
		msg = p.Error() + "\n\nGo stack:\n" + p.Stack
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
