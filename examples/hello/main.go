// Command hello is the shortest complete duet app: a window made in Go
// (gotk4) showing a label made in Python (PyGObject).
//
//	go run ./examples/hello            # until you close the window
//	go run ./examples/hello -script    # show it briefly and exit 0 (headless tests)
package main

import (
	"errors"
	"flag"
	"os"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func main() {
	script := flag.Bool("script", false, "show the window briefly, then exit (for headless runs)")
	flag.Parse()
	os.Exit(app.Main(app.Options{ID: "org.duet.Hello", NonUnique: *script}, func(a *app.App) error {
		win := gtk.NewApplicationWindow(a.Gtk()) // made in Go
		win.SetTitle("Hello, duet")
		win.SetDefaultSize(360, 120)
		var b pygi.Block
		label := b.CallMethod(b.Import("gi.repository.Gtk"), "Label", pygi.Kw{"label": "Hello from Python, in a Go window"}) // made in Python
		_, err := widgets.CallMethod(win, "set_child", label)
		win.Present()
		if *script {
			eventloop.After(300*time.Millisecond, a.Quit)
		}
		return errors.Join(b.Err(), err)
	}))
}
