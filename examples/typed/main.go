// Command typed uses its own Python widget class (counter.py) through a
// typed Go wrapper that cmd/duetgen generated (counter_gen.go, by the
// go:generate line below): Counter's properties, its signal and its method
// are Go methods the compiler checks, and the wrapper checks at run time
// that the class still is what it was generated from. Edit counter.py, then
// run go generate ./examples/typed.
//
//	go run ./examples/typed            # press +
//	go run ./examples/typed -script    # drive the counter from Go, exit 0
package main

//go:generate go run ../../cmd/duetgen -file counter.py -class Counter

import (
	"embed"
	"flag"
	"fmt"
	"os"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

//go:embed counter.py
var src embed.FS

var script = flag.Bool("script", false, "bump the counter from Go, print, exit")

func main() {
	flag.Parse()
	os.Exit(app.Main(app.Options{ID: "org.duet.Typed", NonUnique: *script}, func(a *app.App) error {
		m, err := widgets.LoadFS(src, "counter.py")
		if err != nil {
			return err
		}
		counter, err := NewCounter(m, pygi.Kw{"step": 5})
		if err != nil {
			return err
		}
		// The handler's parameters are typed: the emitter as a *Counter.
		if _, err := counter.ConnectChanged(func(self *Counter, count int) { fmt.Println("changed to", count) }); err != nil {
			return err
		}
		win := gtk.NewApplicationWindow(a.Gtk())
		win.SetTitle("typed: a generated wrapper")
		win.SetDefaultSize(240, 80)
		if _, err := widgets.CallMethod(win, "set_child", counter.Object); err != nil {
			return err
		}
		win.Present()
		if *script {
			if err := drive(counter); err != nil {
				return err
			}
			win.Close()
		}
		return nil
	}))
}

// drive is the scripted session: every call below is typed.
func drive(c *Counter) error {
	n, err := c.Bump(2)
	if err != nil {
		return err
	}
	if err := c.SetStep(1); err != nil {
		return err
	}
	if _, err := c.Bump(1); err != nil {
		return err
	}
	count, err := c.Count()
	fmt.Printf("bumped to %d, then to %d\n", n, count)
	return err
}
