package a

import (
	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// Greeter is what duetgen writes for a Python class.
type Greeter struct{ *widgets.Widget }

func (g *Greeter) ConnectGreeted(fn func(self *Greeter, text string)) (uint64, error) { return 0, nil }

func typed(g *Greeter) {
	g.ConnectGreeted(func(self *Greeter, text string) {
		g.Prop("name") // want `handler captures g`
	})
	g.ConnectGreeted(func(self *Greeter, text string) { self.Prop("name") })
}

type panel struct {
	btn   *widgets.Widget
	count int
}

func positives(w *widgets.Widget, o *pygi.Object, p *panel, b *gtk.Button) {
	w.Connect("clicked", func(*pygi.Object) {
		w.Prop("label") // want `handler captures w, through which it reaches w, the object it is connected to`
	})
	o.CallMethod("connect", "clicked", func() {
		o.CallMethod("hide") // want `handler captures o`
	})
	o.CallMethod("connect_after", "clicked", first(callbacks.New(func() {
		o.CallMethod("hide") // want `handler captures o`
	})))
	p.btn.Connect("clicked", func(*pygi.Object) {
		p.count++ // want `handler captures p, through which it reaches p.btn`
	})
	w.Connect("notify", w.Prop) // want `handler is a method value of w`
	b.ConnectClicked(func() {
		b.SetLabel("on") // want `handler captures b.*gotk4 handlers get no emitter: capture it weakly \(widgets.Weakly\(b, func\(b \*gtk.Button\)`
	})
	w.Connect("clicked", widgets.Weakly(o, func(o, _ *pygi.Object) {
		w.Prop("label") // want `handler captures w`
	}))
}

func negatives(w, other *widgets.Widget, o *pygi.Object) {
	w.Connect("clicked", func(self *pygi.Object) { self.CallMethod("hide") })
	w.Connect("clicked", func(self, data *pygi.Object) { data.CallMethod("hide") }, o)
	weak, _ := widgets.Weak(w.Object)
	w.Connect("clicked", func(*pygi.Object) {
		if x, ok := weak.Get(); ok {
			x.Prop("label")
		}
	})
	w.Connect("clicked", func(*pygi.Object) { other.Prop("label") })
	w.Connect("clicked", widgets.Weakly(w, func(w *widgets.Widget, _ *pygi.Object) { w.Prop("label") }))
	w.Connect("clicked", widgets.Weakly(other, func(other *widgets.Widget, _ *pygi.Object) { other.Prop("label") }))
	o.CallMethod("set_label", func() { o.CallMethod("hide") }) // not a connect
	w.Connect("clicked", func(*pygi.Object) {
		w := other // a variable of the handler's own
		w.Prop("label")
	})
	//duet:cycle-ok measured on purpose
	w.Connect("clicked", func(*pygi.Object) { w.Prop("label") })
	w.Connect("clicked", func(*pygi.Object) { w.Prop("label") }) //duet:cycle-ok also here
}

func first(o *pygi.Object, _ error) *pygi.Object { return o }
