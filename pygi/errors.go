package pygi

import (
	"errors"
	"fmt"
	"slices"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrClosed: the Object (or an Object passed as an argument) was closed.
	ErrClosed = errors.New("pygi: object is closed")
	// ErrNilObject: a nil *Object was used as a receiver.
	ErrNilObject = errors.New("pygi: nil *Object")
	// ErrFinalized: the interpreter has been finalised (or is finalising).
	ErrFinalized = lifetime.ErrFinalized
	// ErrLoopRunning: Finalize was called while the event loop runs.
	ErrLoopRunning = lifetime.ErrLoopRunning
	// ErrInsideCall: Finalize was called from inside a Python call or WithGIL.
	ErrInsideCall = lifetime.ErrInsideCall
	// ErrFlushFailed: Finalize finalised Python, but flushing sys.stdout or
	// sys.stderr failed (a full disk, a closed pipe), so output was lost;
	// python3 exits with status 120 then.
	ErrFlushFailed = lifetime.ErrFlushFailed
	// ErrFinalizeBusy: Finalize was called on Python's own thread (a
	// function posted there) while another Finalize ran, which may need
	// that thread to finish: waiting for it could never end.
	ErrFinalizeBusy = lifetime.ErrFinalizeBusy
	// ErrWrongThread: Finalize must run on the thread that started Python
	// (the main thread) unless the event loop is running to take it there.
	ErrWrongThread = errors.New("pygi: Finalize must run on the OS thread that initialised Python (the main thread)")
	// ErrNoGI: PyGObject (the gi package) cannot be imported.
	ErrNoGI = errors.New("pygi: PyGObject (module gi) is not importable")
	// ErrConversion: a value cannot be converted between Go and Python.
	ErrConversion = errors.New("pygi: conversion failed")
)

// Error is a Python exception seen from Go.
type Error struct {
	Type      string   // qualified exception type, e.g. "ValueError" or "gi.repository.GLib.GError"
	Message   string   // str(exception)
	Traceback string   // the formatted traceback, as Python would print it
	MRO       []string // qualified names of the type and its bases, most derived first
	Value     *Object  // the exception instance

	cause error // a Go error the exception carries (set by the callbacks layer)
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Type
	}
	return e.Type + ": " + e.Message
}

// Matches reports whether the exception is an instance of the named type
// (qualified as in Type, e.g. "KeyError" or "LookupError").
func (e *Error) Matches(typeName string) bool {
	return e.Type == typeName || slices.Contains(e.MRO, typeName)
}

// Unwrap returns the Go error the exception carries, if it started as a Go
// error or panic inside a callback.
func (e *Error) Unwrap() error { return e.cause }

// ConversionError reports a value that cannot cross between Go and Python.
type ConversionError struct {
	GoType string // the Go type involved
	Python string // the Python type involved, when known
	Reason string
}

func (e *ConversionError) Error() string {
	switch {
	case e.Python != "" && e.GoType != "":
		return fmt.Sprintf("pygi: cannot convert Python %s to Go %s: %s", e.Python, e.GoType, e.Reason)
	case e.GoType != "":
		return fmt.Sprintf("pygi: cannot convert Go %s to Python: %s", e.GoType, e.Reason)
	default:
		return fmt.Sprintf("pygi: conversion failed: %s", e.Reason)
	}
}

func (e *ConversionError) Unwrap() error { return ErrConversion }

// newError builds an *Error from an exception slot (the caller's Slot is
// taken over). It must run inside an operation (between enter and exit).
func newError(exc capi.Ref) error {
	if !exc.Valid() {
		return &Error{Type: "SystemError", Message: "error return without an exception set"}
	}
	val := wrap(exc)
	e := &Error{Type: "BaseException", Value: val}
	info, st, infoExc := capi.Call(interp.helper.ref, "exc_info", []capi.Val{capi.SlotVal(exc)}, nil, 1, 0)
	if st != capi.OK {
		// Formatting failed; keep what C can tell without running Python.
		capi.Drain([]capi.Ref{infoExc})
		if name, st := capi.TypeName(exc); st == capi.OK {
			e.Type = name
		}
		return e
	}
	infoObj := wrap(info)
	defer infoObj.Close()
	var parts struct {
		name, msg, tb string
		mro           []string
	}
	if v, err := decodeTop(infoObj); err == nil {
		if t, ok := v.([]any); ok && len(t) == 4 {
			parts.name, _ = t[0].(string)
			parts.msg, _ = t[1].(string)
			parts.tb, _ = t[2].(string)
			if m, ok := t[3].([]any); ok {
				for _, s := range m {
					if s, ok := s.(string); ok {
						parts.mro = append(parts.mro, s)
					}
				}
			}
		}
	}
	e.Type, e.Message, e.Traceback, e.MRO = parts.name, parts.msg, parts.tb, parts.mro
	e.cause = lifetime.ErrorCause(exc)
	if e.Matches("KeyboardInterrupt") {
		// Out of Python into Go: the running loop ends, as python3's would,
		// whatever the Go code that gets this error does with it.
		lifetime.KeyboardInterruptReachedGo()
	}
	return e
}

// statusErr maps a failed status to a Go error.
func statusErr(st capi.Status, exc capi.Ref) error {
	switch st {
	case capi.Err:
		return newError(exc)
	case capi.Closed:
		return ErrClosed
	}
	return fmt.Errorf("pygi: unexpected status %d", st)
}

// PanicError is a Go panic recovered at one of duet's boundaries: in a Go
// callback that Python called (it reached Python as a GoPanic exception and
// comes back to Go inside the *Error of the call that saw it: use
// errors.As), or in work the event loop ran (eventloop.Invoke, timers).
type PanicError struct {
	Where string // the callback's name, or what the loop was running
	Value any    // what was passed to panic
	Stack string // the panicking goroutine's stack
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic in %s: %v", p.Where, p.Value) }

// Unwrap returns the panic value when it is an error.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}
