package a

import (
	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// Every connect form checks the same way.

func connectAfter(w, other *widgets.Widget) {
	w.ConnectAfter("clicked", func(*pygi.Object) {
		w.Prop("label") // want `handler captures w, through which it reaches w, the object it is connected to`
	})
	w.ConnectAfter("notify", w.Prop) // want `handler is a method value of w, bound to w`
	w.ConnectAfter("clicked", func(self *pygi.Object) { self.CallMethod("hide") })
	w.ConnectAfter("clicked", func(*pygi.Object) { other.Prop("label") })
}

func block(o, other *pygi.Object, p *panel) {
	var b pygi.Block
	b.CallMethod(o, "connect", "clicked", func(*pygi.Object) {
		b.CallMethod(o, "hide") // want `handler captures o, through which it reaches o, the object it is connected to`
	})
	b.CallMethod(o, "connect_after", "clicked", func(d *pygi.Block, _ *pygi.Object) {
		d.CallMethod(o, "hide") // want `handler captures o`
	})
	b.CallMethod(p.btn.Object, "connect_object", "clicked", func() {
		p.count++ // want `handler captures p, through which it reaches p.btn.Object`
	}, other)
	b.CallMethod(o, "connect", "clicked", first(callbacks.New(func() {
		b.CallMethod(o, "hide") // want `handler captures o`
	})))
	b.CallMethod(o, "connect", "clicked", o.CallMethod) // want `handler is a method value of o, bound to o`

	b.CallMethod(o, "connect", "clicked", func(self *pygi.Object) { b.CallMethod(self, "hide") })
	b.CallMethod(o, "connect", "clicked", func(_, data *pygi.Object) { b.CallMethod(data, "hide") }, o)
	b.CallMethod(o, "connect", "clicked", func(*pygi.Object) { b.CallMethod(other, "hide") })
	b.CallMethod(o, "set_label", func() { b.CallMethod(o, "hide") }) // not a connect
	b.CallMethod(o, "connect", "clicked", func(*pygi.Object) {
		o := other // a variable of the handler's own
		b.CallMethod(o, "hide")
	})
	//duet:cycle-ok measured on purpose
	b.CallMethod(o, "connect", "clicked", func(*pygi.Object) { b.CallMethod(o, "hide") })
}

func bridge(btn *gtk.Button, label *gtk.Label) {
	widgets.CallMethod(btn, "connect", "clicked", func(*pygi.Object) {
		btn.SetLabel("on") // want `handler captures btn, through which it reaches btn, the object it is connected to: .* widgets.Weakly\(btn, fn\)`
	})
	widgets.CallMethod(btn, "connect_after", "clicked", btn.SetLabel) // want `handler is a method value of btn`

	widgets.CallMethod(btn, "connect", "clicked", func(*pygi.Object) { label.SetText("on") })
	widgets.CallMethod(btn, "set_label", func() { btn.SetLabel("on") })                      // not a connect
	widgets.CallMethod(btn, "connect", "clicked", func(*pygi.Object) { btn.SetLabel("on") }) //duet:cycle-ok also here
}

func closures(o, other *pygi.Object, w *widgets.Widget) {
	callbacks.Connect(o, "ping", func(*pygi.Object, int) {
		o.CallMethod("hide") // want `handler captures o, through which it reaches o, the object it is connected to`
	})
	callbacks.ConnectAfter(w.Object, "ping", func() {
		w.Prop("label") // want `handler captures w, through which it reaches w.Object`
	})
	callbacks.Connect(o, "ping", first(callbacks.New(func() {
		o.CallMethod("hide") // want `handler captures o`
	})))

	callbacks.Connect(o, "ping", func(self *pygi.Object, n int) { self.CallMethod("hide") })
	callbacks.ConnectAfter(o, "ping", func(_, data *pygi.Object) { data.CallMethod("hide") }, o)
	callbacks.Connect(o, "ping", func() { other.CallMethod("hide") })
}

// A handler made by widgets.Weakly holds its object weakly: naming the
// object there is no capture; what fn itself captures still is.
func weakly(w, other *widgets.Widget, o *pygi.Object, btn *gtk.Button) {
	w.Connect("clicked", widgets.Weakly(w, func(w *widgets.Widget, _ *pygi.Object) { w.Prop("label") }))
	callbacks.Connect(o, "ping", widgets.Weakly(o, func(o *pygi.Object) { o.CallMethod("hide") }))
	widgets.CallMethod(btn, "connect", "clicked", widgets.Weakly(btn, func(b *gtk.Button, _ *pygi.Object) { b.SetLabel("on") }))
	btn.ConnectClicked(widgets.Weakly(btn, func(b *gtk.Button) { b.SetLabel("on") }).(func()))
	w.Connect("clicked", first(callbacks.New(widgets.Weakly(w, func(w *widgets.Widget) { w.Prop("label") }))))
	w.Connect("clicked", widgets.Weakly(other, func(x *widgets.Widget) { x.Prop("label") }))

	w.Connect("clicked", widgets.Weakly(other, func(x *widgets.Widget) {
		w.Prop("label") // want `handler captures w`
	}))
	w.Connect("clicked", widgets.Weakly(w, func(x *widgets.Widget) {
		w.Prop("label") // want `handler captures w`
	}))
	callbacks.Connect(o, "ping", widgets.Weakly(other, o.CallMethod)) // want `handler is a method value of o`
}
