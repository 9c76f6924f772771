// Command awaker is the program from the Deno binding's bug report, in Go:
// an application window with a toggle button labelled OFF/ON whose
// "clicked" handler is a Go callback created in the window's constructor
// and not kept by Go, while a timer forces both garbage collectors (Python's
// gc.collect() and Go's runtime.GC()) every 100 ms. In the original the host
// GC freed the callback that GTK still held, and the next click crashed.
// Here Python owns the callback, so it lives as long as the signal does.
//
//	go run ./examples/awaker                         # click away
//	go run ./examples/awaker -script -clicks 500     # scripted and headless, exits 0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/examples/internal/shot"
	"github.com/duet-gtk/duet/pygi"
)

var (
	script     = flag.Bool("script", false, "click the toggle by program, then close the window and exit")
	clicks     = flag.Int("clicks", 200, "clicks in a scripted session")
	clickEvery = flag.Duration("click-interval", 2*time.Millisecond, "time between scripted clicks")
	gcEvery    = flag.Duration("gc-interval", 100*time.Millisecond, "how often both garbage collectors are forced")
	screenshot = flag.String("screenshot", "", "save a screenshot of the screen (under Xvfb) to this PNG once the window shows")
)

func main() {
	flag.Parse()
	a, err := app.New(app.Options{ID: "org.duet.Awaker", NonUnique: *script || *screenshot != ""})
	if err != nil {
		fail(err)
	}
	gcp, err := pygi.Import("gc")
	if err != nil {
		fail(err)
	}
	var gcRuns int
	gcTimer := eventloop.Every(*gcEvery, func() {
		if r, err := gcp.CallMethod("collect"); err == nil {
			r.Close()
		}
		runtime.GC()
		gcRuns++
	})
	if err := a.OnActivate(func() {
		win, err := newMainWindow(a, gcTimer)
		if err != nil {
			fail(err)
		}
		if _, err := win.CallMethod("present"); err != nil {
			fail(err)
		}
		if *screenshot != "" {
			eventloop.After(700*time.Millisecond, func() {
				if err := shot.Take(*screenshot); err != nil {
					fail(err)
				}
				fmt.Println("screenshot:", *screenshot)
				if !*script {
					win.CallMethod("close")
				}
			})
		}
		if *script {
			go clickAway(win, func() { fmt.Printf("clicked %d times, %d forced GC rounds\n", *clicks, gcRuns) })
		}
	}); err != nil {
		fail(err)
	}
	os.Exit(a.Run([]string{os.Args[0]}))
}

// newMainWindow is the seed's MainWindow constructor. The click handler is a
// Go func handed to PyGObject's connect and dropped by Go right away: the
// signal connection (Python) is what keeps it alive.
func newMainWindow(a *app.App, gcTimer *eventloop.Timer) (*pygi.Object, error) {
	Gtk, err := pygi.Repository("Gtk")
	if err != nil {
		return nil, err
	}
	win, err := Gtk.CallMethod("ApplicationWindow", pygi.Kw{"application": a.Python()})
	if err != nil {
		return nil, err
	}
	win.CallMethod("set_default_size", 300, 150)
	win.CallMethod("set_title", "Awaker")
	if _, err := win.CallMethod("connect", "close-request", func(*pygi.Object) bool {
		gcTimer.Cancel()
		a.Quit()
		return false
	}); err != nil {
		return nil, err
	}
	state := false
	button, err := Gtk.CallMethod("ToggleButton", pygi.Kw{"label": "OFF"})
	if err != nil {
		return nil, err
	}
	// The handler gets the button it is connected to as its first
	// argument, so it captures no widget: nothing for Go to hold that
	// would keep the button alive (see "Handlers that do not leak" in
	// package widgets).
	onClick, err := callbacks.New(func(b *pygi.Object) {
		state = !state
		label := "OFF"
		if state {
			label = "ON"
		}
		b.CallMethod("set_label", label)
	}, callbacks.Name("on_click"))
	if err != nil {
		return nil, err
	}
	if _, err := button.CallMethod("connect", "clicked", onClick); err != nil {
		return nil, err
	}
	onClick.Close() // Go lets go: only the signal holds the callback now
	orientation, _ := pygi.Eval("__import__('gi.repository.Gtk', fromlist=['Gtk']).Orientation.VERTICAL", nil)
	vbox, err := Gtk.CallMethod("Box", pygi.Kw{"orientation": orientation})
	if err != nil {
		return nil, err
	}
	vbox.CallMethod("append", button)
	win.CallMethod("set_child", vbox)
	return win, nil
}

// clickAway clicks the toggle from a goroutine through the loop, checks the
// label after each click, then closes the window.
func clickAway(win *pygi.Object, done func()) {
	for i := 1; i <= *clicks; i++ {
		time.Sleep(*clickEvery)
		want := "OFF"
		if i%2 == 1 {
			want = "ON"
		}
		err := eventloop.InvokeWait(context.Background(), func() error {
			// Found afresh each time: Go keeps no reference to the button.
			box, err := win.CallMethod("get_child")
			if err != nil {
				return err
			}
			defer box.Close()
			button, err := box.CallMethod("get_first_child")
			if err != nil {
				return err
			}
			defer button.Close()
			if _, err := button.CallMethod("emit", "clicked"); err != nil {
				return err
			}
			got, err := button.CallMethod("get_label")
			if err != nil {
				return err
			}
			if s, _ := got.Text(); s != want {
				return fmt.Errorf("after click %d the label is %q, want %q", i, s, want)
			}
			return nil
		})
		if err != nil {
			fail(err)
		}
	}
	eventloop.Invoke(func() {
		done()
		win.CallMethod("close")
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "awaker:", err)
	os.Exit(1)
}
