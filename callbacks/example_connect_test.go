package callbacks_test

import (
	"fmt"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

func ExampleConnect() {
	g, _ := pygi.NewGlobals()
	defer g.Close()
	_ = pygi.Exec(`
from gi.repository import GObject
class Thermometer(GObject.Object):
    __gsignals__ = {"reading": (GObject.SignalFlags.RUN_LAST, bool, (float,))}
t = Thermometer()
`, g)
	t, _ := g.Item("t")
	defer t.Close()
	// The handler takes the emitter and the reading; its bool is the
	// signal's return value. The connection owns it from here on.
	_, err := callbacks.Connect(t, "reading", func(_ *pygi.Object, celsius float64) bool {
		fmt.Printf("%.1f °C\n", celsius)
		return celsius > 30
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	hot, _ := t.CallMethod("emit", "reading", 31.5)
	fmt.Println(hot)
	// Output:
	// 31.5 °C
	// True
}
