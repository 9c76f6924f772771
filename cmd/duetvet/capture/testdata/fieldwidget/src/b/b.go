package b

import (
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func widgetCallMethod(w, other *widgets.Widget) {
	w.CallMethod("connect", "clicked", func(*pygi.Object) {
		w.CallMethod("hide") // want `handler captures w, through which it reaches w, the object it is connected to`
	})
	w.Object.CallMethod("connect_after", "clicked", func(*pygi.Object) {
		w.CallMethod("hide") // want `handler captures w, through which it reaches w.Object`
	})

	w.CallMethod("connect", "clicked", func(self *pygi.Object) { self.CallMethod("hide") })
	w.CallMethod("connect", "clicked", func(*pygi.Object) { other.CallMethod("hide") })
	w.CallMethod("set_label", func() { w.CallMethod("hide") }) // not a connect
}
