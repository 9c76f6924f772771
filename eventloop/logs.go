package eventloop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
// routing, slog.Default() is a tap: the records gotk4's writer makes of
// GLib's messages go to the handler (as "glib" records, like those of
// duet's own writer), and every other record goes on to the handler that
// was the default, so the program's own slog output does not move. When
// that was slog's own default handler, which prints through the log
// package, the tap prints as it does (level, message, attributes, with
// log's flags and prefix) to where log's output is, never through the log
// package: a program that makes the tap its default again
// (slog.SetDefault(slog.Default())) sends its log.Print lines through the
// tap, and slog's handler would take the log package's lock a second
// time. The log package's output and flags, which slog.SetDefault
// changes, are put back at once. Stop puts the previous default back, and
// log's output and flags with it, unless the program set a default of its
// own meanwhile; a RouteLogs after the program set its own taps that one.
// What cannot be helped from outside the log package: in the instant
// SetDefault has changed log's output and flags and RouteLogs (or stop)
// puts them back, a log.Print from another goroutine may come out without
// its flags, and a log.SetOutput from another goroutine at that very
// instant may be undone.

var routing struct {
	mu sync.Mutex
	// cur is read without mu: a GLib message or a log.Print may reach the
	// tap while RouteLogs or stop holds mu and waits on the log package's
	// lock (log.SetOutput), which that caller holds.
	cur  atomic.Pointer[route]
	emit *pygi.Object
	tap  *slog.Logger // slog.Default() while routing with gotk4's writer
	prev *slog.Logger // the default the tap replaced
	// logOut and logFlags are the log package's output and flags when the
	// tap went in.
	logOut   io.Writer
	logFlags int
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
	if capi.LogWriterIsGotk4() && (routing.tap == nil || slog.Default() != routing.tap) {
		routing.prev = slog.Default()
		routing.logOut, routing.logFlags = log.Writer(), log.Flags()
		routing.tap = slog.New(newTap(routing.prev.Handler(), routing.logOut))
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
					// The program may have made the tap its default once
					// more (slog.SetDefault(slog.Default())), which pointed
					// log's output at the tap and cleared log's flags:
					// both as they were, with the previous default. Not
					// when the program set a default of its own: its
					// SetDefault pointed log at its handler, its choice.
					tapped := isHandlerWriter(log.Writer())
					setDefaultKeepingLog(routing.prev)
					if tapped && slogsOwn(routing.prev.Handler()) && isHandlerWriter(log.Writer()) {
						log.SetOutput(routing.logOut)
						log.SetFlags(routing.logFlags)
					}
				}
				routing.tap, routing.prev, routing.logOut = nil, nil, nil
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
	slog.SetDefault(l)
	// Only what SetDefault set: a program's own SetOutput meanwhile stays.
	if w := log.Writer(); w != out && isHandlerWriter(w) {
		log.SetOutput(out)
		log.SetFlags(flags)
	}
}

// slogsOwn says whether h is slog's own default handler (the one that
// prints through the log package), which slog does not export.
func slogsOwn(h slog.Handler) bool { return fmt.Sprintf("%T", h) == "*slog.defaultHandler" }

// isHandlerWriter says whether w is what slog.SetDefault points the log
// package at: its writer into a slog.Handler.
func isHandlerWriter(w io.Writer) bool { return fmt.Sprintf("%T", w) == "*slog.handlerWriter" }

// glibTap is slog.Default()'s handler while routing with gotk4's writer.
type glibTap struct {
	next slog.Handler // the default's handler before routing
	out  slog.Handler // where the program's records go: next, or a printer
}

func newTap(next slog.Handler, logOut io.Writer) *glibTap {
	t := &glibTap{next: next, out: next}
	if slogsOwn(next) {
		t.out = &logPrinter{std: next, w: logOut}
	}
	return t
}

func (t *glibTap) Enabled(ctx context.Context, l slog.Level) bool {
	if h := currentHandler(); h != nil && h.Enabled(ctx, l) {
		return true
	}
	return t.out.Enabled(ctx, l)
}

// gotk4Writer is the prefix of the functions in gotk4's glib package.
const gotk4Writer = "github.com/diamondburned/gotk4/pkg/glib/v2."

// fromGotk4Writer says whether the record being handled comes from gotk4's
// log writer: a GLib message, whatever its fields (a message without a
// domain has none), and not a record of the program's that looks like one.
// By the record's PC, and when that names slog itself (gotk4's LogAttrs
// records LogAttrs, which inlining makes the caller it sees), by the stack,
// a few frames up.
func fromGotk4Writer(pc uintptr) bool {
	// The record's own PC settles most: a program's call of slog names the
	// program's function; only one inside slog says nothing.
	if fn := runtime.FuncForPC(pc); fn != nil {
		name := fn.Name()
		if strings.HasPrefix(name, gotk4Writer) {
			return true
		}
		if !strings.HasPrefix(name, "log/slog.") {
			return false
		}
	}
	return onStack(gotk4Writer)
}

