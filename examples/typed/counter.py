from gi.repository import GObject, Gtk


class Counter(Gtk.Box):
    """A count and a button that adds step to it."""

    __gsignals__ = {"changed": (GObject.SignalFlags.RUN_LAST, None, (int,))}

    count = GObject.Property(type=int, default=0)
    step = GObject.Property(type=int, default=1)

    def __init__(self, **kw):
        super().__init__(spacing=8, **kw)
        self._label = Gtk.Label(label=str(self.props.count))
        button = Gtk.Button(label="+")
        button.connect("clicked", lambda _button: self.bump(1))
        self.append(self._label)
        self.append(button)

    def bump(self, times: int) -> int:
        """Adds times steps to the count, and returns it."""
        self.props.count += self.props.step * times
        self._label.set_label(str(self.props.count))
        self.emit("changed", self.props.count)
        return self.props.count
