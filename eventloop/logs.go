package eventloop

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
)

// Python's and GLib's output channels print on stderr, as under python3.
// RouteLogs sends them to one slog.Handler instead: Python warnings
// (warnings.warn, PyGObject's deprecation warnings), records of the logging
// module that reach logging's last resort (no handler of the app's own
// configuration took them, which is where python3 prints them), unraisable
// exceptions (sys.unraisablehook, e.g. raised in __del__), and GLib/GTK log
// messages (g_warning, Gtk-CRITICAL).
//
// Each record carries "logger" (the Python logger's name, "py.warnings",
// "py.unraisable", or "glib" with "glib_domain"), the source file and line
// (slog's source attribute), and "thread" (the Python thread's name). Levels
// map as logging's do onto slog's: DEBUG -4, INFO 0, WARNING 4, ERROR 8,
// CRITICAL 12; GLib's debug, info/message, warning, critical/error likewise.
//
// With gotk4 linked in, GLib's writer is gotk4's, which sends GLib's
// messages to slog.Default() (GLib accepts one writer per process). While
// routing, slog.Default() is a tap: the records gotk4 makes of GLib's
// messages go to the handler (as "glib" records, like those of duet's own
// writer), and every other record goes on to the handler that was the
// default, untouched, so the program's own slog output does not move. The
// log package's output and flags, which slog.SetDefault changes, are put
// back as they were at once; stop puts the previous default back unless
// the program set its own meanwhile (then GLib's messages follow the
// program's choice from then on).

var routing struct {
	mu sync.Mutex
	// cur is read without mu: a GLib message or a log.Print may reach the
	// tap while RouteLogs or stop holds mu and waits on the log package's
	// lock (log.SetOutput), which that caller holds.
	cur  atomic.Pointer[route]
	emit *pygi.Object
	tap     *slog.Logger // slog.Default() while routing with gotk4's writer
	prev    *slog.Logger // the default the tap replaced
	// swapping: slog.SetDefault has pointed the log package at the tap and
	// its output is not yet put back; see glibTap.Handle.
	swapping atomic.Bool
	logOut   io.Writer // the log package's output then
}

func init() {
	capi.LogInstall()
	capi.SetGLibLogHandler(glibLog)
}

// RouteLogs routes Python's and GLib's output channels to h until stop is
// called (stop restores stderr). A second RouteLogs replaces the first.
func RouteLogs(h slog.Handler) (stop func(), err error) {
	if err := installExceptionHooks(); err != nil {
		return nil, err
	}
	routing.mu.Lock()
	defer routing.mu.Unlock()
	if routing.emit == nil {
		routing.emit, err = callbacks.New(pythonLog, callbacks.Name("duet_log"))
		if err != nil {
			return nil, err
		}
	}
	if err := setRoute(routing.emit); err != nil {
		return nil, err
	}
	rt := &route{h}
	routing.cur.Store(rt)
	capi.LogRoute(true)
	if capi.LogWriterIsGotk4() && routing.tap == nil {
		routing.prev = slog.Default()
		routing.tap = slog.New(&glibTap{next: routing.prev.Handler()})
		setDefaultKeepingLog(routing.tap)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			routing.mu.Lock()
			defer routing.mu.Unlock()
			if !routing.cur.CompareAndSwap(rt, nil) {
				return // replaced meanwhile
			}
			capi.LogRoute(false)
			setRoute(nil)
			if routing.tap != nil {
				if slog.Default() == routing.tap {
					setDefaultKeepingLog(routing.prev)
				}
				routing.tap, routing.prev = nil, nil
			}
		})
	}, nil
}

// setDefaultKeepingLog is slog.SetDefault without its effect on the log
// package: for a handler other than slog's own, SetDefault points log's
// output at the handler and clears log's flags, which would change how the
// program's log.Print lines look (and leave them changed after stop).
func setDefaultKeepingLog(l *slog.Logger) {
	out, flags := log.Writer(), log.Flags()
	routing.logOut = out
	routing.swapping.Store(true)
	slog.SetDefault(l)
	log.SetOutput(out)
	log.SetFlags(flags)
	routing.swapping.Store(false)
}

// glibTap is slog.Default()'s handler while routing with gotk4's writer.
type glibTap struct {
	next slog.Handler // the default's handler before routing
}

