// Command duet is the duet side of make bench's scrolling rows (see
// package scroll): the window, list view and factory are made through
// PyGObject, as a duet app's Python widgets are, and the factory's setup,
// bind and unbind handlers are Go funcs connected with callbacks.Connect
// that take the list item as *pygi.Object and make, through pygi (a
// *pygi.Block, as the gallery writes handlers), the same PyGObject calls
// as bench.py's Python handlers: get_child, get_item, get_string,
// set_label. (The gallery's item.props.child path is one crossing fewer
// but slower here: a property lookup instead of a method call.) The tick
// callback and the frame clock's handlers are Go funcs too. Its argument
// is the number of items; it prints one line and exits.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/stress/bench/scroll"
)

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	a, err := app.New(app.Options{ID: "org.duet.bench.DuetScroll", NonUnique: true, SkipFinalize: true})
	if err != nil {
		panic(err)
	}
	var r scroll.Recorder
	a.OnActivate(func() {
		if err := build(a, n, &r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	})
	os.Exit(a.Run(context.Background(), os.Args[:1]))
}

func build(a *app.App, n int, r *scroll.Recorder) error {
	var b pygi.Block
	Gtk := b.Import("gi.repository.Gtk")
	GLib := b.Import("gi.repository.GLib")
	win := b.CallMethod(Gtk, "ApplicationWindow", pygi.Kw{"application": a.Python(), "title": "scroll"})
	b.CallMethod(win, "set_default_size", scroll.Width, scroll.Height)
	b.CallMethod(win, "set_resizable", false)
	factory := b.CallMethod(Gtk, "SignalListItemFactory")
	if err := b.Err(); err != nil {
		return err
	}
	for _, c := range []struct {
		signal string
		fn     any
	}{
		{"setup", func(d *pygi.Block, _, item *pygi.Object) {
			defer r.Handler(time.Now(), false, true)
			d.CallMethod(item, "set_child", d.CallMethod(Gtk, "Label"))
		}},
		{"bind", func(d *pygi.Block, _, item *pygi.Object) {
			defer r.Handler(time.Now(), true, false)
			d.CallMethod(d.CallMethod(item, "get_child"), "set_label", d.CallMethod(d.CallMethod(item, "get_item"), "get_string"))
		}},
		{"unbind", func(d *pygi.Block, _, item *pygi.Object) {
			defer r.Handler(time.Now(), false, false)
			d.CallMethod(d.CallMethod(item, "get_child"), "set_label", "")
		}},
	} {
		if _, err := callbacks.Connect(factory, c.signal, c.fn); err != nil {
			return err
		}
	}
	// The strings are made by Python, as bench.py makes them, so that
	// both sides build the model alike and the rows time the factories.
	// (A []string this long passed through pygi costs later calls
	// nothing: pygi's BenchmarkCallAfterLongList.)
	model := b.Eval(fmt.Sprintf("Gtk.StringList.new(['item %%d' %% i for i in range(%d)])", n), b.Globals(pygi.Kw{"Gtk": Gtk}))
	lv := b.CallMethod(Gtk, "ListView", pygi.Kw{"model": b.CallMethod(Gtk, "NoSelection", pygi.Kw{"model": model}), "factory": factory})
	b.CallMethod(win, "set_child", b.CallMethod(Gtk, "ScrolledWindow", pygi.Kw{"child": lv}))
	adj := b.CallMethod(lv, "get_vadjustment")
	b.CallMethod(lv, "add_tick_callback", func(d *pygi.Block, _, _ *pygi.Object) bool {
		v := pygi.BlockAs[float64](d, d.CallMethod(adj, "get_value"))
		upper := pygi.BlockAs[float64](d, d.CallMethod(adj, "get_upper"))
		page := pygi.BlockAs[float64](d, d.CallMethod(adj, "get_page_size"))
		if next, ok := r.Tick(v, upper, page); ok {
			d.CallMethod(adj, "set_value", next)
		}
		return true
	})
	if _, err := callbacks.Connect(win, "map", func(d *pygi.Block, w *pygi.Object) error {
		clock := d.CallMethod(w, "get_frame_clock")
		if err := d.Err(); err != nil {
			return err
		}
		if _, err := callbacks.Connect(clock, "before-paint", r.BeforePaint); err != nil {
			return err
		}
		if _, err := callbacks.Connect(clock, "after-paint", func() {
			if r.AfterPaint() {
				fmt.Println(r.Line())
				os.Exit(0)
			}
		}); err != nil {
			return err
		}
		d.CallMethod(GLib, "timeout_add", scroll.Settle.Milliseconds(), func() bool { r.Arm(); return false })
		return nil
	}); err != nil {
		return err
	}
	b.CallMethod(win, "present")
	return b.Err()
}
