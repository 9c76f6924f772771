# Watches windows for duet: destroyed windows leave Gtk.Window's toplevels.
from gi.repository import GObject, Gtk


_installed = []


def install(on_change):
    model = Gtk.Window.get_toplevels()
    hid = model.connect("items-changed", lambda m, pos, removed, added: on_change(removed, added))
    _installed.append((model, hid))
    return model


# Python handlers (closures PyGObject made) connected to objects that may
# outlive Python: a GTK singleton such as Gtk.Settings, an object Go keeps.
# A GObject keeps the Python wrapper of an object with handlers alive, so
# the handlers stay connected, and GTK would run them after Python is gone.
# Each connection is remembered, through a weak reference to the GObject
# (its Python wrapper may come and go), and undone before Python goes.
_python_handlers = []


def _remember(obj, hid):
    _python_handlers.append((obj.weak_ref(), hid))
    if len(_python_handlers) >= 4096 and len(_python_handlers) & (len(_python_handlers) - 1) == 0:
        _python_handlers[:] = [(r, h) for r, h in _python_handlers if _connected(r(), h)]


def _connected(obj, hid):
    return obj is not None and GObject.signal_handler_is_connected(obj, hid)


def uninstall():
    """Before Python goes: the toplevels list lives as long as GTK, and a
    window made after Python is gone would run the handler; the same for
    every Python handler still connected to an object that is alive."""
    while _installed:
        model, hid = _installed.pop()
        if GObject.signal_handler_is_connected(model, hid):
            model.disconnect(hid)
    while _python_handlers:
        r, hid = _python_handlers.pop()
        obj = r()
        if _connected(obj, hid):
            obj.disconnect(hid)


def windows(model):
    return [model.get_item(i) for i in range(model.get_n_items())]


def descendants(widget):
    out, stack = [widget], [widget]
    while stack:
        child = stack.pop().get_first_child()
        while child is not None:
            out.append(child)
            stack.append(child)
            child = child.get_next_sibling()
    return out


def disconnect(obj, handler_id):
    if GObject.signal_handler_is_connected(obj, handler_id):
        obj.disconnect(handler_id)


def hook_connect(record, native):
    """Every way of connecting a handler to a GObject signal (connect,
    connect_after, connect_object, connect_object_after) tells duet when the
    handler is a Go callback, so that one rule applies to all of them; a Go
    callback connected without extra data runs through duet's own closure
    (native), which hands the signal's values straight to Go."""
    for name in ("connect", "connect_after", "connect_object", "connect_object_after"):
        orig = getattr(GObject.Object, name, None)
        if orig is None or getattr(orig, "__duet__", False):
            continue

        def make(name, orig):
            plain = name in ("connect", "connect_after")
            after = name == "connect_after"

            def connect(self, detailed_signal, handler, *args, **kwargs):
                go = type(getattr(handler, "__self__", None)).__name__ == "PyCapsule"
                hid = 0
                if go and plain and not args and not kwargs:
                    hid = native(self, detailed_signal, handler, after)
                    go = hid != 0  # zero: a capsule function, not duet's
                if not hid:
                    # PyGObject's own closure: it must go before Python does
                    # (duet's closure, above, knows when Python is gone).
                    hid = orig(self, detailed_signal, handler, *args, **kwargs)
                    _remember(self, hid)
                if go:
                    record(self, hid, handler)
                return hid

            connect.__duet__ = True
            connect.__wrapped__ = orig
            connect.__name__ = orig.__name__
            connect.__qualname__ = getattr(orig, "__qualname__", orig.__name__)
            connect.__doc__ = orig.__doc__
            return connect

        setattr(GObject.Object, name, make(name, orig))
