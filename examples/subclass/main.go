// Command subclass defines a GObject class in Go with widgets.DefineClass:
// CountingButton, a Gtk.Button with a "count" property of its own, whose
// "clicked" virtual function (the signal's class handler, which GLib runs
// from C on every click) is a Go func. The class is an ordinary PyGObject
// class: Python code can use it as well.
//
//	go run ./examples/subclass            # click the button
//	go run ./examples/subclass -script    # click three times by program, exit 0
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

var script = flag.Bool("script", false, "click the button three times by program, then exit")

// clicked is CountingButton.do_clicked: like a Python method, it gets the
// instance first.
func clicked(self *pygi.Object) error {
	var b pygi.Block
	n := pygi.BlockAs[int64](&b, b.Attr(self, "props.count")) + 1
	b.SetAttr(self, "props.count", n)
	b.CallMethod(self, "set_label", fmt.Sprintf("clicked %d times", n))
	return b.Err()
}

func main() {
	flag.Parse()
	os.Exit(app.Main(app.Options{ID: "org.duet.Subclass", NonUnique: *script}, func(a *app.App) error {
		var b pygi.Block
		base := b.Attr(b.Import("gi.repository.Gtk"), "Button")
		if err := b.Err(); err != nil {
			return err
		}
		cls, err := widgets.DefineClass(widgets.ClassSpec{
			Name:       "CountingButton",
			Base:       base,
			Overrides:  map[string]any{"do_clicked": clicked},
			Properties: []widgets.Property{{Name: "count", Type: "int", Default: 0}},
		})
		if err != nil {
			return err
		}
		button := b.CallMethod(cls, "", pygi.Kw{"label": "click me"}) // CountingButton(label="click me")
		if err := b.Err(); err != nil {
			return err
		}
		win := gtk.NewApplicationWindow(a.Gtk())
		win.SetTitle("subclass: a virtual function in Go")
		win.SetDefaultSize(300, 100)
		// Packed through its Python side: the instance carries Python data,
		// so it must not get a gotk4 wrapper too (widgets.ErrToggleTrap).
		if _, err := widgets.CallMethod(win, "set_child", button); err != nil {
			return err
		}
		win.Present()
		if *script {
			for range 3 {
				b.CallMethod(button, "emit", "clicked") // GLib runs the class handler: clicked, in Go
			}
			fmt.Printf("count %d, label %q\n", pygi.BlockAs[int64](&b, b.Attr(button, "props.count")), pygi.BlockAs[string](&b, b.CallMethod(button, "get_label")))
			win.Close()
		}
		return b.Err()
	}))
}
