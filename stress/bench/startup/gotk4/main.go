// Command gotk4 is the pure-gotk4 start-up reference for the benchmarks: an
// application window with one button; it exits at the first frame, or
// with the argument "idle" prints "frame" and stays, idle, until killed.
package main

import (
	"fmt"
	"os"

	"github.com/diamondburned/gotk4/pkg/gdk/v4"
	"github.com/diamondburned/gotk4/pkg/gio/v2"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"
)

func main() {
	idle := len(os.Args) > 1 && os.Args[1] == "idle"
	app := gtk.NewApplication("org.duet.bench.Gotk4Start", gio.ApplicationNonUnique)
	//duet:cycle-ok the application and its window live until the program exits
	app.ConnectActivate(func() {
		win := gtk.NewApplicationWindow(app)
		win.SetTitle("startup")
		win.SetChild(gtk.NewButtonWithLabel("button"))
		//duet:cycle-ok
		win.ConnectMap(func() {
			gdk.BaseFrameClock(win.FrameClock()).ConnectAfterPaint(func() {
				fmt.Println("frame")
				if !idle {
					os.Exit(0)
				}
			})
		})
		win.Present()
	})
	os.Exit(app.Run(os.Args[:1]))
}
