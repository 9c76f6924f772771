package reload

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

//go:embed *.py
var pyFiles embed.FS

var (
	pyEmbed = pysrc.Embed("internal/reload", pyFiles)
	helper  = pyEmbed.Module("duet_reload", "reload.py", pysrc.UIThread())
)

// Outcomes of a reload.
const (
	Applied  = "applied"           // the new code runs
	Restart  = "restart needed"    // it runs, but for what a running process cannot take
	KeptOld  = "kept the old code" // it did not compile, or raised: nothing changed
	Skipped  = "skipped"           // the module is no longer loaded from that file
	noChange = "no code changed"
)

// A Result is what one reload did.
type Result struct {
	Module, Path string
	Outcome      string
	// Counts of what was applied: module functions and class methods whose
	// code changed, methods added and removed; for a .ui file, the placed
	// objects replaced by the new interface's. Redrawn: the widgets in
	// windows whose class the module defines, queued to be measured and
	// drawn again (GTK draws a widget again only when asked: a changed
	// do_snapshot would not show otherwise).
	Functions, Methods, Added, Removed, Objects, Redrawn int
	Restart                                              []string // "Owner: what", one per owner
	Error, Traceback                                     string   // KeptOld: the exception, its traceback
	Saved                                                time.Time
	Took                                                 time.Duration // the reload itself, on the UI thread
	Line                                                 string        // what it said on stderr (the traceback follows a KeptOld)
}

var observers struct {
	mu  sync.Mutex
	fns map[int]func(Result)
	n   int
}

// Observe calls fn (on the UI thread) after each reload, until stop.
func Observe(fn func(Result)) (stop func()) {
	observers.mu.Lock()
	defer observers.mu.Unlock()
	if observers.fns == nil {
		observers.fns = map[int]func(Result){}
	}
	observers.n++
	id := observers.n
	observers.fns[id] = fn
	return func() {
		observers.mu.Lock()
		delete(observers.fns, id)
		observers.mu.Unlock()
	}
}

// Now reloads module name from src at once, as a save of its file would,
// and reports it to out (nil: stderr). UI thread only.
func Now(name, src string, out io.Writer) (Result, error) {
	if err := eventloop.RequireMain("reload.Now"); err != nil {
		return Result{}, err
	}
	registry.mu.Lock()
	r := registry.recs[name]
	registry.mu.Unlock()
	if r == nil {
		return Result{}, fmt.Errorf("reload: no module %s was loaded from a file", name)
	}
	path := r.path
	if path == "" {
		path = r.fsPath
	}
	if out == nil {
		out = os.Stderr
	}
	return run(r, path, src, time.Time{}, out), nil
}

// run reloads r from src on the UI thread, says so and tells the
// observers.
func run(r *record, path, src string, saved time.Time, out io.Writer) Result {
	res := Result{Module: r.name, Path: path, Saved: saved}
	start := time.Now()
	if !current(r) {
		res.Outcome = Skipped
		res.Error = "the module was loaded again since"
	} else {
		apply(r, src, &res)
	}
	res.Took = time.Since(start)
	res.Line = line(&res)
	fmt.Fprintln(out, res.Line)
	if res.Outcome == KeptOld && res.Traceback != "" {
		io.WriteString(out, strings.TrimRight(res.Traceback, "\n")+"\n")
	}
	logResult(&res)
	banner(&res)
	observers.mu.Lock()
	fns := make([]func(Result), 0, len(observers.fns))
	for _, fn := range observers.fns {
		fns = append(fns, fn)
	}
	observers.mu.Unlock()
	for _, fn := range fns {
		fn(res)
	}
	return res
}

