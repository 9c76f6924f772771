package report_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/pygi"
)

const zeroTB = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nZeroDivisionError: division by zero\n"

func zeroDivision() *pygi.Error {
	return &pygi.Error{Type: "ZeroDivisionError", Message: "division by zero", Traceback: zeroTB}
}

func TestTextShowsThePythonTraceback(t *testing.T) {
	err := fmt.Errorf("computing: %w", zeroDivision())
	assert.Equal(t, "app: activate: computing: ZeroDivisionError: division by zero\n"+zeroTB,
		report.Text("app: activate", err))
}

func TestTextWithoutPythonOrPanic(t *testing.T) {
	assert.Equal(t, "app: boom\n", report.Text("app", errors.New("boom")))
	assert.Equal(t, "boom\n", report.Text("", errors.New("boom")))
	assert.Equal(t, "app: <nil>\n", report.Text("app", nil))
	// An exception raised from C has no frames: its one line adds nothing.
	one := &pygi.Error{Type: "ValueError", Message: "bad", Traceback: "ValueError: bad\n"}
	assert.Equal(t, "x: ValueError: bad\n", report.Text("x", one))
}

func TestTextShowsEveryTracebackAndStackOnce(t *testing.T) {
	inner := zeroDivision()
	panicked := &pygi.PanicError{Where: "callback f", Value: fmt.Errorf("wrapped: %w", inner), Stack: "goroutine 1 [running]:\nmain.f()\n"}
	outer := &pygi.Error{Type: "GoPanic", Message: "panic in callback f", Traceback: "Traceback (most recent call last):\n  File \"x.py\", line 3, in g\nGoPanic: panic in callback f\n"}
	err := errors.Join(fmt.Errorf("a: %w", outer), panicked, inner)
	text := report.Text("eventloop", err)
	assert.Equal(t, 1, strings.Count(text, zeroTB), "the same traceback once:\n%s", text)
	assert.Contains(t, text, "File \"x.py\", line 3, in g")
	assert.Contains(t, text, "panic in callback f: wrapped: ZeroDivisionError: division by zero\ngoroutine 1 [running]:\nmain.f()\n",
		"a panic deeper in the chain is named above its stack")
}

func TestTextOfAPanicAtTheTop(t *testing.T) {
	p := &pygi.PanicError{Where: "eventloop.Invoke", Value: "boom", Stack: "goroutine 1 [running]:\n"}
	assert.Equal(t, "panic in eventloop.Invoke: boom\ngoroutine 1 [running]:\n", report.Text("", p))
}

type selfWrap struct{}

func (selfWrap) Error() string   { return "loops" }
func (e selfWrap) Unwrap() error { return e }

type nilUnwrap struct{ err *pygi.Error }

func (n *nilUnwrap) Error() string { return "nil inside" }
func (n *nilUnwrap) Unwrap() error { return n.err }

func TestTextOfOddChains(t *testing.T) {
	assert.Equal(t, "x: loops\n", report.Text("x", selfWrap{}), "an Unwrap that returns itself ends")
	assert.Equal(t, "x: nil inside\n", report.Text("x", &nilUnwrap{}), "a nil *pygi.Error in the chain is skipped")
	var nilErr *pygi.Error
	assert.NotPanics(t, func() { report.Text("x", nilErr) })
	many := make([]error, 100000)
	for i := range many {
		many[i] = zeroDivision()
	}
	assert.Equal(t, 1, strings.Count(report.Text("x", errors.Join(many...)), zeroTB))
}

// A panic in a Go callback that Python called comes back inside the
// *pygi.Error of the call: its message is one line, and the report shows
// the Go stack once (the traceback carries it as a note).
func TestTextOfAPanicInACallbackShowsItsStackOnce(t *testing.T) {
	cb, err := callbacks.New(func() { panic("deliberate") }, callbacks.Name("panicky"))
	require.NoError(t, err)
	defer cb.Close()
	_, err = cb.Call()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "\n", "Error() is one line")
	text := report.Text("", err)
	assert.Equal(t, 1, strings.Count(text, "recoverInto"), "the Go stack once:\n%s", text)
	assert.Contains(t, text, "Go stack:")
	assert.Contains(t, text, "GoPanic: panic in Go callback panicky: deliberate")
}
