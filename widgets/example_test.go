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
