package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

const reloadPy = `from gi.repository import Gtk


class Panel(Gtk.Box):
    def __init__(self):
        super().__init__()
        self.label = Gtk.Label(label="start")
        self.button = Gtk.Button(label="go")
        self.append(self.label)
        self.append(self.button)
        self.button.connect("clicked", self.on_clicked)

    def on_clicked(self, button):
        self.label.set_text("old")
`

func init() {
	// An app with a Python widget from a file, in a window; RELOAD_MODE
	// says how reloading is asked for: "option" (Options.Reload, the file
	// loaded with LoadFS from an fs.FS whose files are in
	// Options.ReloadDir), "env" (DUET_RELOAD=1, LoadFile), "off". Unless
	// off, the file is then saved with a change, and the label is polled
	// until the button's next click runs it. With RELOAD_IDLE=1 the child
	// says "idle" a second after the first click instead, and stays so
	// until a signal ends it (the parent counts its wakeups meanwhile).
	children["reload"] = func() int {
		dir, mode := os.Getenv("RELOAD_DIR"), os.Getenv("RELOAD_MODE")
		file := filepath.Join(dir, "ui", "reload_app.py")
		opts := app.Options{ID: "org.duet.Reload", NonUnique: true}
		if mode == "option" {
			opts.Reload, opts.ReloadDir = true, dir
			// The app's own logger gets each reload too.
			slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stdout, nil)))
		}
		a := mustNew(opts)
		must(a.OnActivate(func() {
			var m *widgets.Module
			var err error
			if mode == "option" {
				m, err = widgets.LoadFS(fstest.MapFS{"ui/reload_app.py": {Data: []byte(reloadPy)}}, "ui/reload_app.py")
			} else {
				m, err = widgets.LoadFile(file)
			}
			must(err)
			panel, err := m.New("Panel", nil)
			must(err)
			g, err := pygi.NewGlobals()
			must(err)
			must(g.SetItem("app", a.Python()))
			must(g.SetItem("panel", panel.Object))
			if os.Getenv("RELOAD_IDLE") == "1" {
				// No window: on an X server other programs share (make
				// test's), their windows mapped over it would wake it.
				must(pygi.Exec("from gi.repository import Gtk\nwin = Gtk.ApplicationWindow(application=app, child=panel)\napp.hold()\n", g))
			} else {
				must(pygi.Exec("from gi.repository import Gtk\nGtk.ApplicationWindow(application=app, child=panel).present()\n", g))
			}
			button, err := panel.Object.Attr("button")
			must(err)
			var goClicks int
			_, err = widgets.Wrap(button).Connect("clicked", func(*pygi.Object) { goClicks++ })
			must(err)
			fmt.Println("watchers while running:", reload.Running(), watcherGoroutines())
			click := func() string {
				var text string
				must(eventloop.InvokeWait(context.Background(), func() error {
					r, err := panel.Object.CallMethod("button.emit", "clicked")
					if err != nil {
						return err
					}
					r.Close()
					l, err := panel.Object.CallMethod("label.get_text")
					if err != nil {
						return err
					}
					text, err = pygi.As[string](l)
					return err
				}))
				return text
			}
			go func() {
				fmt.Println("before:", click())
				if os.Getenv("RELOAD_IDLE") == "1" {
					eventloop.After(time.Second, func() { fmt.Println("idle") })
					select {} // Run ends on the signal
				}
				defer a.Quit()
				if mode == "off" {
					return
				}
				tmp := file + ".tmp~"
				must(os.WriteFile(tmp, []byte(strings.Replace(reloadPy, `"old"`, `"new"`, 1)), 0o644))
				must(os.Rename(tmp, file))
				deadline := time.Now().Add(20 * time.Second)
				text := click()
				for text != "new" && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
					text = click()
				}
				var n int
				eventloop.InvokeWait(context.Background(), func() error { n = goClicks; return nil })
				fmt.Println("after:", text, "go handler ran:", n > 1)
			}()
		}))
		status := a.Run(context.Background(), prog)
		fmt.Println("watchers after Run:", reload.Running(), watcherGoroutines())
		return status
	}
}

func watcherGoroutines() bool {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	return strings.Contains(stacks, "fsnotify") || strings.Contains(stacks, "internal/reload.(*Watcher)")
}