func apply(r *record, src string, res *Result) {
	if r.rebuild != nil {
		n, restart, err := r.rebuild(src)
		if err != nil {
			res.Outcome = KeptOld
			res.Error = err.Error()
			return
		}
		registry.mu.Lock()
		r.applied = src
		registry.mu.Unlock()
		res.Objects, res.Restart = n, restart
		res.Outcome = Applied
		if len(restart) > 0 {
			res.Outcome = Restart
		}
		return
	}
	registry.mu.Lock()
	old := r.applied
	registry.mu.Unlock()
	var out map[string]any
	err := pygi.WithGIL(func() error {
		m, err := helper.Load()
		if err != nil {
			return err
		}
		o, err := m.CallMethod("reload", r.name, r.filename, src, old)
		if err != nil {
			return err
		}
		defer o.Close()
		out, err = pygi.As[map[string]any](o)
		return err
	})
	if err != nil {
		res.Outcome = KeptOld
		res.Error = err.Error()
		var pe *pygi.Error
		if errors.As(err, &pe) {
			res.Traceback = pe.Traceback
		}
		return
	}
	if ok, _ := out["ok"].(bool); !ok {
		res.Error, _ = out["error"].(string)
		res.Traceback, _ = out["traceback"].(string)
		res.Outcome = KeptOld
		if strings.HasPrefix(res.Error, "the module ") {
			res.Outcome = Skipped
		}
		return
	}
	registry.mu.Lock()
	r.applied = src
	registry.mu.Unlock()
	count := func(k string) int { n, _ := out[k].(int64); return int(n) }
	res.Functions, res.Methods, res.Added, res.Removed = count("functions"), count("methods"), count("added"), count("removed")
	res.Redrawn = count("redrawn")
	res.Restart = group(out["restart"])
	res.Outcome = Applied
	if len(res.Restart) > 0 {
		res.Outcome = Restart
	}
}

// group joins the [owner, what] pairs the helper returns into one entry
// per owner, in the order they came.
func group(v any) []string {
	pairs, _ := v.([]any)
	var owners []string
	whats := map[string][]string{}
	for _, p := range pairs {
		ow, _ := p.([]any)
		if len(ow) != 2 {
			continue
		}
		o, _ := ow[0].(string)
		w, _ := ow[1].(string)
		if _, seen := whats[o]; !seen {
			owners = append(owners, o)
		}
		whats[o] = append(whats[o], w)
	}
	out := make([]string, 0, len(owners))
	for _, o := range owners {
		out = append(out, o+": "+strings.Join(whats[o], ", "))
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (res *Result) counts() string {
	var parts []string
	if res.Functions > 0 {
		parts = append(parts, plural(res.Functions, "function", "functions"))
	}
	if res.Methods > 0 {
		parts = append(parts, plural(res.Methods, "method", "methods"))
	}
	if res.Added > 0 {
		parts = append(parts, fmt.Sprintf("%d added", res.Added))
	}
	if res.Removed > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", res.Removed))
	}
	if res.Objects > 0 {
		parts = append(parts, plural(res.Objects, "object", "objects")+" rebuilt")
	}
	if len(parts) == 0 {
		return noChange
	}
	return strings.Join(parts, ", ")
}

// line is the reload's report: one line whatever the error or the
// restart reasons hold (a Python exception's message may have several),
// so that a log or a terminal shows one reload per line.
func line(res *Result) string {
	head := "duet reload: " + filepath.Base(res.Path) + ": "
	switch res.Outcome {
	case KeptOld:
		s := head + KeptOld + ": " + oneLine(res.Error)
		if res.Traceback != "" {
			s += " (traceback follows)"
		}
		return s
	case Skipped:
		return head + "not reloaded: " + oneLine(res.Error)
	}
	restart := Restart + ": " + oneLine(strings.Join(res.Restart, "; "))
	switch c := res.counts(); {
	case len(res.Restart) == 0:
		return head + Applied + " (" + c + ")"
	case c == noChange:
		return head + restart
	default:
		return head + Applied + " (" + c + "); " + restart
	}
}

// oneLine joins the lines of s, trimmed, with a space.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// logResult logs the reload with slog.Default(), unless that is Go's
// default logger writing to stderr, which would say the line twice.
func logResult(res *Result) {
	h := slog.Default().Handler()
	if t, ok := h.(interface{ Tapped() slog.Handler }); ok { // eventloop.RouteLogs' tap
		h = t.Tapped()
	}
	if fmt.Sprintf("%T", h) == "*slog.defaultHandler" && log.Writer() == os.Stderr {
		return
	}
	attrs := []slog.Attr{slog.String("file", res.Path), slog.String("module", res.Module),
		slog.String("outcome", res.Outcome), slog.Duration("took", res.Took)}
	level := slog.LevelInfo
	switch res.Outcome {
	case KeptOld:
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", res.Error), slog.String("traceback", res.Traceback))
	case Skipped:
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", res.Error))
	default:
		attrs = append(attrs, slog.Int("functions", res.Functions), slog.Int("methods", res.Methods),
			slog.Int("added", res.Added), slog.Int("removed", res.Removed))
		if len(res.Restart) > 0 {
			level = slog.LevelWarn
			attrs = append(attrs, slog.String("restart", strings.Join(res.Restart, "; ")))
		}
	}
	slog.Default().LogAttrs(context.Background(), level, "duet reload", attrs...)
}
