// Command showcase is what `make run` starts. For now it is the smallest
// program that proves the foundation: Go starts the embedded Python, builds
// a GTK 4 window through PyGObject and runs GLib's main loop on the main
// thread. Later issues grow it into the full showcase.
//
// With DUET_SCREENSHOT=path it saves a screenshot of the screen (under Xvfb)
// after the window has been shown, then quits.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/duet-gtk/duet/pygi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "showcase:", err)
		os.Exit(1)
	}
}

func run() error {
	if err := pygi.Init(); err != nil {
		return err
	}
	defer pygi.Finalize()
	if err := pygi.RequireVersion("Gtk", "4.0"); err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	err = pygi.Exec(`
from gi.repository import Gtk, GLib
loop = GLib.MainLoop()
win = Gtk.Window(title="duet showcase", default_width=480, default_height=240)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=12, margin_top=24, margin_start=24, margin_end=24)
label = Gtk.Label()
label.set_markup("<big><b>duet</b></big>\nGo drives the app; Python builds this window.")
box.append(label)
win.set_child(box)
win.connect("close-request", lambda *a: loop.quit() or False)
win.present()
`, g)
	if err != nil {
		return err
	}
	loop, err := g.Item("loop")
	if err != nil {
		return err
	}
	if path := os.Getenv("DUET_SCREENSHOT"); path != "" {
		go func() {
			time.Sleep(1500 * time.Millisecond)
			if out, err := exec.Command("import", "-window", "root", path).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "showcase: screenshot failed: %v %s\n", err, out)
			}
			loop.CallMethod("quit")
		}()
	}
	// PyGObject releases the GIL while GLib's loop waits.
	_, err = loop.CallMethod("run")
	return err
}
