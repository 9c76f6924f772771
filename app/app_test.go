package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func TestMain(m *testing.M) {
	if name := os.Getenv("APP_CHILD"); name != "" {
		os.Exit(childMain(name))
	}
	looptest.Main(m)
}

// Child programs: each runs one application in its own process, because an
// application's Run ends with Python finalised.
var children = map[string]func() int{
	"normal": func() int {
		a := mustNew(app.Options{ID: "org.duet.Normal", NonUnique: true})
		must(a.OnActivate(func() {
			pyWindow(a, "from Python")
			eventloop.After(100*time.Millisecond, a.Quit)
		}))
		return a.Run(context.Background(), prog)
	},
	// The census window on its action and accelerator (app.Options.Census,
	// or DUET_CENSUS=1 with Census unset).
	"census": func() int {
		a := mustNew(app.Options{ID: "org.duet.Census", NonUnique: true, Census: os.Getenv("DUET_CENSUS") == ""})
		must(a.OnActivate(func() {
			pyWindow(a, "an app")
			accels, err := a.Python().CallMethod("get_accels_for_action", "app.census")
			must(err)
			fmt.Println("accels:", accels)
			_, err = a.Python().CallMethod("activate_action", "census", nil)
			must(err)
			titles, err := pygi.Eval("sorted(w.get_title() for w in __import__('gi.repository.Gtk', fromlist=['Gtk']).Window.list_toplevels())", nil)
			must(err)
			fmt.Println("windows:", titles)
			eventloop.After(100*time.Millisecond, a.Quit)
		}))
		return a.Run(context.Background(), prog)
	},
	// The end of Run's context quits the app gracefully, whichever way it
	// ends: cancelled, or past its deadline.
	"ctx-deadline": func() int {
		a := mustNew(app.Options{ID: "org.duet.Deadline", NonUnique: true})
		must(a.OnActivate(func() { pyWindow(a, "until the deadline") }))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return a.Run(ctx, prog)
	},
	"ctx-cancel": func() int {
		a := mustNew(app.Options{ID: "org.duet.Cancel", NonUnique: true})
		ctx, cancel := context.WithCancel(context.Background())
		must(a.OnActivate(func() {
			pyWindow(a, "until cancelled")
			eventloop.After(100*time.Millisecond, cancel)
		}))
		return a.Run(ctx, prog)
	},
	"goroutine-quit": func() int {
		a := mustNew(app.Options{ID: "org.duet.GoroutineQuit", NonUnique: true})
		must(a.OnActivate(func() {
			pyWindow(a, "quit from a goroutine")
			go func() {
				time.Sleep(150 * time.Millisecond)
				a.Quit()
			}()
		}))
		return a.Run(context.Background(), prog)
	},
	"signal": func() int {
		a := mustNew(app.Options{ID: "org.duet.Signal", NonUnique: true})
		must(a.OnActivate(func() {
			pyWindow(a, "waiting for a signal")
			fmt.Println("ready")
		}))
		return a.Run(context.Background(), prog)
	},
	"python-goroutines-at-exit": func() int {
		a := mustNew(app.Options{ID: "org.duet.Busy", NonUnique: true})
		stop := make(chan struct{})
		for range 4 {
			go func() {
				for {
					select {
					case <-stop:
					default:
					}
					r, err := pygi.Eval("sum(range(200))", nil)
					if errors.Is(err, pygi.ErrFinalized) {
						return // Python went away: exactly what should happen
					}
					if err != nil {
						fmt.Fprintln(os.Stderr, "unexpected:", err)
						os.Exit(7)
					}
					r.Close()
				}
			}()
		}
		must(a.OnActivate(func() {
			pyWindow(a, "busy")
			eventloop.After(200*time.Millisecond, a.Quit)
		}))
		status := a.Run(context.Background(), prog)
		if _, err := pygi.Eval("1", nil); !errors.Is(err, pygi.ErrFinalized) {
			fmt.Fprintln(os.Stderr, "after Run: want ErrFinalized, got", err)
			return 8
		}
		return status
	},
	"skip-finalize": func() int {
		a := mustNew(app.Options{ID: "org.duet.Skip", NonUnique: true, SkipFinalize: true})
		must(a.OnActivate(func() { eventloop.After(50*time.Millisecond, a.Quit) }))
		status := a.Run(context.Background(), prog)
		if lifetime.Current() != lifetime.Ready {
			fmt.Fprintln(os.Stderr, "Python was finalised although SkipFinalize was set")
			return 9
		}
		return status
	},
	"both-sides": func() int {
		a := mustNew(app.Options{ID: "org.duet.Both", NonUnique: true})
		must(a.OnActivate(func() {
			// A window made in Go with gotk4 ...
			gw := gtk.NewApplicationWindow(a.Gtk())
			gw.SetTitle("made in Go")
			gw.Present()
			// ... and one made in Python, in the same application.
			pyWindow(a, "made in Python")
			ws, err := a.Windows()
			must(err)
			var titles []string
			for _, w := range ws {
				t, err := w.CallMethod("get_title")
				must(err)
				s, _ := pygi.As[string](t)
				titles = append(titles, s)
			}
			fmt.Println("windows:", strings.Join(titles, ", "))
			// Python sees the Go window through the same application object.
			gwPy, err := widgets.ToPython(gw)
			must(err)
			app2, err := gwPy.CallMethod("get_application")
			must(err)
			same, err := app2.Is(a.Python())
			must(err)
			fmt.Println("same application:", same)
			eventloop.After(50*time.Millisecond, a.Quit)
		}))
		return a.Run(context.Background(), prog)
	},
	"command-line": func() int {
		a := mustNew(app.Options{ID: "org.duet.Cmd", NonUnique: true})
		must(a.OnCommandLine(func(args []string) int {
			fmt.Println("args:", strings.Join(args[1:], " "))
			return 3
		}))
		return a.Run(context.Background(), []string{"prog", "alpha", "beta"})
	},
	"adwaita": func() int {
		a := mustNew(app.Options{ID: "org.duet.Adw", NonUnique: true, Adwaita: true})
		must(a.OnActivate(func() {
			cls, err := a.Python().Attr("__class__")
			must(err)
			fmt.Println("type:", cls.String())
			eventloop.After(50*time.Millisecond, a.Quit)
		}))
		return a.Run(context.Background(), prog)
	},
	"startup-shutdown": func() int {
		a := mustNew(app.Options{ID: "org.duet.Order", NonUnique: true})
		must(a.OnStartup(func() { fmt.Println("startup") }))
		must(a.OnActivate(func() { fmt.Println("activate"); a.Quit() }))
		must(a.OnShutdown(func() { fmt.Println("shutdown") }))
		return a.Run(context.Background(), prog)
	},
}