func (t *glibTap) Enabled(ctx context.Context, l slog.Level) bool {
	if routing.swapping.Load() {
		return true // see Handle
	}
	if h := currentHandler(); h != nil && h.Enabled(ctx, l) {
		return true
	}
	return t.next.Enabled(ctx, l)
}

func (t *glibTap) Handle(ctx context.Context, r slog.Record) error {
	var domain string
	glib := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "glib_domain" {
			glib, domain = true, a.Value.String()
			return false
		}
		return true
	})
	if h := currentHandler(); glib && h != nil {
		if !h.Enabled(ctx, r.Level) {
			return nil
		}
		// As duet's own writer makes them (glibLog), from gotk4's fields.
		g := slog.NewRecord(r.Time, r.Level, r.Message, 0)
		src := &slog.Source{}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "code_file":
				src.File = a.Value.String()
			case "code_line":
				src.Line, _ = strconv.Atoi(a.Value.String())
			case "code_func":
				src.Function = a.Value.String()
			}
			return true
		})
		g.AddAttrs(slog.String("logger", "glib"), slog.String("glib_domain", domain), slog.Any(slog.SourceKey, src))
		return h.Handle(ctx, g)
	}
	if routing.swapping.Load() {
		// A log.Print in the instant between slog.SetDefault and putting the
		// log package's output back reaches here holding the log package's
		// lock; slog's own default handler would take it again and deadlock.
		_, err := fmt.Fprintln(routing.logOut, r.Message)
		return err
	}
	if !t.next.Enabled(ctx, r.Level) {
		return nil
	}
	return t.next.Handle(ctx, r)
}

// Tapped is the handler the tap forwards the program's records to: what
// the default would be without it (internal/reload asks, to know whether
// the default prints on stderr).
func (t *glibTap) Tapped() slog.Handler { return t.next }

// Loggers derived from the default while routing are the program's: they
// keep working as they would have, and outlive the tap.
func (t *glibTap) WithAttrs(as []slog.Attr) slog.Handler { return t.next.WithAttrs(as) }
func (t *glibTap) WithGroup(name string) slog.Handler    { return t.next.WithGroup(name) }

func setRoute(emit *pygi.Object) error {
	m, err := hooksPy.Load()
	if err != nil {
		return err
	}
	var arg any = emit
	if emit == nil {
		arg = nil
	}
	r, err := m.CallMethod("route", arg)
	r.Close()
	return err
}

// route is one RouteLogs' handler (a pointer, so that stop knows its own
// even when two calls pass equal handlers).
type route struct{ h slog.Handler }

func currentHandler() slog.Handler {
	if rt := routing.cur.Load(); rt != nil {
		return rt.h
	}
	return nil
}

// pythonLog is the Go side of the Python channels.
func pythonLog(level int, logger, msg, file string, line int, thread string) {
	h := currentHandler()
	if h == nil {
		return
	}
	lvl := slog.Level((level - 20) * 4 / 10)
	if !h.Enabled(context.Background(), lvl) {
		return
	}
	r := slog.NewRecord(timeNow(), lvl, msg, 0)
	r.AddAttrs(slog.String("logger", logger), slog.Any(slog.SourceKey, &slog.Source{File: file, Line: line}),
		slog.String("thread", thread))
	h.Handle(context.Background(), r)
}

// GLib's level flags (GLogLevelFlags).
const (
	glibError    = 1 << 2
	glibCritical = 1 << 3
	glibWarning  = 1 << 4
	glibMessage  = 1 << 5
	glibInfo     = 1 << 6
	glibDebug    = 1 << 7
)

func glibLog(level int, domain, msg, file, line, fn string) {
	h := currentHandler()
	if h == nil {
		return
	}
	lvl := slog.LevelInfo
	switch {
	case level&glibError != 0:
		lvl = slog.LevelError + 4
	case level&glibCritical != 0:
		lvl = slog.LevelError
	case level&glibWarning != 0:
		lvl = slog.LevelWarn
	case level&glibDebug != 0:
		lvl = slog.LevelDebug
	}
	if !h.Enabled(context.Background(), lvl) {
		return
	}
	r := slog.NewRecord(timeNow(), lvl, msg, 0)
	n, _ := strconv.Atoi(line)
	r.AddAttrs(slog.String("logger", "glib"), slog.String("glib_domain", domain),
		slog.Any(slog.SourceKey, &slog.Source{File: file, Line: n, Function: fn}))
	h.Handle(context.Background(), r)
}

var timeNow = time.Now
