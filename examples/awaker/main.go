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
	os.Exit(app.Main(app.Options{ID: "org.duet.Awaker", NonUnique: *script || *screenshot != ""}, activate))
}

func activate(a *app.App) error {
	gcp, err := pygi.Import("gc")
	if err != nil {
		return err
	}
	var gcRuns int
	gcTimer := eventloop.Every(*gcEvery, func() {
		if r, err := gcp.CallMethod("collect"); err == nil {
			r.Close()
		}
		runtime.GC()
		gcRuns++
	})
	win, err := newMainWindow(a, gcTimer)
	if err != nil {
		return err
	}
	if _, err := win.CallMethod("present"); err != nil {
		return err
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
	return nil
}

// newMainWindow is the seed's MainWindow constructor. The click handler is a
// Go func handed to PyGObject's connect and dropped by Go right away: the
// signal connection (Python) is what keeps it alive.
func newMainWindow(a *app.App, gcTimer *eventloop.Timer) (*pygi.Object, error) {
	var b pygi.Block
	Gtk := b.Import("gi.repository.Gtk")
	win := b.CallMethod(Gtk, "ApplicationWindow", pygi.Kw{"application": a.Python(), "default_width": 300,
		"default_height": 150, "title": "Awaker"})
	b.CallMethod(win, "connect", "close-request", func(*pygi.Object) bool {
		gcTimer.Cancel()
		a.Quit()
		return false
	})
	state := false
	button := b.CallMethod(Gtk, "ToggleButton", pygi.Kw{"label": "OFF"})
	// The handler gets the button it is connected to as its first
	// argument, so it captures no widget: nothing for Go to hold that
	// would keep the button alive (see "Handlers that do not leak" in
	// package widgets).
	onClick, err := callbacks.New(func(b *pygi.Block, button *pygi.Object) {
		state = !state
		b.CallMethod(button, "set_label", map[bool]string{false: "OFF", true: "ON"}[state])
	}, callbacks.Name("on_click"))
	b.Fail(err)
	b.CallMethod(button, "connect", "clicked", onClick)
	onClick.Close() // Go lets go: only the signal holds the callback now
	vbox := b.CallMethod(Gtk, "Box", pygi.Kw{"orientation": b.Attr(Gtk, "Orientation.VERTICAL")})
	b.CallMethod(vbox, "append", button)
	b.CallMethod(win, "set_child", vbox)
	return win, b.Err()
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
			var b pygi.Block
			button := b.CallMethod(b.CallMethod(win, "get_child"), "get_first_child")
			b.CallMethod(button, "emit", "clicked")
			if got := pygi.BlockAs[string](&b, b.CallMethod(button, "get_label")); b.Err() == nil && got != want {
				return fmt.Errorf("after click %d the label is %q, want %q", i, got, want)
			}
			return b.Err()
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
