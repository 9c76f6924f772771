// Command planted is a small app with bugs planted in it, for
// duetexplore's tests. PLANTED (or the -planted flag, which wins) is a
// comma separated list of windows, each titled by its kind, with its bug
// behind a short sequence:
//
//   - panic: "B" after "A" panics (a nil map);
//   - exception: "B" after "A" raises a Python exception;
//   - log: "B" after "A" removes from a box a label that is not its child
//     (a Gtk-CRITICAL);
//   - stall: "B" after "A" keeps the UI thread for a second;
//   - leak: each "B" after "A" connects one more Go func to the window,
//     which lives for good (one more live callback a click);
//   - hang: "B" after "A" blocks the UI thread for good (Python sleeps for
//     an hour; the rest of the process goes on);
//   - wedge: "B" after "A" stops the whole process (SIGSTOP to itself:
//     the explorer cannot say anything);
//   - crash: "crash" writes through a null pointer in C;
//   - raising: a button whose get_label raises (the explorer fails
//     listing the widgets), unless fixed; raisingalways: even fixed;
//   - clean: no bug, no A or B;
//
// and fixed: each window the same, its bug fixed (PLANTED=fixed alone is
// panic's window fixed; with -planted, PLANTED=fixed fixes its windows). Each window has unrelated buttons and toggles
// too, for a longer search. moved changes the UI: a button "new" comes
// first in each window, so that every button's address moves by one (a
// recorded A's structural key names "more 3" then). PLANTED_SPAWN=N makes
// it start "sleep N" first, with its stdout and stderr, and leave it.
package main

import (
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

// bugs is each kind's part of its window: Python run with add_button,
// on_a (it sets armed[0]) and the Go handlers in scope; bug() says whether
// the bug is on (armed, not fixed).
var bugs = map[string]string{
	"panic": `add_button("A", on_a)
add_button("B", on_b_panic)`,
	"exception": `def on_b(button):
    if bug():
        raise RuntimeError("planted: B after A")
add_button("A", on_a)
add_button("B", on_b)`,
	"log": `def on_b(button):
    if bug():
        box.remove(Gtk.Label(label="not a child"))
add_button("A", on_a)
add_button("B", on_b)`,
	"stall": `import time
def on_b(button):
    if bug():
        time.sleep(1)
add_button("A", on_a)
add_button("B", on_b)`,
	"leak": `def on_b(button):
    if bug():
        on_b_leak(win)
add_button("A", on_a)
add_button("B", on_b)`,
	"hang": `import time
def on_b(button):
    if bug():
        time.sleep(3600)
add_button("A", on_a)
add_button("B", on_b)`,
	"wedge": `def on_b(button):
    if bug():
        on_b_wedge()
add_button("A", on_a)
add_button("B", on_b)`,
	// A write through a null pointer, in C: the process dies of SIGSEGV.
	"crash": `import ctypes
def on_crash(button):
    if not fixed:
        ctypes.memset(0, 1, 1)
add_button("crash", on_crash)`,
	// Not a bug of the app's to find: a getter that raises while the
	// explorer lists the widgets makes the explorer itself fail.
	"raising": `class Raising(Gtk.Button):
    def get_label(self):
        if fixed:
            return "raising"
        raise RuntimeError("planted: a getter that raises")
box.append(Raising())`,
	// The same, fixed or not: the explorer fails on a program whose bug
	// is fixed (a regression test must not say the bug is back).
	"raisingalways": `class RaisingAlways(Gtk.Button):
    def get_label(self):
        raise RuntimeError("planted: a getter that raises")
box.append(RaisingAlways())`,
	"clean": ``,
}

func main() {
	planted := flag.String("planted", "", "the windows, as PLANTED gives them")
	flag.Parse()
	mode := os.Getenv("PLANTED")
	if *planted != "" {
		for _, m := range []string{"fixed", "moved"} {
			if slices.Contains(strings.Split(mode, ","), m) {
				*planted += "," + m
			}
		}
		mode = *planted
	}
	var kinds []string
	fixed, moved := false, false
	for k := range strings.SplitSeq(mode, ",") {
		switch _, ok := bugs[k]; {
		case k == "fixed":
			fixed = true
		case k == "moved":
			moved = true
		case ok:
			kinds = append(kinds, k)
		default:
			os.Stderr.WriteString("planted: PLANTED=panic, exception, log, stall, leak, hang, wedge, crash, raising, raisingalways, clean, fixed or moved, comma separated\n")
			os.Exit(2)
		}
	}
	if len(kinds) == 0 && fixed {
		kinds = []string{"panic"}
	}
	if secs := os.Getenv("PLANTED_SPAWN"); secs != "" {
		// A process of its own that outlives it unless ended: sleep,
		// with its stdout and stderr (a pipe under duetexplore -v).
		sleep := exec.Command("sleep", secs)
		sleep.Stdout, sleep.Stderr = os.Stdout, os.Stderr
		if err := sleep.Start(); err != nil {
			os.Stderr.WriteString("planted: " + err.Error() + "\n")
			os.Exit(2)
		}
	}
	os.Exit(app.Main(app.Options{ID: "org.duet.Planted", NonUnique: true}, func(a *app.App) error {
		for _, kind := range kinds {
			if err := window(a, kind, fixed, moved); err != nil {
				return err
			}
		}
		return nil
	}))
}

func window(a *app.App, kind string, fixed, moved bool) error {
	var armed bool
	vars := pygi.Kw{
		"application": a.Python(), "title": kind, "fixed": fixed, "moved": moved,
		"on_a": func(*pygi.Object) { armed = true },
		"bug":  func() bool { return armed && !fixed },
		"on_b_panic": func(*pygi.Object) {
			if armed && !fixed {
				var m map[string]int
				m["b"]++ // the planted bug: a nil map
			}
		},
		"on_b_leak": func(win *pygi.Object) {
			// The planted bug: a handler for good on a window that stays.
			callbacks.Connect(win, "notify::default-width", func() {})
		},
		"on_b_wedge": func() {
			// The planted bug: the process stops, the explorer with it.
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			time.Sleep(time.Second) // once continued (by SIGCONT)
		},
	}
	var b pygi.Block
	b.Exec(`from gi.repository import Gtk
win = Gtk.ApplicationWindow(application=application, title=title)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
win.set_child(box)
def add_button(label, handler):
    button = Gtk.Button(label=label)
    button.connect("clicked", handler)
    box.append(button)
count = Gtk.Label(label="0")
def bump(button):
    count.set_label(str(int(count.get_label()) + 1))
if moved:
    add_button("new", bump)
for i in range(4):
    add_button("more %d" % i, bump)
box.append(count)
for i in range(3):
    box.append(Gtk.CheckButton(label="check %d" % i))
box.append(Gtk.ToggleButton(label="toggle"))
box.append(Gtk.Entry())
`+bugs[kind]+`
win.present()`, b.Globals(vars))
	return b.Err()
}
