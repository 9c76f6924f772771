package callbacks

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/internal/callsite"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
)

// Where a callback was made. The function's own code address is always
// known (free: a func literal's line is normally the connect call itself).
// With provenance on (package forensics, DUET_DEBUG=callbacks), the call
// stack above New or Connect is kept too, as PCs resolved only when shown:
// the first frame outside duet's library is the user's call site.

const siteDepth = callsite.Depth

type site [siteDepth]uintptr

// captureSite records the callers above the public entry point; skip
// counts the frames to leave out (captureSite's own included).
func captureSite(skip int) *site {
	if !diag.Provenance() {
		return nil // the common case costs a nil pointer, not 64 bytes an entry
	}
	s := new(site)
	runtime.Callers(skip+1, s[:])
	return s
}

// libraryPrefixes are duet's own packages: frames in them are not the
// user's call site.
var libraryPrefixes = []string{
	"github.com/duet-gtk/duet/pygi",
	"github.com/duet-gtk/duet/callbacks",
	"github.com/duet-gtk/duet/internal/",
	"github.com/duet-gtk/duet/widgets",
	"github.com/duet-gtk/duet/eventloop",
	"github.com/duet-gtk/duet/app",
	"reflect.",
	"runtime.",
}

// created says where the callback was made: file:line of the user's call
// site when provenance was on, else where its Go function was written.
// duet's own callbacks (their function is in duet's library, as those
// duet makes for itself, lazily, inside whatever call of yours came first)
// say where duet wrote them, except those duet made for its caller
// (app.AddAction's, say: internal/callsite), which say where that call was.
func (e *entry) created() string {
	f := runtime.FuncForPC(e.code)
	if e.site != nil && (e.behalf || f == nil || !duetOwn(f.Name())) {
		frames := runtime.CallersFrames(e.site[:])
		for {
			f, more := frames.Next()
			if f.Function != "" && !stdlib(f.Function) && !library(f.Function) {
				return fmt.Sprintf("%s:%d", shortFile(f.File), f.Line)
			}
			if !more {
				break
			}
		}
	}
	if f == nil {
		return "?"
	}
	file, line := f.FileLine(e.code)
	return fmt.Sprintf("%s:%d", shortFile(file), line)
}

// duetOwn tells a function of duet's library (not its tests) from the
// program's, and from reflect's stubs (callbacks.Async's).
func duetOwn(function string) bool {
	return strings.HasPrefix(function, "github.com/duet-gtk/duet/") && library(function) &&
		!strings.Contains(function, "_test.")
}

// library: function is in one of libraryPrefixes' packages, not merely in
// a package whose path starts the same (the app package's tests,
// github.com/duet-gtk/duet/app_test, are the program's code).
func library(function string) bool {
	return slices.ContainsFunc(libraryPrefixes, func(p string) bool {
		if !strings.HasPrefix(function, p) {
			return false
		}
		if strings.HasSuffix(p, "/") || strings.HasSuffix(p, ".") {
			return true
		}
		rest := function[len(p):]
		return rest != "" && (rest[0] == '.' || rest[0] == '/')
	})
}

// stdlib tells Go's own packages (no dot in the first path element) from
// the program's: a callback made through sync.Once was made by its caller.
func stdlib(function string) bool {
	first := function
	if i := strings.IndexByte(first, '/'); i >= 0 {
		first = first[:i]
	} else if i := strings.IndexByte(first, '.'); i >= 0 {
		first = first[:i]
	}
	return first != "main" && !strings.Contains(first, ".")
}

func shortFile(f string) string {
	if i := strings.LastIndex(f, "/"); i >= 0 {
		if j := strings.LastIndex(f[:i], "/"); j >= 0 {
			return f[j+1:]
		}
	}
	return f
}

// liveCallbacks groups the callbacks alive now by name and creation site,
// most numerous first (the census's callbacks table).
func liveCallbacks() []diag.Live {
	counts := map[[2]string]int{}
	registry.handles.each(func(e *entry) { counts[[2]string{e.name, e.created()}]++ })
	out := make([]diag.Live, 0, len(counts))
	for k, n := range counts {
		out = append(out, diag.Live{Name: k[0], Site: k[1], Count: n})
	}
	slices.SortFunc(out, func(a, b diag.Live) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Name+a.Site, b.Name+b.Site)
	})
	return out
}

// ---- the graveyard (DUET_DEBUG=callbacks) ----------------------------------

// A grave is what is known of a freed callback, kept while its native
// state is in quarantine (the C side keeps the same number, oldest out
// first).
type grave struct {
	name, site, by string
	at             time.Duration
}

const graveMax = 4096

var graveyard struct {
	mu    sync.Mutex
	m     map[uintptr]grave
	order []uintptr
}

func bury(e *entry, by string) {
	if !diag.DebugCallbacks() {
		return
	}
	g := grave{name: e.name, site: e.created(), by: by, at: time.Since(diag.Start)}
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	if graveyard.m == nil {
		graveyard.m = map[uintptr]grave{}
	}
	if len(graveyard.order) == graveMax {
		delete(graveyard.m, graveyard.order[0])
		graveyard.order = graveyard.order[1:]
	}
	graveyard.m[e.handle] = g
	graveyard.order = append(graveyard.order, e.handle)
}

// hasGrave: the handle's callback was freed under DUET_DEBUG=callbacks and
// its record is still kept.
func hasGrave(handle uintptr) bool {
	graveyard.mu.Lock()
	defer graveyard.mu.Unlock()
	_, ok := graveyard.m[handle]
	return ok
}

// diagnosis is the message duet prints when Python or a signal calls a
// quarantined callback.
func diagnosis(handle uintptr, signal, typ string, instance uintptr) string {
	graveyard.mu.Lock()
	g, ok := graveyard.m[handle]
	graveyard.mu.Unlock()
	var b strings.Builder
	b.WriteString("duet: use after free: ")
	if ok {
		fmt.Fprintf(&b, "callback %s (%s), freed by %s at %.2f s", g.name, g.site, g.by, g.at.Seconds())
	} else {
		fmt.Fprintf(&b, "callback with handle %#x (freed; its record left the graveyard)", handle)
	}
	switch {
	case signal != "" && typ != "":
		fmt.Fprintf(&b, ", called from signal '%s' of %s %#x", signal, typ, instance)
	case signal != "":
		fmt.Fprintf(&b, ", called from signal '%s'", signal)
	default:
		b.WriteString(", called from Python (the Python traceback follows in the crash report)")
	}
	return b.String()
}

// callbackDead runs when a call reaches a freed callback: a quarantined
// one, or one whose free raced the call (it landed while the call came in
// through the live trampoline), or, without the quarantine, one whose
// handle Go no longer knows. It says what is known, then aborts (the Go
// runtime answers SIGABRT with every goroutine's stack; the crash report,
// when on, adds the rest).
func callbackDead(handle uintptr, signal, typ string, instance uintptr) {
	if hasGrave(handle) || diag.DebugCallbacks() {
		fmt.Fprintln(os.Stderr, diagnosis(handle, signal, typ, instance))
	} else {
		by := "Python"
		if signal != "" {
			by = fmt.Sprintf("signal '%s'", signal)
		}
		fmt.Fprintf(os.Stderr, "duet: fatal: %s called a Go callback whose handle %#x was already freed: use after free (DUET_DEBUG=callbacks says which callback, where it was made and who freed it)\n", by, handle)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGABRT)
	time.Sleep(5 * time.Second)
	os.Exit(2)
}

func init() {
	capi.SetDeadHandler(callbackDead)
	capi.SetDebugCallbacks(diag.DebugCallbacks())
}
