package widgets_test

import (
	"context"
	"fmt"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func ExampleLoadSource() {
	eventloop.InvokeWait(context.Background(), func() error {
		m, err := widgets.LoadSource("counter_widget", `
from gi.repository import GObject, Gtk
class Counter(Gtk.Label):
    count = GObject.Property(type=int, default=0)
    def bump(self):
        self.props.count += 1
        self.set_label(str(self.props.count))
`)
		if err != nil {
			return err
		}
		c, err := m.New("Counter", pygi.Kw{"count": 41})
		if err != nil {
			return err
		}
		c.Connect("notify::count", func(self, pspec *pygi.Object) { fmt.Println("count changed") })
		c.CallMethod("bump")
		label, _ := c.CallMethod("get_label")
		fmt.Println(label)
		return nil
	})
	// Output:
	// count changed
	// 42
}

func ExampleWeakly() {
	eventloop.InvokeWait(context.Background(), func() error {
		var b pygi.Block
		Gtk := b.Import("gi.repository.Gtk")
		button := b.CallMethod(Gtk, "Button")
		label := b.CallMethod(Gtk, "Label", pygi.Kw{"label": "not clicked"})
		if err := b.Err(); err != nil {
			return err
		}
		// The button holds the handler; the handler holds the label only
		// weakly, so the label goes when the rest of the program lets go.
		clicks := 0
		widgets.Wrap(button).Connect("clicked", widgets.Weakly(label, func(label, button *pygi.Object) {
			clicks++
			label.CallMethod("set_label", "clicked")
		}))
		button.CallMethod("emit", "clicked")
		fmt.Println(pygi.BlockAs[string](&b, b.CallMethod(label, "get_label")))
		label.Close()                        // the label's last reference: it is finalised
		button.CallMethod("emit", "clicked") // the handler is skipped
		fmt.Println("the handler ran", clicks, "time")
		return b.Err()
	})
	// Output:
	// clicked
	// the handler ran 1 time
}
