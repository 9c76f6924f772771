// Command gallery hands Go funcs to every PyGObject API that takes a
// callable, one section each, written with pygi's Block and name paths.
// gallery.py beside it is its twin in PyGObject; make gallery-lines
// compares their sizes.
//
//	go run ./examples/gallery            # until you close the window
//	go run ./examples/gallery -script    # exit 0 once every section has run
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
)

var (
	script = flag.Bool("script", false, "exit once every section has run (for headless runs)")
	file   = flag.String("file", "examples/gallery/gallery.py", "the file the asynchronous read loads")
	done   = map[string]bool{}
	quit   func()
)

func mark(name string) {
	if done[name] = true; len(done) == 9 && *script {
		fmt.Println("all 9 sections ran:", strings.Join(slices.Sorted(maps.Keys(done)), " "))
		quit()
	}
}

// text is a method's str result, "" on error (inside callbacks).
func text(o *pygi.Object, method string) string {
	var b pygi.Block
	return pygi.BlockAs[string](&b, b.CallMethod(o, method))
}

func activate(a *app.App) error {
	quit = a.Quit
	var b pygi.Block
	Gtk, GLib, Gio, GObject := b.Import("gi.repository.Gtk"), b.Import("gi.repository.GLib"), b.Import("gi.repository.Gio"), b.Import("gi.repository.GObject")
	win := b.CallMethod(Gtk, "ApplicationWindow", pygi.Kw{"application": a.Python(), "title": "gallery"})
	box := b.CallMethod(Gtk, "Box", pygi.Kw{"orientation": b.Attr(Gtk, "Orientation.VERTICAL"), "spacing": 6})
	b.CallMethod(win, "set_child", box)
	// timeout and idle sources
	ticks, n := b.CallMethod(Gtk, "Label", pygi.Kw{"label": "0"}), 0
	b.CallMethod(box, "append", ticks)
	b.CallMethod(GLib, "timeout_add", 20, func() bool {
		n++
		ticks.CallMethod("set_label", fmt.Sprint(n))
		if n == 3 {
			mark("timeout")
		}
		return n < 3
	})
	b.CallMethod(GLib, "idle_add", func() bool { mark("idle"); return false })
	// a drawing area's draw func
	area := b.CallMethod(Gtk, "DrawingArea", pygi.Kw{"content_width": 100, "content_height": 40})
	b.CallMethod(area, "set_draw_func", func(d *pygi.Block, _, cr *pygi.Object, w, h int) {
		d.CallMethod(cr, "set_source_rgb", 0.2, 0.4, 0.8)
		d.CallMethod(cr, "rectangle", 0, 0, w, h)
		d.CallMethod(cr, "fill")
		mark("draw")
	})
	b.CallMethod(box, "append", area)
	// an action
	action := b.CallMethod(Gio, "SimpleAction.new", "greet", nil)
	b.CallMethod(action, "connect", "activate", func(_, _ *pygi.Object) { mark("action") })
	b.CallMethod(a.Python(), "add_action", action)
	b.CallMethod(a.Python(), "activate_action", "greet", nil)
	// a list view with a factory, a filter and a sorter
	words := b.CallMethod(Gtk, "StringList.new", []string{"gamma", "alpha", "beta", "delta"})
	filtered := b.CallMethod(Gtk, "FilterListModel.new", words, b.CallMethod(Gtk, "CustomFilter.new",
		func(s *pygi.Object) bool { return strings.Contains(text(s, "get_string"), "e") }))
	model := b.CallMethod(Gtk, "SortListModel.new", filtered, b.CallMethod(Gtk, "CustomSorter.new",
		func(x, y, _ *pygi.Object) int { return strings.Compare(text(x, "get_string"), text(y, "get_string")) }))
	factory := b.CallMethod(Gtk, "SignalListItemFactory")
	b.CallMethod(factory, "connect", "setup", func(d *pygi.Block, _, item *pygi.Object) { d.CallMethod(item, "set_child", d.CallMethod(Gtk, "Label")) })
	b.CallMethod(factory, "connect", "bind", func(d *pygi.Block, _, item *pygi.Object) {
		d.CallMethod(item, "props.child.set_label", pygi.BlockAs[string](d, d.CallMethod(item, "props.item.get_string")))
		mark("list")
	})
	b.CallMethod(box, "append", b.CallMethod(Gtk, "ListView", pygi.Kw{"model": b.CallMethod(Gtk, "NoSelection", pygi.Kw{"model": model}), "factory": factory}))
	if pygi.BlockAs[string](&b, b.Eval("' '.join(s.get_string() for s in m)", b.Globals(pygi.Kw{"m": model}))) == "beta delta" {
		mark("filter+sort")
	}
	// a property binding with a transform
	adj := b.CallMethod(Gtk, "Adjustment", pygi.Kw{"value": 1, "upper": 10})
	shown := b.CallMethod(Gtk, "Label")
	b.CallMethod(adj, "bind_property", "value", shown, "label", b.Attr(GObject, "BindingFlags.SYNC_CREATE"),
		func(_ *pygi.Object, v float64) string { return fmt.Sprintf("value %d", int(v)) })
	b.CallMethod(adj, "set_value", 7)
	if pygi.BlockAs[string](&b, b.CallMethod(shown, "get_label")) == "value 7" {
		mark("binding")
	}
	b.CallMethod(box, "append", shown)
	// an asynchronous file read
	b.CallMethod(b.CallMethod(Gio, "File.new_for_path", *file), "load_contents_async", nil, func(d *pygi.Block, f, result *pygi.Object) {
		if data := pygi.BlockAs[[]byte](d, d.Item(d.CallMethod(f, "load_contents_finish", result), 1)); strings.Contains(string(data), "gallery") {
			mark("file")
		}
	})
	// a tick callback
	b.CallMethod(box, "add_tick_callback", func(_, _ *pygi.Object) bool { mark("tick"); return false })
	if *script {
		// A scripted run that never gets every section ends: the window
		// someone uses stays.
		b.CallMethod(GLib, "timeout_add_seconds", 20, func() { fmt.Fprintln(os.Stderr, "timed out:", done); os.Exit(1) })
	}
	b.CallMethod(win, "present")
	return b.Err()
}

func main() {
	flag.Parse()
	os.Exit(app.Main(app.Options{ID: "org.duet.Gallery", NonUnique: true}, activate))
}
