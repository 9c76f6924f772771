// Command weak shows a weak capture with widgets.Weakly. The application
// action app.bump lives as long as the application; its handler updates a
// label in a window and holds that label weakly: closing the window
// finalises the label, and the action is then skipped (slog logs it at
// debug level). A handler that captured the label strongly would keep it,
// and what it holds, alive as long as the application.
//
//	go run ./examples/weak            # Bump (or Ctrl+B); closing the window quits
//	go run ./examples/weak -script    # bump, close the window, wait for the label to go, bump again; exit 0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/widgets"
)

var script = flag.Bool("script", false, "bump, close the window, wait until the label is finalised, bump again, exit")

func main() {
	flag.Parse()
	if *script {
		slog.SetLogLoggerLevel(slog.LevelDebug) // show Weakly's note on the skipped call
	}
	os.Exit(app.Main(app.Options{ID: "org.duet.Weak", NonUnique: *script}, func(a *app.App) error {
		label := gtk.NewLabel("bumped 0 times")
		bumps := 0
		// The handler's label shadows the captured one: fn gets the live
		// label, and cannot reach the outer variable by mistake.
		bump := widgets.Weakly(label, func(label *gtk.Label) {
			bumps++
			label.SetText(fmt.Sprintf("bumped %d times", bumps))
		})
		if err := a.AddAction("bump", []string{"<Control>b"}, bump.(func())); err != nil {
			return err
		}
		button := gtk.NewButtonWithLabel("Bump")
		button.SetActionName("app.bump")
		box := gtk.NewBox(gtk.OrientationVertical, 8)
		box.Append(label)
		box.Append(button)
		win := gtk.NewApplicationWindow(a.Gtk())
		win.SetTitle("weak: a handler that lets go")
		win.SetDefaultSize(300, 100)
		win.SetChild(box)
		win.Present()
		if *script {
			return scripted(a, win, label, &bumps)
		}
		return nil
	}))
}

// scripted bumps twice, closes the window and, once the label has been
// finalised, bumps again: that call is skipped.
func scripted(a *app.App, win *gtk.ApplicationWindow, label *gtk.Label, bumps *int) error {
	for range 2 {
		if _, err := a.Python().CallMethod("activate_action", "bump", nil); err != nil {
			return err
		}
	}
	fmt.Println(label.Text())
	gone, err := widgets.WatchFinalize(label)
	if err != nil {
		return err
	}
	if err := a.Hold(); err != nil { // the app outlives its window
		return err
	}
	win.Close()
	go func() {
		// Both collectors, until they have let go of the window's widgets.
		for deadline := time.Now().Add(20 * time.Second); !gone.Finalized(); time.Sleep(20 * time.Millisecond) {
			if err := eventloop.Collect(); err != nil {
				fail(err)
			}
			if time.Now().After(deadline) {
				fail(errors.New("the label was not finalised"))
			}
		}
		fmt.Println("the window's label is finalised")
		err := eventloop.InvokeWait(context.Background(), func() error {
			_, err := a.Python().CallMethod("activate_action", "bump", nil)
			fmt.Printf("bumped again: still %d bumps, the handler was skipped\n", *bumps)
			return errors.Join(err, a.Release())
		})
		if err != nil {
			fail(err)
		}
	}()
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "weak:", err)
	os.Exit(1)
}
