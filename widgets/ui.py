# GtkBuilder interfaces whose signal handlers are Go funcs (duet's widgets.LoadUI).
import xml.etree.ElementTree as ET

from gi.repository import GObject, Gtk


def _handlers(root):
    for s in root.iter("signal"):
        if s.get("handler"):
            yield s.get("handler")
    # A list item factory's template is an interface of its own, in the
    # text of its bytes property; GtkBuilder builds it later, for each
    # item, with this interface's scope.
    for p in root.iter("property"):
        text = (p.text or "").strip()
        if p.get("name") == "bytes" and text.startswith("<"):
            try:
                inner = ET.fromstring(text)
            except ET.ParseError:
                continue
            yield from _handlers(inner)


def handler_names(xml):
    """The handler names the interface's <signal> elements ask for, its
    list item factories' templates included."""
    return sorted(set(_handlers(ET.fromstring(xml))))


class Scope(GObject.Object, Gtk.BuilderScope):
    """Binds handler names to the callables given (Go funcs). Every name was
    checked before the build; what still goes wrong is kept in errors (GTK
    drops what a scope raises) and raised by build."""

    def __init__(self, handlers):
        super().__init__()
        self.handlers = handlers
        self.errors = []

    def do_create_closure(self, builder, name, flags, obj):
        handler = self.handlers.get(name)
        if handler is None:
            self.errors.append("no handler %s" % name)
            return None
        if obj is None:
            return handler
        if flags & Gtk.BuilderClosureFlags.SWAPPED:
            # As g_signal_connect_swapped: the object first, the emitter last.
            return lambda emitter, *args: handler(obj, *args, emitter)
        return lambda emitter, *args: handler(emitter, *args, obj)


_TRUE = ("yes", "true", "1", "y", "t")


def _flag(value, default):
    return default if value is None else value.strip().lower() in _TRUE


def build(xml, handlers):
    """Builds the interface and connects its signals the way every Go
    handler is connected (PyGObject's connect, which duet records), not
    through the scope: GtkBuilder's own connections would not be recorded,
    and a destroyed window could not take its handlers with it. The
    signals of the objects built are taken out of the XML and connected
    once the build is done, as GtkBuilder itself connects them then. The
    scope stays for what GtkBuilder builds later (a list item factory's
    template)."""
    import duet_connect

    root = ET.fromstring(xml)
    signals, n = [], 0
    for element in root.iter("object"):
        mine = [s for s in element if s.tag == "signal"]
        if not mine:
            continue
        oid = element.get("id")
        if not oid:
            n += 1
            oid = "__duet_signals_%d" % n
            element.set("id", oid)
        for s in mine:
            element.remove(s)
            other = s.get("object")
            signals.append((oid, s.get("name"), s.get("handler"), other,
                            _flag(s.get("after"), False), _flag(s.get("swapped"), other is not None)))
    builder = Gtk.Builder()
    scope = Scope(handlers)
    builder.set_scope(scope)
    builder.add_from_string(ET.tostring(root, encoding="unicode"))
    for oid, name, handler_name, other, after, swapped in signals:
        obj = builder.get_object(oid)
        handler = handlers[handler_name]
        connect = obj.connect_after if after else obj.connect
        if other is None:
            connect(name, handler)
            continue
        data = builder.get_object(other)
        if data is None:
            raise RuntimeError("signal %s of %s: no object %s in the interface" % (name, oid, other))
        if not swapped:
            connect(name, handler, data)
            continue
        # As g_signal_connect_swapped: the object first, the emitter last.
        hid = connect(name, lambda emitter, *args, h=handler, o=data: h(o, *args, emitter))
        duet_connect.record(obj, hid, handler)
    if scope.errors:
        raise RuntimeError("; ".join(scope.errors))
    return builder


# A reload of a .ui file (duet's development mode): the new interface is
# built, then each top-level object of the old one that is placed (a
# widget with a parent, a window shown) is replaced by the new one with
# the same id, where it is.

BANNER = "duet-reload-banner"  # internal/reload's banner overlay


def top_ids(xml):
    """The ids of the interface's top-level objects, in order."""
    return [e.get("id") for e in ET.fromstring(xml) if e.tag == "object" and e.get("id")]


def get_object(builder, kept, oid):
    """The interface's object oid: the one a reload kept in place (a shown
    window), else the builder's."""
    o = kept.get(oid) if kept is not None else None
    return o if o is not None else builder.get_object(oid)


