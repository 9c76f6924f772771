package eventloop

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
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
// messages to slog.Default() (GLib accepts one writer per process); while
// routing, RouteLogs makes slog.Default() use the handler too, and stop
// puts the previous default back.

var routing struct {
	mu       sync.Mutex
	handler  slog.Handler
	emit     *pygi.Object
	prevDflt *slog.Logger
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
	routing.handler = h
	capi.LogRoute(true)
	if capi.LogWriterIsGotk4() {
		if routing.prevDflt == nil {
			routing.prevDflt = slog.Default()
		}
		slog.SetDefault(slog.New(h))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			routing.mu.Lock()
			defer routing.mu.Unlock()
			if routing.handler != h {
				return // replaced meanwhile
			}
			routing.handler = nil
			capi.LogRoute(false)
			setRoute(nil)
			if routing.prevDflt != nil {
				slog.SetDefault(routing.prevDflt)
				routing.prevDflt = nil
			}
		})
	}, nil
}

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

func currentHandler() slog.Handler {
	routing.mu.Lock()
	defer routing.mu.Unlock()
	return routing.handler
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
