package explore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// Run from a goroutine while the loop runs (here: a test's, under
// looptest.Main), on whatever windows the program shows.
func ExampleRun() {
	var win *pygi.Object
	eventloop.InvokeWait(context.Background(), func() error {
		if err := widgets.InitGTK(); err != nil {
			return err
		}
		var b pygi.Block
		g := b.Globals(nil)
		b.Exec(`from gi.repository import Gtk
win = Gtk.Window(title="example")
win.set_child(Gtk.Button(label="OK"))
win.present()`, g)
		win = b.Item(g, "win")
		return b.Err()
	})
	rep, err := explore.Run(context.Background(), explore.Options{Seed: 1, Actions: 3, Pace: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range rep.Trace {
		fmt.Println(a)
	}
	fmt.Println(len(rep.Findings), "findings")
	eventloop.InvokeWait(context.Background(), func() error {
		_, err := win.CallMethod("destroy")
		return err
	})
	// Output:
	// click 'OK' in 'example'
	// click 'OK' in 'example'
	// click 'OK' in 'example'
	// 0 findings
}
