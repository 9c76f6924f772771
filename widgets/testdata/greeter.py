from gi.repository import GObject, Gtk


class Greeter(Gtk.Box):
    """A box that greets someone by name, and says so with a signal."""

    __gsignals__ = {"greeted": (GObject.SignalFlags.RUN_LAST, None, (str,))}

    name = GObject.Property(type=str, default="world")

    def __init__(self, **kw):
        super().__init__(**kw)
        self.label = Gtk.Label()
        self.append(self.label)
        self.greet()

    def greet(self) -> str:
        text = "Hello, %s!" % self.props.name
        self.label.set_text(text)
        self.emit("greeted", text)
        return text

    def scale(self, factor: int) -> int:
        """Twice factor."""
        return factor * 2


class Broken(Gtk.Box):
    def __init__(self, **kw):
        super().__init__(**kw)
        raise RuntimeError("constructor refused")
