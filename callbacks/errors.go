package callbacks

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

// PanicError is a Go panic recovered at the callback boundary. It reaches
// Python as a GoPanic exception and comes back to Go (through any pygi call
// that sees the exception) inside a *pygi.Error: use errors.As.
type PanicError struct {
	Callback string // the callback's name
	Value    any    // what was passed to panic
	Stack    string // the panicking goroutine's stack
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("panic in Go callback %s: %v", p.Callback, p.Value)
}

// Unwrap returns the panic value when it is an error.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

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
`

var exc struct {
	once sync.Once
	err  error
	mod  *pygi.Object // holds make, GoError and GoPanic
}

func excModule() (*pygi.Object, error) {
	exc.once.Do(func() {
		g, err := pygi.NewGlobals()
		if err != nil {
			exc.err = err
			return
		}
		defer g.Close()
		if err := g.SetItem("src", excSource); err != nil {
			exc.err = err
			return
		}
		if err := pygi.Exec("import sys, types\nm = types.ModuleType('duet_callbacks')\n"+
			"exec(compile(src, '<duet callbacks>', 'exec'), m.__dict__)\nsys.modules['duet_callbacks'] = m\n", g); err != nil {
			exc.err = err
			return
		}
		exc.mod, exc.err = pygi.Import("duet_callbacks")
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

// raiseGo raises GoError (or GoPanic for a *PanicError) carrying err. Runs
// inside a callback, with the GIL held.
func raiseGo(err error) {
	cls := "GoError"
	msg := err.Error()
	stack := ""
	var p *PanicError
	if errors.As(err, &p) {
		cls = "GoPanic"
		msg = p.Error() + "\n\nGo stack:\n" + p.Stack
		stack = p.Stack
	}
	m, merr := excModule()
	if merr != nil {
		capi.RaiseMessage(capi.RuntimeError, msg)
		return
	}
	h := goErrors.next.Add(1)
	goErrors.m.Store(h, err)
	capRef, st := capi.HandleCapsule(h)
	if st != capi.OK {
		goErrors.m.Delete(h)
		capi.RaiseMessage(capi.RuntimeError, msg)
		return
	}
	capsule := bridge.WrapOwned(capRef).(*pygi.Object) // owns the handle from now on
	defer capsule.Close()
	class, _ := m.Attr(cls)
	e, cerr := m.CallMethod("make", class, msg, capsule, stack)
	if cerr != nil {
		capi.RaiseMessage(capi.RuntimeError, msg)
		return
	}
	defer e.Close()
	r, rerr := bridge.RefOf(e)
	if rerr != nil || capi.Raise(r) != capi.OK {
		capi.RaiseMessage(capi.RuntimeError, msg)
	}
}

// errorCause finds the Go error an exception carries (pygi calls it for
// every *pygi.Error it builds).
func errorCause(excObj *pygi.Object) error {
	ok, err := excObj.HasAttr("__go_error__")
	if err != nil || !ok {
		return nil
	}
	c, err := excObj.Attr("__go_error__")
	if err != nil {
		return nil
	}
	defer c.Close()
	r, err := bridge.RefOf(c)
	if err != nil {
		return nil
	}
	h := capi.CapsuleHandle(r)
	if v, ok := goErrors.m.Load(h); ok {
		return v.(error)
	}
	return nil
}