// prog is the command line the children run with (os.Args holds test flags
// GApplication would reject).
var prog = []string{"app-child"}

func mustNew(o app.Options) *app.App {
	a, err := app.New(o)
	must(err)
	return a
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(5)
	}
}

// pyWindow opens a window made in Python for the application.
func pyWindow(a *app.App, title string) {
	g, err := pygi.NewGlobals()
	must(err)
	defer g.Close()
	must(g.SetItem("app", a.Python()))
	must(g.SetItem("title", title))
	must(pygi.Exec("from gi.repository import Gtk\nw = Gtk.ApplicationWindow(application=app, title=title)\nw.present()\n", g))
}

func childMain(name string) int {
	fn, ok := children[name]
	if !ok {
		return 2
	}
	if path := os.Getenv("STDOUT_TO"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		must(err)
		must(syscall.Dup2(int(f.Fd()), 1))
	}
	return fn()
}

type result struct {
	out, err string
	code     int
}

func runChild(t *testing.T, name string, during func(cmd *exec.Cmd, stdout io.Reader), env ...string) result {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := testutil.Command(ctx, exe, "-test.run=^$")
	cmd.Env = append(testutil.ChildEnv(t, "APP_CHILD="+name, "GTK_A11Y=none"), env...)
	var errb strings.Builder
	cmd.Stderr = &errb
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	var out strings.Builder
	copied := make(chan struct{})
	tee := io.TeeReader(pr, &out)
	require.NoError(t, cmd.Start())
	go func() {
		if during != nil {
			during(cmd, tee)
		}
		io.Copy(io.Discard, tee)
		close(copied)
	}()
	err = cmd.Wait()
	pw.Close()
	<-copied
	require.NoError(t, ctx.Err(), "%s: child hung; stderr:\n%s", name, errb.String())
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{out.String(), errb.String(), code}
}

func TestExitPaths(t *testing.T) {
	for _, name := range []string{"normal", "ctx-deadline", "ctx-cancel", "goroutine-quit", "python-goroutines-at-exit", "skip-finalize", "startup-shutdown"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runChild(t, name, nil)
			assert.Equal(t, 0, r.code, "stderr:\n%s", r.err)
			assert.Empty(t, r.err)
		})
	}
}

// A signal quits gracefully (shutdown in order, nothing on stderr), and the
// exit status says which signal it was, as a shell would: 128+n.
func TestSignalsQuitGracefully(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			r := runChild(t, "signal", func(cmd *exec.Cmd, out io.Reader) {
				buf := make([]byte, 6)
				if _, err := io.ReadFull(out, buf); err == nil && string(buf) == "ready\n" {
					cmd.Process.Signal(tc.sig)
				}
			})
			assert.Equal(t, tc.code, r.code, "stderr:\n%s", r.err)
			assert.Empty(t, r.err)
		})
	}
}

func TestBothSidesShareTheApplication(t *testing.T) {
	r := runChild(t, "both-sides", nil)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.err)
	assert.Contains(t, r.out, "windows: ")
	assert.Contains(t, r.out, "made in Go")
	assert.Contains(t, r.out, "made in Python")
	assert.Contains(t, r.out, "same application: true")
	assert.Empty(t, r.err)
}

func TestCensusAction(t *testing.T) {
	for _, env := range []string{"", "1"} {
		t.Setenv("DUET_CENSUS", env)
		r := runChild(t, "census", nil)
		require.Equal(t, 0, r.code, "stderr:\n%s", r.err)
		assert.Contains(t, r.out, "accels: ['<Shift><Control>c']")
		assert.Contains(t, r.out, "windows: ['an app', 'duet census']")
	}
}

func TestCommandLineAndOrder(t *testing.T) {
	r := runChild(t, "command-line", nil)
	assert.Equal(t, 3, r.code, "the handler's status is the exit status; stderr:\n%s", r.err)
	assert.Contains(t, r.out, "args: alpha beta")

	r = runChild(t, "startup-shutdown", nil)
	require.Equal(t, 0, r.code, r.err)
	assert.Equal(t, "startup\nactivate\nshutdown\n", r.out)
}

func TestAdwaita(t *testing.T) {
	r := runChild(t, "adwaita", nil)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.err)
	assert.Contains(t, r.out, "type: <class 'gi.repository.Adw.Application'>")
}

func TestBadOptions(t *testing.T) {
	_, err := app.New(app.Options{ID: "not an id"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a valid application id")
	_, err = app.New(app.Options{})
	assert.Error(t, err)
}