def _window_child(win):
    c = win.get_child()
    if c is not None and c.get_name() == BANNER and isinstance(c, Gtk.Overlay):
        return c.get_child(), c
    return c, win


# Widgets whose children are pages kept in an internal Gtk.Stack: a new
# child put in that stack would not be one of their pages.
_PAGED = (Gtk.Notebook, Gtk.Assistant)


def _ancestors(w, n=3):
    for _ in range(n):
        w = w.get_parent()
        if w is None:
            return
        yield w


def _put(old, new, parent):
    """Puts new where old is in parent, or says why not."""
    # A widget with one child may keep it in an internal widget (an
    # expander's box, a popover's contents): the widget that says old is
    # its child takes the new one.
    for a in _ancestors(old):
        get, put = getattr(a, "get_child", None), getattr(a, "set_child", None)
        if get is not None and put is not None and get() is old:
            put(new)  # a window's, a frame's, a viewport's, a button's... child
            return None
        if isinstance(a, _PAGED):
            return "in a %s, which a reload cannot put a new child in: the old one stays" % type(a).__gtype__.name
    if isinstance(parent, Gtk.Box):
        prev = old.get_prev_sibling()
        parent.remove(old)
        parent.insert_child_after(new, prev)
        return None
    if isinstance(parent, Gtk.Paned):
        if parent.get_start_child() is old:
            parent.set_start_child(new)
        else:
            parent.set_end_child(new)
        return None
    if isinstance(parent, Gtk.CenterBox):
        for get, put in ((parent.get_start_widget, parent.set_start_widget),
                         (parent.get_center_widget, parent.set_center_widget),
                         (parent.get_end_widget, parent.set_end_widget)):
            if get() is old:
                put(new)
                return None
    if isinstance(parent, Gtk.Grid):
        col, row, w, h = parent.query_child(old)
        parent.remove(old)
        parent.attach(new, col, row, w, h)
        return None
    if isinstance(parent, Gtk.Stack):
        page = parent.get_page(old)
        name, title, shown = page.get_name(), page.get_title(), parent.get_visible_child() is old
        parent.remove(old)
        # Gtk.Stack has no insert: the new page comes last.
        parent.add_titled(new, name, title) if title is not None else parent.add_named(new, name)
        if shown:
            parent.set_visible_child(new)
        return None
    if isinstance(parent, Gtk.Overlay) and parent.get_child() is not old:
        parent.remove_overlay(old)
        parent.add_overlay(new)
        return None
    return "in a %s, which a reload cannot put a new child in: the old one stays" % type(parent).__gtype__.name


def replace(old_builder, kept, new_builder, xml, old_xml):
    """Puts the new builder's top-level objects where the old builder's
    are placed. Returns [replaced, problems]; kept (a dict) gets the ids of
    shown windows, which stay: their child is replaced."""
    replaced, problems = 0, []
    new_ids = top_ids(xml)
    for oid in top_ids(old_xml):
        old = get_object(old_builder, kept, oid)
        if not isinstance(old, Gtk.Widget):
            continue
        new = new_builder.get_object(oid) if oid in new_ids else None
        placed = old.get_visible() if isinstance(old, Gtk.Window) else old.get_parent() is not None
        if not placed:
            kept.pop(oid, None)
            continue
        if new is None or not isinstance(new, Gtk.Widget):
            problems.append("%s: placed, and no longer a widget of the file: the old one stays" % oid)
            continue
        if isinstance(old, Gtk.Window):
            if not isinstance(new, Gtk.Window):
                problems.append("%s: a shown window, no longer a window in the file: the old one stays" % oid)
                continue
            # The window the app shows stays (its size, position, title,
            # what the app connected to it); its child and titlebar are
            # the new window's, which is destroyed.
            child = new.get_child()
            new.set_child(None)
            _, holder = _window_child(old)
            holder.set_child(child)
            titlebar = new.get_titlebar()
            if titlebar is not None:
                new.set_titlebar(None)
                old.set_titlebar(titlebar)
            new.destroy()
            kept[oid] = old
            replaced += 1
            continue
        why = _put(old, new, old.get_parent())
        if why is not None:
            problems.append("%s: %s" % (oid, why))
            continue
        kept.pop(oid, None)
        replaced += 1
    return [replaced, problems]
