package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/callsite"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// Options configure an application.
type Options struct {
	// ID is the application id, e.g. "org.example.Hello" (required; see
	// g_application_id_is_valid).
	ID string
	// Adwaita backs the application with Adw.Application (libadwaita),
	// which must be installed; otherwise Gtk.Application.
	Adwaita bool
	// NonUnique runs every instance on its own, without a single-instance
	// D-Bus name (G_APPLICATION_NON_UNIQUE).
	NonUnique bool
	// SkipFinalize leaves the embedded Python running when Run returns, for
	// apps that prefer a fast exit; by default Run finalises it.
	SkipFinalize bool
	// FinalizeTimeout bounds how long Run waits for Python calls still in
	// flight on other goroutines before it gives up finalising (default 5 s).
	FinalizeTimeout time.Duration
	// Venv is a Python virtual environment (python3 -m venv) whose packages
	// the app's Python code uses, as that environment's python3 would see
	// them; empty means none ($VIRTUAL_ENV is not read: pass
	// os.Getenv("VIRTUAL_ENV") to follow the user's shell). It needs New to
	// be the first use of Python (see pygi.Init).
	Venv string
	// HostSignals leaves SIGINT and SIGTERM to the program, which handles
	// them itself (signal.Notify, or signal.NotifyContext with its context
	// given to Run): Run then neither subscribes to them nor hands
	// them back. By default Run owns them while it runs (see Run).
	HostSignals bool
	// CrashReport turns crash reports on (forensics.EnableCrashReports with
	// the default file): a crash then says which callbacks and crossings
	// led to it. DUET_CRASH_REPORT does the same without a rebuild.
	CrashReport bool
	// Census adds the census window (kit.ShowCensus) as the app action
	// "app.census" with the accelerator Ctrl+Shift+C, as GTK's inspector is
	// on Ctrl+Shift+D; DUET_CENSUS=1 does the same without a rebuild.
	Census bool
	// Reload turns on the development mode that applies edits of the
	// app's Python files to the running app (see "Reloading" in the
	// package doc); DUET_RELOAD=1 does the same without a rebuild. Off, it
	// costs nothing: no watcher, no thread, no wakeup.
	Reload bool
	// ReloadDir is the directory on disk that the files widgets.LoadFS
	// loaded come from (the directory holding the go:embed directive's
	// files), for Reload. Empty: the directory of the code that called
	// LoadFS, then that of the source file that called Main or New (where
	// go run builds from), checked against the files' contents.
	ReloadDir string
}

// App is a GTK application that Go and Python share: one GApplication,
// created through PyGObject, reachable from Python (Python) and from gotk4
// (Gtk).
type App struct {
	opts Options
	py   *pygi.Object // the Gtk.Application (or Adw.Application) wrapper

	mu       sync.Mutex
	gtkApp   *gtk.Application // set by New, never changed
	running  bool
	handlers []uint64 // duet's connections on the application, undone before Python goes

	// activateFailed: Main's activate returned an error (the app is
	// quitting; DUET_EXPLORE's run does not start).
	activateFailed atomic.Bool

	// reload: Options.Reload or DUET_RELOAD; reloadGuess: the directory of
	// the program's source file that made the app.
	reload      bool
	reloadGuess string
}

// onMain runs fn on the main thread: directly when called there, through the
// loop when it runs, otherwise it fails with eventloop.ErrNotMain.
func onMain(what string, fn func() error) error {
	if eventloop.IsMain() {
		return fn()
	}
	if eventloop.Running() {
		return eventloop.InvokeWait(context.Background(), fn)
	}
	return eventloop.RequireMain(what)
}

