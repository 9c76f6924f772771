// Package callsite lets duet's own APIs that make a callback for their
// caller say where the caller is. app.AddAction wraps the caller's func in
// a func of its own: a callback is sited where its Go function was written
// (or, with provenance on, at the first caller outside duet), and both
// would name app/app.go and the UI thread's loop. The census should name
// the line that called AddAction.
//
// Package callbacks fills in New at init (a package that needs a service
// from a higher one gets it by registration); what imports this package
// imports callbacks too.
package callsite

import (
	"runtime"

	"github.com/duet-gtk/duet/pygi"
)

// Depth is how many callers a Site keeps: enough to climb out of duet's own
// frames (app.Main calls OnActivate, which calls connect) to the program's.
const Depth = 8

// A Site is the stack above a duet API, outermost last.
type Site [Depth]uintptr

// Caller is the stack above the function that calls it: called first thing
// in app.AddAction, it starts at AddAction's caller. Capture it before any
// hop to the UI thread, where the caller's stack is gone.
func Caller() Site {
	var s Site
	runtime.Callers(3, s[:]) // runtime.Callers, Caller, the duet API
	return s
}

// New makes fn a callback named name, as callbacks.New does, sited at the
// first frame of site outside duet's library, whatever provenance says.
var New func(fn any, name string, site Site) (*pygi.Object, error)
