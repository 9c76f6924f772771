// Package report is how duet tells the user about an error it cannot
// return to anyone: an activate handler that failed, a Python signal
// handler that raised, a panic in work the loop ran. err.Error() is one
// line and says what; where it happened is in the parts of the chain that
// line leaves out, so the text adds the Python traceback of every
// *pygi.Error and the Go stack of every *pygi.PanicError in err's chain.
package report

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/duet-gtk/duet/pygi"
)

// Print writes Text(prefix, err) to stderr.
func Print(prefix string, err error) { Fprint(os.Stderr, prefix, err) }

// Fprint writes Text(prefix, err) to w.
func Fprint(w io.Writer, prefix string, err error) { io.WriteString(w, Text(prefix, err)) }

// Text is "prefix: err" on its first line (no prefix when empty), then the
// tracebacks and stacks the chain holds, each once. It ends in a newline.
func Text(prefix string, err error) string {
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteString(": ")
	}
	if err == nil {
		b.WriteString("<nil>\n")
		return b.String()
	}
	// fmt, not err.Error(): it survives an Error method that panics (a nil
	// pointer of an error type, say), and a report must never crash.
	b.WriteString(strings.TrimRight(fmt.Sprint(err), "\n"))
	b.WriteByte('\n')
	seen := map[string]bool{}
	budget := maxErrors
	walk(err, 0, &budget, func(e error) {
		switch e := e.(type) {
		case *pygi.Error:
			if e == nil {
				return
			}
			tb := strings.TrimRight(e.Traceback, "\n")
			// A one-line traceback is the exception's own line (raised
			// from C, or never raised): the first line said it already.
			if !strings.Contains(tb, "\n") || seen[tb] {
				return
			}
			seen[tb] = true
			b.WriteString(tb)
			b.WriteByte('\n')
		case *pygi.PanicError:
			if e == nil {
				return
			}
			stack := strings.TrimRight(e.Stack, "\n")
			if stack == "" || seen[stack] || strings.Contains(b.String(), stack) {
				return // a GoPanic's traceback carries its Go stack as a note
			}
			seen[stack] = true
			if e != err {
				// Deeper in the chain the first line may not name it.
				b.WriteString(fmt.Sprint(e))
				b.WriteByte('\n')
			}
			b.WriteString(stack)
			b.WriteByte('\n')
		}
	})
	return b.String()
}

// The walk's bounds: an Unwrap that returns its own receiver, or a join
// of a million errors, must not hang the report of an error.
const (
	maxDepth  = 64
	maxErrors = 1000
)

// walk visits err and what it wraps, outermost first.
func walk(err error, depth int, budget *int, visit func(error)) {
	if err == nil || depth >= maxDepth || *budget <= 0 {
		return
	}
	*budget--
	visit(err)
	for _, e := range unwrap(err) {
		walk(e, depth+1, budget, visit)
	}
}

// unwrap is what err wraps; nothing when its Unwrap panics (a method on a
// nil pointer).
func unwrap(err error) (errs []error) {
	defer func() {
		if recover() != nil {
			errs = nil
		}
	}()
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	}
	return nil
}
