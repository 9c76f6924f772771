package a

import (
	"embed"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

var files embed.FS

// LoadUI's handlers are connected to objects of the interface it builds:
// capturing one the code got from its result is reported.
func loadUI(xml string, other *pygi.Object) error {
	var button, label *pygi.Object
	var win *widgets.Widget
	var s struct{ status *pygi.Object }
	var u *widgets.UI
	u, err := widgets.LoadUI(xml, map[string]any{
		"on_clicked": func(self *pygi.Object) {
			button.CallMethod("set_label", "on") // want `LoadUI handler captures button, which holds an object of the interface it is bound in \(from u\)`
		},
		"on_close": func() {
			win.Prop("title") // want `LoadUI handler captures win`
		},
		"on_status": func() {
			s.status.CallMethod("hide") // want `LoadUI handler captures s`
		},
		"on_ui": func() {
			u.Object("button") // want `LoadUI handler captures u`
		},
		"on_method":  label.CallMethod,                                          // want `LoadUI handler is a method value of label`
		"on_wrapped": first(callbacks.New(func() { label.CallMethod("hide") })), // want `LoadUI handler captures label`
		"on_strong": widgets.Weakly(other, func(o *pygi.Object) {
			label.CallMethod("hide") // want `LoadUI handler captures label`
		}),

		"on_emitter": func(self *pygi.Object) { self.CallMethod("hide") },
		"on_object":  func(self, label *pygi.Object) { label.CallMethod("hide") }, // GtkBuilder passes it
		"on_other":   func() { other.CallMethod("hide") },
		"on_weakly":  widgets.Weakly(label, func(label *pygi.Object) { label.CallMethod("hide") }),
		//duet:cycle-ok measured on purpose
		"on_ok": func() { button.CallMethod("hide") },
	})
	if err != nil {
		return err
	}
	b, err := u.Object("button")
	if err != nil {
		return err
	}
	button = b.Object
	l, _ := u.Object("label")
	label = l.Object
	win, _ = u.Object("win")
	st, _ := u.Object("status")
	s.status = st.Object
	return err
}

// LoadUIFS the same, from inside a closure that stores into its
// function's variables.
func loadUIFS(run func(func())) {
	var label *widgets.Widget
	var lbl *gtk.Label
	run(func() {
		u, _ := widgets.LoadUIFS(files, "a.ui", map[string]any{
			"on_clicked": func() {
				label.Prop("label") // want `LoadUI handler captures label`
			},
			"on_text": func() {
				lbl.SetText("x") // want `LoadUI handler captures lbl`
			},
		})
		label, _ = u.Object("label")
		for _, w := range []*widgets.Widget{label} {
			lbl = gtkLabel(w)
		}
	})
}

// What does not come from the interface is not its object; what is not a
// map written at the call is not looked into.
func loadUIClean(xml string, other *widgets.Widget, handlers map[string]any) {
	var err error
	var count int
	u, err := widgets.LoadUI(xml, map[string]any{
		"on_err":   func() { _ = err },
		"on_count": func() { count++ },
		"on_other": func() { other.Prop("label") },
	})
	_, err = u.Object("x")
	count = len(xml)
	widgets.LoadUI(xml, map[string]any{"on_x": func() { other.Prop("label") }})
	widgets.LoadUI(xml, handlers)
	var v *widgets.UI
	//duet:cycle-ok the whole call
	v, _ = widgets.LoadUI(xml, map[string]any{"on_v": func() { v.Object("x") }})
}

func gtkLabel(*widgets.Widget) *gtk.Label { return nil }
