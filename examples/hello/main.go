// Command hello is the shortest complete duet app: a window made in Go
// (gotk4) showing a label made in Python (PyGObject).
//
//	go run ./examples/hello            # until you close the window
//	go run ./examples/hello -script    # show it briefly and exit 0 (headless tests)
package main

import (
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

	a, err := app.New(app.Options{ID: "org.duet.Hello", NonUnique: *script})
	if err != nil {
		panic(err)
	}
	a.OnActivate(func() {
		win := gtk.NewApplicationWindow(a.Gtk()) // made in Go
		win.SetTitle("Hello, duet")
		win.SetDefaultSize(360, 120)

		Gtk, _ := pygi.Repository("Gtk") // made in Python
		label, err := Gtk.CallMethod("Label", pygi.Kw{"label": "Hello from Python, in a Go window"})
		if err != nil {
			panic(err)
		}
		child, err := widgets.Cast[gtk.Widgetter](label)
		if err != nil {
			panic(err)
		}
		win.SetChild(child)
		win.Present()
		if *script {
			eventloop.After(300*time.Millisecond, a.Quit)
		}
	})
	os.Exit(a.Run(append([]string{os.Args[0]}, flag.Args()...)))
}