// Options.Reload and DUET_RELOAD=1 watch the app's Python files while Run
// runs (LoadFS's in Options.ReloadDir, LoadFile's where they are) and apply
// a save to the running window; nothing watches once Run returned, nor
// ever when neither asks for it.
func TestReloadInAnApp(t *testing.T) {
	for _, mode := range []string{"option", "env", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "ui"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ui", "reload_app.py"), []byte(reloadPy), 0o644))
			env := []string{"RELOAD_DIR=" + dir, "RELOAD_MODE=" + mode, "DUET_RELOAD="}
			if mode == "env" {
				env = append(env, "DUET_RELOAD=1")
			}
			r := runChild(t, "reload", nil, env...)
			require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
			assert.Contains(t, r.out, "before: old")
			assert.Contains(t, r.out, "watchers after Run: 0 false")
			if mode == "off" {
				assert.Contains(t, r.out, "watchers while running: 0 false")
				assert.Empty(t, r.err)
				return
			}
			assert.Contains(t, r.out, "watchers while running: 1 true")
			assert.Contains(t, r.out, "after: new go handler ran: true")
			assert.Regexp(t, `duet reload: watching /\S+/reload_app.py\n`, r.err)
			assert.Contains(t, r.err, "duet reload: reload_app.py: applied (1 method)\n")
			for _, l := range strings.Split(strings.TrimSpace(r.err), "\n") {
				assert.True(t, strings.HasPrefix(l, "duet reload: "), "stderr says nothing else: %q", l)
			}
			if mode == "option" {
				assert.Regexp(t, `"msg":"duet reload","file":"[^"]*/ui/reload_app.py","module":"reload_app","outcome":"applied"`, r.out)
			} else {
				assert.NotContains(t, r.out, "duet reload", "Go's default logger is not given the line stderr has")
			}
		})
	}
}

// Reload off costs nothing while the app idles: no watcher, and the
// process's threads sleep (0 wakeups over two seconds; eventloop's
// TestAnIdleLoopSleeps is the same for a bare loop). On, the watcher
// waits on the OS's file notifications (no polling) and wakes nothing
// either until a file changes. The watcher's work is on goroutines, so on
// Go's threads: those are counted. The UI thread's are only logged: on an
// X server other programs share (make test's), their comings and goings
// wake its poll, reload or not.
func TestReloadOffIdles(t *testing.T) {
	for _, mode := range []string{"off", "option"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "ui"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ui", "reload_app.py"), []byte(reloadPy), 0o644))
			ui, others := int64(-1), int64(-1)
			r := runChild(t, "reload", func(cmd *exec.Cmd, out io.Reader) {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if sc.Text() == "idle" {
						time.Sleep(300 * time.Millisecond) // the print itself, and what the runtime does after it
						ui0, others0 := voluntarySwitches(cmd.Process.Pid)
						time.Sleep(2 * time.Second)
						ui1, others1 := voluntarySwitches(cmd.Process.Pid)
						ui, others = ui1-ui0, others1-others0
						break
					}
				}
				cmd.Process.Signal(syscall.SIGTERM)
			}, "RELOAD_DIR="+dir, "RELOAD_MODE="+mode, "RELOAD_IDLE=1", "DUET_RELOAD=")
			require.Equal(t, 143, r.code, "ended by SIGTERM; stdout:\n%s\nstderr:\n%s", r.out, r.err)
			require.NotEqual(t, int64(-1), others, "never idle; stdout:\n%s\nstderr:\n%s", r.out, r.err)
			t.Logf("%s: in 2 s, %d wakeups of Go's threads, %d of the UI thread", mode, others, ui)
			if mode == "off" {
				assert.Contains(t, r.out, "watchers while running: 0 false")
				assert.Empty(t, r.err)
			} else {
				assert.Contains(t, r.out, "watchers while running: 1 true")
			}
			// The bound leaves room for a stray runtime wakeup on a loaded
			// machine: a watcher that polled (every 100 ms, say), or a
			// timer, would be tens or hundreds.
			assert.LessOrEqual(t, others, int64(10), "Go's threads woke while the app idled")
		})
	}
}

// voluntarySwitches sums voluntary_ctxt_switches (each one a thread that
// slept and was woken) of a process's main thread, the UI thread, and of
// its other threads.
func voluntarySwitches(pid int) (ui, others int64) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if filepath.Base(filepath.Dir(t)) == strconv.Itoa(pid) {
					ui += n
				} else {
					others += n
				}
			}
		}
	}
	return ui, others
}