// onStack says whether a function whose name begins with prefix is among
// the caller's callers, a few frames up.
func onStack(prefix string) bool {
	var pcs [16]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, prefix) {
			return true
		}
		if !more {
			return false
		}
	}
}

func (t *glibTap) Handle(ctx context.Context, r slog.Record) error {
	glib := fromGotk4Writer(r.PC)
	if h := currentHandler(); glib && h != nil {
		// As duet's own writer makes them (glibLog), from gotk4's fields.
		var domain string
		level := r.Level
		src := &slog.Source{}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "glib_domain":
				domain = a.Value.String()
			case "priority":
				if a.Value.String() == "3" { // G_LOG_LEVEL_ERROR's syslog priority
					level = slog.LevelError + 4
				}
			case "code_file":
				src.File = a.Value.String()
			case "code_line":
				src.Line, _ = strconv.Atoi(a.Value.String())
			case "code_func":
				src.Function = a.Value.String()
			}
			return true
		})
		if !h.Enabled(ctx, level) {
			return nil
		}
		g := slog.NewRecord(r.Time, level, r.Message, 0)
		g.AddAttrs(slog.String("logger", "glib"), slog.String("glib_domain", domain), slog.Any(slog.SourceKey, src))
		return h.Handle(ctx, g)
	}
	if !t.out.Enabled(ctx, r.Level) {
		return nil
	}
	return t.out.Handle(ctx, r)
}

// Tapped is the handler the tap forwards the program's records to: what
// the default would be without it (internal/reload asks, to know whether
// the default prints on stderr).
func (t *glibTap) Tapped() slog.Handler { return t.next }

// Loggers derived from the default while routing are the program's: they
// keep working as they would have, and outlive the tap.
func (t *glibTap) WithAttrs(as []slog.Attr) slog.Handler { return t.next.WithAttrs(as) }
func (t *glibTap) WithGroup(name string) slog.Handler    { return t.next.WithGroup(name) }

// logPrinter prints records as slog's own default handler does ("INFO
// message key=value", attributes quoted and grouped as slog's text
// handler writes them, which is what that handler uses, after log's flags
// and prefix as they are now, the file of the flags being the record's
// caller), with a logger of its own that writes where log's output is
// (where it was when routing began, for a log.Print that reached the tap
// through slog's writer into it): never through the log package's, whose
// lock that log.Print holds.
type logPrinter struct {
	std slog.Handler // slog's own, asked what is enabled (slog.SetLogLoggerLevel)
	w   io.Writer
}

// noBuiltIns leaves the attributes: level, message and time are written
// as slog's own handler writes them.
func noBuiltIns(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
		return slog.Attr{}
	}
	return a
}

func (p *logPrinter) Enabled(ctx context.Context, l slog.Level) bool { return p.std.Enabled(ctx, l) }

func (p *logPrinter) Handle(ctx context.Context, r slog.Record) error {
	var attrs bytes.Buffer
	if r.NumAttrs() > 0 {
		plain := slog.Record{Level: r.Level}
		r.Attrs(func(a slog.Attr) bool { plain.AddAttrs(a); return true })
		h := slog.NewTextHandler(&attrs, &slog.HandlerOptions{Level: slog.LevelDebug - 100, ReplaceAttr: noBuiltIns})
		if err := h.Handle(ctx, plain); err != nil {
			return err
		}
	}
	line := r.Level.String() + " " + r.Message
	if a := bytes.TrimSpace(attrs.Bytes()); len(a) > 0 {
		line += " " + string(a)
	}
	flags := log.Flags()
	if flags&(log.Lshortfile|log.Llongfile) != 0 && r.PC != 0 {
		f, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
		file := f.File
		if flags&log.Lshortfile != 0 {
			file = filepath.Base(file)
		}
		line = fmt.Sprintf("%s:%d: %s", file, f.Line, line)
		flags &^= log.Lshortfile | log.Llongfile
	}
	w := p.w
	if !insideLog() {
		w = log.Writer() // where the program's log.Print lines go now
	}
	return log.New(w, log.Prefix(), flags).Output(0, line)
}

// insideLog says whether this goroutine is inside the log package's
// output, which holds its lock (a log.Print that slog's writer into the
// tap sent here): log.Writer would wait for that lock for good.
func insideLog() bool { return onStack("log.") }

func (p *logPrinter) WithAttrs(as []slog.Attr) slog.Handler { return p.std.WithAttrs(as) }
func (p *logPrinter) WithGroup(name string) slog.Handler    { return p.std.WithGroup(name) }

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
