package explore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

const duetModule = "github.com/duet-gtk/duet/"

func panicFinding(p *pygi.PanicError) *Finding {
	return &Finding{
		Kind:    KindPanic,
		Message: firstLine(fmt.Sprint(p.Value)),
		Where:   panicSite(p.Stack),
		Detail:  p.Stack,
	}
}

func exceptionFinding(e *pygi.Error, how string) *Finding {
	msg := e.Type
	if m := firstLine(e.Message); m != "" {
		msg += ": " + m
	}
	if how != "" {
		msg += " (" + how + ")"
	}
	return &Finding{Kind: KindException, Message: msg, Where: tracebackSite(e.Traceback), Detail: e.Traceback}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// panicSite is the first frame below the panic that is the program's: not
// the runtime's, not duet's library (its tests and examples are programs),
// not a binding's. A stack reads "function(args)\n\tfile:line +0x..".
func panicSite(stack string) string {
	lines := strings.Split(stack, "\n")
	below := false
	for i := 0; i+1 < len(lines); i++ {
		fn := lines[i]
		if strings.HasPrefix(fn, "panic(") {
			below = true
			continue
		}
		if !below || strings.HasPrefix(fn, "\t") || fn == "" || !strings.HasPrefix(lines[i+1], "\t") {
			continue
		}
		if library(fn) {
			continue
		}
		loc, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " ")
		file, line, _ := strings.Cut(loc, ":")
		return filepath.Base(file) + ":" + line
	}
	return ""
}

func library(fn string) bool {
	switch {
	case strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") || strings.HasPrefix(fn, "reflect."):
		return true
	case strings.HasPrefix(fn, "github.com/diamondburned/"):
		return true
	case strings.HasPrefix(fn, duetModule):
		rest := strings.TrimPrefix(fn, duetModule)
		pkg := rest
		if i := strings.LastIndex(pkg, "/"); i >= 0 {
			pkg = pkg[i:]
		}
		pkg, _, _ = strings.Cut(pkg, ".")
		program := strings.HasSuffix(pkg, "_test") || strings.HasPrefix(rest, "examples/") ||
			strings.HasPrefix(rest, "stress/") || strings.HasPrefix(rest, "cmd/")
		return !program
	}
	return false
}

var tracebackFrame = regexp.MustCompile(`File "([^"]+)", line (\d+)`)

// tracebackSite is the innermost frame of a Python traceback.
func tracebackSite(tb string) string {
	m := tracebackFrame.FindAllStringSubmatch(tb, -1)
	if len(m) == 0 {
		return ""
	}
	last := m[len(m)-1]
	return filepath.Base(last[1]) + ":" + last[2]
}

// logHandler takes the records eventloop.RouteLogs routes while a run
// goes: GLib's and GTK's warnings and criticals are findings (GLib's own
// domains' too, which PyGObject would have made Python warnings: the
// explorer's log handler sends those here as GLib records, see watch_logs
// in explore.py); the rest goes on to next, as it would have been printed.
type logHandler struct {
	x     *explorer
	next  slog.Handler
	attrs []slog.Attr
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	glib, domain := false, ""
	look := func(a slog.Attr) bool {
		switch a.Key {
		case "logger":
			glib = glib || a.Value.String() == "glib"
		case "glib_domain":
			glib, domain = true, a.Value.String()
		}
		return true
	}
	for _, a := range h.attrs {
		look(a)
	}
	r.Attrs(look)
	if glib && r.Level >= slog.LevelWarn {
		level := "warning"
		if r.Level >= slog.LevelError {
			level = "critical"
		}
		if domain == "" {
			domain = "GLib"
		}
		f := &Finding{Kind: KindLog, Message: fmt.Sprintf("%s-%s: %s", domain, strings.ToUpper(level), firstLine(r.Message))}
		if h.x.opts.IgnoreLog != nil && h.x.opts.IgnoreLog.MatchString(f.Message) {
			return h.next.Handle(ctx, r)
		}
		if !h.x.seenBefore(f) { // a repeat is only counted: no walk for it
			f.Detail = h.x.whereNamed(f.Message)
		}
		h.x.found(f)
		return nil
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{x: h.x, next: h.next.WithAttrs(as), attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{x: h.x, next: h.next.WithGroup(name), attrs: h.attrs}
}

// stderrLogs prints what is not a finding on stderr, as it was before the
// run routed it.
func stderrLogs() slog.Handler { return slog.NewTextHandler(os.Stderr, nil) }

// named is an object as GLib's and GTK's messages name one: its type, then
// its address ("GtkGizmo 0x33d9640").
var named = regexp.MustCompile(`\b(Gtk[A-Za-z0-9]+|Adw[A-Za-z0-9]+|[A-Z][A-Za-z0-9]+) (0x[0-9a-fA-F]{4,})\b`)

// whereNamed says where in the UI the widget a message names is (a
// warning about GTK's own internal widget, a scrollbar's trough, says
// nothing of which one it is): "GtkGizmo 0x33d9640 is at window 'main' >
// … > GtkScrollbar#0 > GtkRange#0 > GtkGizmo#0". Only on the UI thread,
// where the message comes from and the widget tree may be read; the walk
// only reads.
func (x *explorer) whereNamed(msg string) string {
	m := named.FindStringSubmatch(msg)
	if m == nil || x.mod == nil || !eventloop.IsMain() {
		return ""
	}
	r, err := x.mod.CallMethod("widget_at", m[2])
	if err != nil {
		return ""
	}
	defer r.Close()
	if where := r.String(); where != "" {
		return m[1] + " " + m[2] + " is at " + where
	}
	return ""
}
