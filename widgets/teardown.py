# Watches windows for duet: destroyed windows leave Gtk.Window's toplevels.
from gi.repository import GObject, Gtk


_installed = []


def install(on_change):
    model = Gtk.Window.get_toplevels()
    hid = model.connect("items-changed", lambda m, pos, removed, added: on_change(removed, added))
    _installed.append((model, hid))
    return model


def uninstall():
    """Before Python goes: the toplevels list lives as long as GTK, and a
    window made after Python is gone would run the handler."""
    while _installed:
        disconnect(*_installed.pop())


def windows(model):
    return [model.get_item(i) for i in range(model.get_n_items())]


def descendants(widget):
    """widget, every widget inside it, and their event controllers (GTK 4's
    input objects: a handler on a window's GestureClick is the window's)."""
    out, stack = [widget], [widget]
    while stack:
        w = stack.pop()
        controllers = w.observe_controllers()
        out.extend(controllers.get_item(i) for i in range(controllers.get_n_items()))
        child = w.get_first_child()
        while child is not None:
            out.append(child)
            stack.append(child)
            child = child.get_next_sibling()
    return out


def disconnect(obj, handler_id):
    if GObject.signal_handler_is_connected(obj, handler_id):
        GObject.signal_handler_disconnect(obj, handler_id)
