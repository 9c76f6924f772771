# The gallery in PyGObject: every API that takes a callable, one section
# each. examples/gallery/main.go is its twin in Go; make gallery-lines
# compares their sizes.
import sys
import gi

gi.require_version("Gtk", "4.0")
from gi.repository import GLib, GObject, Gio, Gtk

done = set()

def mark(name):
    done.add(name)
    if len(done) == 9:
        print("all 9 sections ran:", " ".join(sorted(done)))
        app.quit()

def activate(app):
    win = Gtk.ApplicationWindow(application=app, title="gallery")
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    win.set_child(box)
    # timeout and idle sources
    ticks = Gtk.Label(label="0")
    box.append(ticks)
    def tick():
        ticks.set_label(str(int(ticks.get_label()) + 1))
        if ticks.get_label() == "3":
            mark("timeout")
            return False
        return True
    GLib.timeout_add(20, tick)
    GLib.idle_add(lambda: mark("idle"))
    # a drawing area's draw func
    area = Gtk.DrawingArea(content_width=100, content_height=40)
    def draw(area, cr, w, h):
        cr.set_source_rgb(0.2, 0.4, 0.8)
        cr.rectangle(0, 0, w, h)
        cr.fill()
        mark("draw")
    area.set_draw_func(draw)
    box.append(area)
    # an action
    action = Gio.SimpleAction.new("greet", None)
    action.connect("activate", lambda a, p: mark("action"))
    app.add_action(action)
    app.activate_action("greet", None)
    # a list view with a factory, a filter and a sorter
    words = Gtk.StringList.new(["gamma", "alpha", "beta", "delta"])
    filtered = Gtk.FilterListModel.new(words, Gtk.CustomFilter.new(lambda s: "e" in s.get_string()))
    def order(a, b, data):
        return (a.get_string() > b.get_string()) - (a.get_string() < b.get_string())
    model = Gtk.SortListModel.new(filtered, Gtk.CustomSorter.new(order))
    factory = Gtk.SignalListItemFactory()
    factory.connect("setup", lambda f, item: item.set_child(Gtk.Label()))
    factory.connect("bind", lambda f, item: (item.get_child().set_label(item.get_item().get_string()), mark("list")))
    box.append(Gtk.ListView(model=Gtk.NoSelection(model=model), factory=factory))
    if [model.get_item(i).get_string() for i in range(model.get_n_items())] == ["beta", "delta"]:
        mark("filter+sort")
    # a property binding with a transform
    adj = Gtk.Adjustment(value=1, upper=10)
    shown = Gtk.Label()
    adj.bind_property("value", shown, "label", GObject.BindingFlags.SYNC_CREATE, lambda b, v: "value %d" % v)
    adj.set_value(7)
    if shown.get_label() == "value 7":
        mark("binding")
    box.append(shown)
    # an asynchronous file read
    def loaded(f, result):
        ok, data, etag = f.load_contents_finish(result)
        if ok and b"gallery" in data:
            mark("file")
    Gio.File.new_for_path(__file__).load_contents_async(None, loaded)
    # a tick callback
    box.add_tick_callback(lambda widget, clock: mark("tick") or False)
    win.present()

app = Gtk.Application(application_id="org.duet.GalleryPy", flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect("activate", activate)
GLib.timeout_add_seconds(20, lambda: sys.exit("timed out: only " + " ".join(sorted(done))))
app.run(None)
