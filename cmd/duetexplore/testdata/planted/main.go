// Command planted is a small app with a bug planted in it, for
// duetexplore's tests: PLANTED=panic (button "B" panics once "A" was
// clicked), fixed (the same window, the bug fixed), crash (button "crash"
// writes through a null pointer in C) or clean (no bug, no A or B). Each
// window has unrelated buttons and toggles too, for a longer search.
package main

import (
	"os"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
)

func main() {
	mode := os.Getenv("PLANTED")
	var clickedA bool
	handlers := pygi.Kw{
		"on_a": func(*pygi.Object) { clickedA = true },
		"on_b": func(*pygi.Object) {
			if clickedA && mode != "fixed" {
				var m map[string]int
				m["b"]++ // the planted bug: a nil map
			}
		},
	}
	var src string
	switch mode {
	case "panic", "fixed":
		src = `add_button("A", on_a)
add_button("B", on_b)`
	case "crash":
		// A write through a null pointer, in C: the process dies of
		// SIGSEGV.
		src = `import ctypes
add_button("crash", lambda b: ctypes.memset(0, 1, 1))`
	case "clean":
	default:
		os.Stderr.WriteString("planted: PLANTED=panic, crash or clean\n")
		os.Exit(2)
	}
	os.Exit(app.Main(app.Options{ID: "org.duet.Planted", NonUnique: true}, func(a *app.App) error {
		vars := handlers
		vars["application"], vars["title"] = a.Python(), mode
		if mode == "fixed" {
			vars["title"] = "panic" // the window the trace names
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
for i in range(4):
    add_button("more %d" % i, bump)
box.append(count)
for i in range(3):
    box.append(Gtk.CheckButton(label="check %d" % i))
box.append(Gtk.ToggleButton(label="toggle"))
box.append(Gtk.Entry())
`+src+`
win.present()`, b.Globals(vars))
		return b.Err()
	}))
}
