# GtkBuilder interfaces whose signal handlers are Go funcs (duet's widgets.LoadUI).
import xml.etree.ElementTree as ET

from gi.repository import GObject, Gtk


def handler_names(xml):
    """The handler names the interface's <signal> elements ask for."""
    return sorted({s.get("handler") for s in ET.fromstring(xml).iter("signal") if s.get("handler")})


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


def build(xml, handlers):
    builder = Gtk.Builder()
    scope = Scope(handlers)
    builder.set_scope(scope)
    builder.add_from_string(xml)
    if scope.errors:
        raise RuntimeError("; ".join(scope.errors))
    return builder
