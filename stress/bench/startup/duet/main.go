// Command duet is the duet start-up program for the benchmarks: the same
// window with one button, the window made in Go and the button in Python,
// run by package app; it exits at the first frame, or with the argument
// "idle" prints "frame" and then stays, idle, until killed.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/diamondburned/gotk4/pkg/gdk/v4"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func main() {
	idle := len(os.Args) > 1 && os.Args[1] == "idle"
	a, err := app.New(app.Options{ID: "org.duet.bench.DuetStart", NonUnique: true, SkipFinalize: true})
	if err != nil {
		panic(err)
	}
	a.OnActivate(func() {
		win := gtk.NewApplicationWindow(a.Gtk())
		win.SetTitle("startup")
		Gtk, _ := pygi.Import("gi.repository.Gtk")
		button, _ := Gtk.CallMethod("Button", pygi.Kw{"label": "button"})
		widgets.CallMethod(win, "set_child", button)
		//duet:cycle-ok the window lives until the program exits
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
	os.Exit(a.Run(context.Background(), os.Args[:1]))
}
