package widgets

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/internal/shape"
	"github.com/duet-gtk/duet/pygi"
)

// ErrStaleWrapper is wrapped by the error of a typed wrapper whose Python
// class no longer matches what the wrapper was generated from.
var ErrStaleWrapper = errors.New("widgets: the Python class has changed since its Go wrapper was generated")

// Generated is what cmd/duetgen knew of a Python class when it wrote a
// typed wrapper for it; code duetgen writes uses it, nothing else needs to.
// The wrapper's constructor and methods call Check, which compares the
// members the wrapper uses with the class as loaded, the first time a
// wrapper meets the class: a class edited since (a method gone or given
// other parameters or type hints, a property or signal of another type)
// makes every call fail, saying which member changed, rather than
// calling what the wrapper no longer describes. Members added since do
// not matter to the wrapper. The check is once per Go type: a program
// loads its class once.
type Generated struct {
	Class   string   // the Python class's name
	File    string   // the file it was generated from
	Members []string // one line per member the wrapper uses (internal/shape)

	ok  atomic.Bool // checked, and the class matched
	mu  sync.Mutex
	err error // the class did not match: every call says so
}

var shapeHelper = newOwn(pysrc.Embed("internal/shape", shape.Files).Module("duet_shape", "shape.py", own()...))

// Check returns nil when w's class matches g (the same members, each as it
// was), else an error wrapping ErrStaleWrapper. UI thread only (the first
// call on the UI thread does the work; later ones are one load).
func (g *Generated) Check(w *Widget) error {
	if g.ok.Load() {
		return nil
	}
	if err := eventloop.RequireMain("widgets.Generated.Check"); err != nil {
		return err
	}
	if w == nil || w.Object == nil {
		return fmt.Errorf("widgets: %s: %w", g.Class, pygi.ErrNilObject)
	}
	g.mu.Lock()
	err := g.err
	g.mu.Unlock()
	if err != nil {
		return err
	}
	// Not under g.mu: reading type hints evaluates the class's string
	// annotations, Python code that may call Go that uses this wrapper.
	m, err := shapeHelper.Get()
	if err != nil {
		return err
	}
	var b pygi.Block
	classes := pygi.BlockAs[[][]string](&b, b.CallMethod(m.Object, "live_members", w.Object, g.Class))
	if err := b.Err(); err != nil {
		return fmt.Errorf("widgets: checking the class %s: %w", g.Class, err) // not kept: it may pass later
	}
	// The class is one of those w's class derives from, most likely the
	// first; any that has every member as it was serves the wrapper.
	var changes []string
	for i, live := range classes {
		d := g.diff(live)
		if len(d) == 0 {
			g.ok.Store(true)
			return nil
		}
		if i == 0 {
			changes = d
		}
	}
	if len(changes) == 0 {
		changes = []string{"no class to compare with"}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = fmt.Errorf("%w: %s (from %s): %s; run go generate again", ErrStaleWrapper, g.Class, g.File, strings.Join(changes, "; "))
	}
	return g.err
}

// diff says how the members the wrapper uses differ in live.
func (g *Generated) diff(live []string) []string {
	byKey := map[string]string{}
	for _, l := range live {
		byKey[memberKey(l)] = l
	}
	var changes []string
	for _, want := range g.Members {
		k := memberKey(want)
		have, ok := byKey[k]
		switch {
		case !ok:
			changes = append(changes, k+" is gone (it was "+strings.TrimPrefix(want, kindOf(want)+" ")+")")
		case have != want:
			changes = append(changes, k+" changed: it was "+strings.TrimPrefix(want, kindOf(want)+" ")+
				", it is "+strings.TrimPrefix(have, kindOf(have)+" "))
		}
	}
	return slices.Compact(changes)
}

// memberKey is "method scale" of "method scale(factor: int) -> int" (and
// "property level" of "property level: gint, settable").
func memberKey(line string) string {
	kind := kindOf(line)
	rest := strings.TrimPrefix(line, kind+" ")
	if i := strings.IndexAny(rest, "(:"); i >= 0 {
		rest = rest[:i]
	}
	return kind + " " + rest
}

func kindOf(line string) string {
	kind, _, _ := strings.Cut(line, " ")
	return kind
}
