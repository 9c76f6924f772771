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