// New creates the application. It starts Python (and GTK) if needed.
func New(opts Options) (*App, error) {
	if opts.FinalizeTimeout == 0 {
		opts.FinalizeTimeout = 5 * time.Second
	}
	a := &App{opts: opts}
	if opts.Reload || envOn("DUET_RELOAD") {
		a.reload = true
		a.reloadGuess = programDir()
	}
	if opts.CrashReport && forensics.CrashReportPath() == "" {
		if _, err := forensics.EnableCrashReports(""); err != nil {
			return nil, err
		}
	}
	if opts.Venv != "" {
		if err := pygi.Init(pygi.Options{Venv: opts.Venv}); err != nil {
			return nil, err
		}
	}
	err := onMain("app.New", func() error {
		if err := pygi.RequireVersion("Gtk", "4.0"); err != nil {
			return err
		}
		gio, err := pygi.Import("gi.repository.Gio")
		if err != nil {
			return err
		}
		defer gio.Close()
		gapp, err := gio.Attr("Application")
		if err != nil {
			return err
		}
		valid, err := gapp.CallMethod("id_is_valid", opts.ID)
		if err != nil {
			return err
		}
		if v, _ := pygi.As[bool](valid); !v {
			return fmt.Errorf("app: %q is not a valid application id (like org.example.App)", opts.ID)
		}
		ns, class := "Gtk", "Application"
		if opts.Adwaita {
			if err := pygi.RequireVersion("Adw", "1"); err != nil {
				return fmt.Errorf("app: Adwaita asked for but not available (apt-get install gir1.2-adw-1): %w", err)
			}
			ns = "Adw"
		}
		mod, err := pygi.Import("gi.repository." + ns)
		if err != nil {
			return err
		}
		defer mod.Close()
		cls, err := mod.Attr(class)
		if err != nil {
			return err
		}
		// From the module imported above: an __import__ with a fromlist
		// would also look for a submodule gi.repository.Gio.Gio on every
		// sys.path entry.
		flags, err := gio.Attr("ApplicationFlags")
		if err != nil {
			return err
		}
		f := "FLAGS_NONE"
		if opts.NonUnique {
			f = "NON_UNIQUE"
		}
		flag, err := flags.Attr(f)
		if err != nil {
			return err
		}
		a.py, err = cls.Call(pygi.Kw{"application_id": opts.ID, "flags": flag})
		if err != nil {
			return err
		}
		// gotk4's view, made once here on the UI thread: Gtk then only hands
		// it out. The application lives as long as the process, so gotk4
		// keeping its toggle reference for good costs nothing.
		a.gtkApp, err = widgets.Cast[*gtk.Application](a.py)
		if err != nil {
			return fmt.Errorf("app: the application is not a Gtk.Application: %w", err)
		}
		// One rule for Go handlers on every connect path (see widgets).
		if err := widgets.InitGTK(); err != nil {
			return err
		}
		if opts.Census || envOn("DUET_CENSUS") {
			return a.addAction("census", []string{"<Control><Shift>c"}, a.showCensus, nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// programDir is the directory of the program's source file that called
// New (or Main): the first caller outside this package. With go run, that
// is on the developer's disk, next to the files go:embed took.
func programDir() string {
	var pcs [16]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/duet-gtk/duet/app.") && f.File != "" {
			if !filepath.IsAbs(f.File) {
				return "" // built with -trimpath: no source directory
			}
			dir := filepath.Dir(f.File)
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				return dir
			}
			return ""
		}
		if !more {
			return ""
		}
	}
}

func envOn(name string) bool {
	switch os.Getenv(name) {
	case "1", "on", "true", "yes":
		return true
	}
	return false
}

// showCensus opens the census window over the active window.
func (a *App) showCensus() {
	parent, err := a.py.CallMethod("get_active_window")
	if err == nil && parent.IsNone() {
		parent.Close()
		parent = nil
	}
	if w, err := kit.ShowCensus(parent); err != nil {
		report.Print("app: census", err)
	} else {
		w.Close()
	}
	if parent != nil {
		parent.Close()
	}
}

// AddAction adds the application action "app.<name>" that runs fn when
// activated (from a menu, a button's action-name, or one of accels, in
// GTK's syntax such as "<Control>q").
func (a *App) AddAction(name string, accels []string, fn func()) error {
	at := callsite.Caller()
	return a.addAction(name, accels, fn, &at)
}

// addAction is AddAction for the caller at at; nil for duet's own actions,
// which the census then sites here.
func (a *App) addAction(name string, accels []string, fn func(), at *callsite.Site) error {
	return onMain("app.AddAction", func() error {
		var b pygi.Block
		activate := func(_, _ *pygi.Object) { fn() }
		var handler *pygi.Object
		var err error
		if at != nil {
			handler, err = callsite.New(activate, "action_"+name, *at)
		} else {
			handler, err = callbacks.New(activate, callbacks.Name("action_"+name))
		}
		if err != nil {
			return err
		}
		defer handler.Close()
		act := b.CallMethod(b.Import("gi.repository.Gio"), "SimpleAction.new", name, nil)
		b.CallMethod(act, "connect", "activate", handler)
		b.CallMethod(a.py, "add_action", act)
		if len(accels) > 0 {
			b.CallMethod(a.py, "set_accels_for_action", "app."+name, accels)
		}
		if err := b.Err(); err != nil {
			return fmt.Errorf("app: AddAction %q: %w", name, err)
		}
		return nil
	})
}

// Main is the whole main function of a typical app:
//
//	func main() { os.Exit(app.Main(app.Options{ID: "org.example.App"}, activate)) }
//
// It makes the application (an error is printed, status 1), runs activate
// on each activation (an error it returns is printed, with the Python
// traceback of an exception it wraps, and quits the app with status 1),
// and runs the app with the program's name and, when the flag package has
// parsed the command line, the arguments it left (so the program's own
// flags do not reach GApplication), else the whole command line. It
// returns Run's status.
//
// As any GApplication, the app runs while it has a window or is held: an
// activate that shows no window before it returns (one made later, from
// an Invoke or a timer, say) ends the app at once, GTK printing that
// windows must be added after startup. Such an activate calls a.Hold, and
// a.Release when it is done.
func Main(opts Options, activate func(a *App) error) int {
	a, err := New(opts)
	if err != nil {
		report.Print("app", err)
		return 1
	}
	if err := a.OnActivate(func() {
		if err := activate(a); err != nil {
			report.Print("app: activate", err)
			a.activateFailed.Store(true)
			a.Quit()
		}
	}); err != nil {
		report.Print("app", err)
		return 1
	}
	args := os.Args
	if flag.Parsed() {
		args = append([]string{os.Args[0]}, flag.Args()...)
	}
	status := a.Run(context.Background(), args)
	if a.activateFailed.Load() && status == 0 {
		status = 1
	}
	return status
}

// Python returns the application as a PyGObject object (a Gtk.Application
// or Adw.Application), for Python code.
func (a *App) Python() *pygi.Object { return a.py }

// Gtk returns gotk4's view of the same application, for Go code (windows
// made with gtk.NewApplicationWindow(a.Gtk()) belong to it). Safe from any
// goroutine (it only hands out the wrapper made by New); what you do with
// it is GTK's business, on the UI thread.
func (a *App) Gtk() *gtk.Application { return a.gtkApp }

// connect attaches a Go handler to one of the application's signals. The
// handler becomes a callback owned by Python (by the signal connection),
// sited at at, the program's call of the On function.
func (a *App) connect(signal string, fn any, at callsite.Site) error {
	return onMain("app.On"+signal, func() error {
		cb, err := callsite.New(fn, strings.ReplaceAll(signal, "-", "_")+"_handler", at)
		if err != nil {
			return err
		}
		defer cb.Close() // the connection holds it
		r, err := a.py.CallMethod("connect", signal, cb)
		if err != nil {
			return err
		}
		id, err := pygi.As[int64](r)
		if err == nil {
			a.mu.Lock()
			a.handlers = append(a.handlers, uint64(id))
			a.mu.Unlock()
		}
		return err
	})
}

// OnActivate runs fn when the application is activated (where windows are
// usually created).
func (a *App) OnActivate(fn func()) error {
	return a.connect("activate", func(*pygi.Object) { fn() }, callsite.Caller())
}

// OnStartup runs fn once when the application starts, before activate.
func (a *App) OnStartup(fn func()) error {
	return a.connect("startup", func(*pygi.Object) { fn() }, callsite.Caller())
}

// OnShutdown runs fn when the application shuts down, while GTK and Python
// are still fully alive.
func (a *App) OnShutdown(fn func()) error {
	return a.connect("shutdown", func(*pygi.Object) { fn() }, callsite.Caller())
}

// OnCommandLine makes the application handle its command line: fn receives
// the arguments (program name first) and returns the exit status. Call it
// before Run.
func (a *App) OnCommandLine(fn func(args []string) int) error {
	at := callsite.Caller()
	err := onMain("app.OnCommandLine", func() error {
		flags, err := a.py.CallMethod("get_flags")
		if err != nil {
			return err
		}
		// Not __import__ with a fromlist, which also looks for a submodule
		// gi.repository.Gio.Gio on every sys.path entry (as app.New).
		gio, err := pygi.Import("gi.repository.Gio")
		if err != nil {
			return err
		}
		defer gio.Close()
		af, err := gio.Attr("ApplicationFlags")
		if err != nil {
			return err
		}
		h, err := af.Attr("HANDLES_COMMAND_LINE")
		if err != nil {
			return err
		}
		both, err := flags.CallMethod("__or__", h)
		if err != nil {
			return err
		}
		r, err := a.py.CallMethod("set_flags", both)
		r.Close()
		return err
	})
	if err != nil {
		return err
	}
	return a.connect("command-line", func(_ *pygi.Object, cmd *pygi.Object) (int, error) {
		args, err := cmd.CallMethod("get_arguments")
		if err != nil {
			return 1, err
		}
		list, err := pygi.As[[]string](args)
		if err != nil {
			return 1, err
		}
		return fn(list), nil
	}, at)
}

// Hold keeps the application running while it has no window (GApplication
// quits when its last window goes); pair it with Release. UI thread only:
// elsewhere it returns an error wrapping eventloop.ErrNotMain.
func (a *App) Hold() error {
	if err := eventloop.RequireMain("app.Hold"); err != nil {
		return err
	}
	r, err := a.py.CallMethod("hold")
	r.Close()
	return err
}

// Release undoes one Hold. UI thread only, like Hold.
func (a *App) Release() error {
	if err := eventloop.RequireMain("app.Release"); err != nil {
		return err
	}
	r, err := a.py.CallMethod("release")
	r.Close()
	return err
}

// Quit ends the application; safe from any goroutine.
func (a *App) Quit() {
	eventloop.Invoke(func() {
		if r, err := a.py.CallMethod("quit"); err == nil {
			r.Close()
		}
	})
}

// Windows returns the application's windows as PyGObject objects.
func (a *App) Windows() ([]*pygi.Object, error) {
	var ws []*pygi.Object
	err := onMain("app.Windows", func() error {
		l, err := a.py.CallMethod("get_windows")
		if err != nil {
			return err
		}
		ws, err = pygi.As[[]*pygi.Object](l)
		return err
	})
	return ws, err
}

// Run runs the application on the main thread until it quits, ctx ends, or
// SIGINT or SIGTERM arrives (all of which quit it gracefully) and returns
// the exit status for os.Exit. Then it shuts down in order: timers
// stopped, every remaining toplevel window destroyed while Python is
// alive, duet's own handlers on objects that outlive Python disconnected,
// Go's references to Python released, and Python finalised on this thread
// (unless Options.SkipFinalize).
//
// Signals: while Run runs it owns SIGINT and SIGTERM (unless
// Options.HostSignals), as package eventloop describes; before and after,
// they are the program's. Run never exits the process itself.
//
// Bounds: finalising waits at most Options.FinalizeTimeout, for Python
// calls still in flight on other goroutines and for Python threads that
// are not daemons (threading's shutdown would wait for those for ever);
// past it, Python is left running and Run says which calls or threads
// held it up.
//
// The status is the application's own (what GApplication's run returned),
// except: 128+n after signal n ended it (130 for SIGINT, 143 for SIGTERM,
// as a shell reports; also for a KeyboardInterrupt), 120 when Python's
// final flush of sys.stdout or sys.stderr failed (output was lost; python3
// exits 120 then), and 1 when something else failed, each failure printed
// to stderr with its reason, including a shutdown that could not finalise
// Python within Options.FinalizeTimeout, or an explorer that
// DUET_EXPLORE started and that failed, and 3 when that explorer found
// something (see "Exploring" in the package doc). A status the signal or the app set is kept; the failure is still
// printed.
func (a *App) Run(ctx context.Context, args []string) int {
	if err := eventloop.RequireMain("app.Run"); err != nil {
		report.Print("app", err)
		return 1
	}
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		fmt.Fprintln(os.Stderr, "app: Run called twice")
		return 1
	}
	a.running = true
	a.mu.Unlock()
	if args == nil {
		args = os.Args
	}
	status := 0
	var runErr error
	restoreSIGINT := func() {}
	if a.opts.HostSignals {
		// Gtk.Application.run installs PyGObject's own Ctrl+C handling when
		// Python's SIGINT is default_int_handler; the program handles SIGINT
		// itself, so for the run Python's table says SIG_DFL.
		if restore, err := pygi.Eval(hostSIGINT, nil); err == nil {
			restoreSIGINT = func() {
				if r, err := restore.Call(); err == nil {
					r.Close()
				}
				restore.Close()
			}
		}
	}
	// One lookup when DUET_EXPLORE is unset: exploring costs nothing then.
	var explorer *exploring
	if spec, ok := os.LookupEnv("DUET_EXPLORE"); ok {
		var err error
		if explorer, err = a.startExploring(ctx, spec); err != nil {
			report.Print("app", err)
			return 1
		}
	}
	var watcher *reload.Watcher
	if a.reload {
		var err error
		watcher, err = reload.Start(reload.Config{Dir: a.opts.ReloadDir, Guess: a.reloadGuess})
		if err != nil {
			report.Print("app: reload", err) // development mode: the app runs on without it
		}
	}
	err := eventloop.Drive(ctx, func() {
		r, err := a.py.CallMethod("run", args)
		if err != nil {
			runErr = err
			status = 1
			return
		}
		n, err := pygi.As[int64](r)
		if err != nil {
			runErr = err
		}
		status = int(n)
	}, a.Quit, loopOptions(a.opts)...)
	if watcher != nil {
		watcher.Close()
	}
	restoreSIGINT()
	var se *eventloop.SignalError
	switch {
	case errors.As(err, &se):
		if sig, ok := se.Signal.(syscall.Signal); ok {
			status = 128 + int(sig)
		}
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		if code, ok := pythonExit(err); ok {
			status = code
			break
		}
		report.Print("app", err)
		status = 1
	}
	if runErr != nil {
		if code, ok := pythonExit(runErr); ok {
			status = code // PyGObject's own SIGINT handling in run() ends with KeyboardInterrupt
		} else {
			report.Print("app", runErr)
			if status == 0 {
				status = 1
			}
		}
	}
	if explorer != nil {
		if st := explorer.finish(); st != 0 && status == 0 {
			status = st
		}
	}
	if err := a.shutdown(); err != nil {
		report.Print("app: shutdown", err)
		switch {
		case status != 0:
		case errors.Is(err, pygi.ErrFlushFailed):
			status = 120 // as python3 exits when its final flush fails
		default:
			status = 1
		}
	}
	diag.CloseCrashReports()
	return status
}

// pythonExit maps the exceptions Python ends a program with to the status
// python3 would exit with: KeyboardInterrupt 130, SystemExit its code.
func pythonExit(err error) (int, bool) {
	var pe *pygi.Error
	if !errors.As(err, &pe) {
		return 0, false
	}
	switch {
	case pe.Matches("KeyboardInterrupt"):
		return 128 + int(syscall.SIGINT), true
	case pe.Matches("SystemExit"):
		code, cerr := pe.Value.Attr("code")
		if cerr != nil || code.IsNone() {
			return 0, true
		}
		if n, err := pygi.As[int64](code); err == nil {
			return int(n), true
		}
		fmt.Fprintln(os.Stderr, code.String()) // sys.exit("message") prints it, status 1
		return 1, true
	}
	return 0, false
}

// shutdown runs after the loop, on the main thread. See Run for the order.
func (a *App) shutdown() error {
	lifetime.CancelTimers()
	if err := hooks.CloseCensus(); err != nil {
		report.Print("app: closing the census window", err)
	}
	// Destroy what is left while Python is alive: destroying a window runs
	// its signal handlers' destroy notifications, which touch Python. Every
	// toplevel, the application's or not: a window left for after Run could
	// hold Python widgets whose code GTK would call with Python gone.
	if ws, err := toplevels(); err == nil {
		for _, w := range ws {
			if r, err := w.CallMethod("destroy"); err == nil {
				r.Close()
			}
			w.Close()
		}
	}
	if _, err := lifetime.FlushContext(1000); err != nil {
		return err
	}
	// The application outlives Python (gotk4 keeps it): its handlers that
	// duet connected, Python closures, go before Python does.
	a.mu.Lock()
	hs := a.handlers
	a.handlers = nil
	a.mu.Unlock()
	for _, id := range hs {
		if r, err := a.py.CallMethod("disconnect", id); err == nil {
			r.Close()
		}
	}
	a.py.Close()
	for range 3 {
		if err := eventloop.Collect(); err != nil && !errors.Is(err, pygi.ErrFinalized) {
			return err
		}
	}
	if _, err := lifetime.FlushContext(1000); err != nil {
		return err
	}
	if a.opts.SkipFinalize {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.FinalizeTimeout)
	defer cancel()
	if err := pygi.Finalize(ctx); err != nil {
		return fmt.Errorf("Python not finalised: %w", err)
	}
	return nil
}

// toplevels returns every toplevel window GTK has, as PyGObject objects.
func toplevels() ([]*pygi.Object, error) {
	l, err := pygi.Eval("__import__('gi.repository.Gtk', fromlist=['Gtk']).Window.list_toplevels()", nil)
	if err != nil {
		return nil, err
	}
	return pygi.As[[]*pygi.Object](l)
}

func loopOptions(o Options) []eventloop.Option {
	if o.HostSignals {
		return []eventloop.Option{eventloop.HostSignals()}
	}
	return nil
}

// hostSIGINT sets Python's SIGINT to SIG_DFL while it is Python's default,
// and evaluates to the function that puts it back.
const hostSIGINT = `(lambda signal: (lambda was: (
    signal.signal(signal.SIGINT, signal.SIG_DFL) if was is signal.default_int_handler else None,
    lambda: signal.signal(signal.SIGINT, was) if signal.getsignal(signal.SIGINT) is signal.SIG_DFL and was is signal.default_int_handler else None,
)[1])(signal.getsignal(signal.SIGINT)))(__import__("signal"))`
