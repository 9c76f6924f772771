# Every way Python code connects a handler to a GObject signal tells duet
# when the handler is a Go callback (package callbacks, connect.go).
from gi.repository import GObject


# Python closures that GTK objects outliving Python may still call: the
# handlers PyGObject's connect made (on a GTK singleton such as
# Gtk.Settings, on an object Go keeps: a GObject keeps the Python wrapper of
# an object with handlers alive, so the handlers stay), and the transforms
# of bind_property. Each is remembered, through a weak reference to the
# GObject (its Python wrapper may come and go; one per object), and undone
# before Python goes. The calls are GObject's own, never the object's
# attributes: a class of the app's may define its own disconnect.
_python_handlers = {}  # the GObject's address -> [weak ref to it, handler ids]
_bindings = []  # weak refs to GBindings with Python transforms
_weak_ref = GObject.Object.weak_ref
_is_connected = GObject.signal_handler_is_connected
_disconnect = GObject.signal_handler_disconnect


def _remember(obj, hid):
    key = hash(obj)  # PyGObject: the GObject's address
    e = _python_handlers.get(key)
    if e is None or e[0]() is None:  # a new object (or a dead one's address again)
        e = _python_handlers[key] = [_weak_ref(obj), []]
    ids = e[1]
    ids.append(hid)
    if len(ids) >= 64 and len(ids) & (len(ids) - 1) == 0:
        ids[:] = [h for h in ids if _is_connected(obj, h)]
    if len(_python_handlers) >= 4096 and len(_python_handlers) & (len(_python_handlers) - 1) == 0:
        for k in [k for k, (r, _) in _python_handlers.items() if r() is None]:
            del _python_handlers[k]


def _remember_binding(binding):
    if binding is not None:
        _bindings.append(_weak_ref(binding))
        if len(_bindings) >= 4096 and len(_bindings) & (len(_bindings) - 1) == 0:
            _bindings[:] = [r for r in _bindings if r() is not None]


def uninstall():
    """Before Python goes: every Python handler still connected to an
    object that is alive, and every binding with a Python transform."""
    for r, ids in list(_python_handlers.values()):
        obj = r()
        for hid in ids if obj is not None else ():
            try:
                if _is_connected(obj, hid):
                    _disconnect(obj, hid)
            except Exception:
                pass
    _python_handlers.clear()
    while _bindings:
        b = _bindings.pop()()
        if b is not None:
            try:
                GObject.Binding.unbind(b)
            except Exception:
                pass


_record = [None]


def record(obj, hid, handler):
    """Records that the Go callback handler is connected to obj as hid,
    through a Python closure of duet's own (widgets' LoadUI: a swapped
    handler); a no-op for anything but a Go callback."""
    if _record[0] is not None:
        _record[0](obj, hid, handler)


def install(record, native):
    """connect, connect_after, connect_object, connect_object_after and
    connect_data: a
    Go callback connected without extra data runs through duet's own
    closure (native), which hands the signal's values straight to Go;
    every other connection of a Go callback is recorded (record)."""
    _record[0] = record
    for name in ("connect", "connect_after", "connect_object", "connect_object_after", "connect_data"):
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

    orig_bind = GObject.Object.bind_property
    if not getattr(orig_bind, "__duet__", False):

        def bind_property(self, *args, **kwargs):
            binding = orig_bind(self, *args, **kwargs)
            if len(args) > 4 or kwargs.get("transform_to") or kwargs.get("transform_from"):
                _remember_binding(binding)  # Python transforms: closures
            return binding

        bind_property.__duet__ = True
        bind_property.__wrapped__ = orig_bind
        bind_property.__doc__ = orig_bind.__doc__
        GObject.Object.bind_property = bind_property
