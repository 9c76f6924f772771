# duet's ready-made Python widgets. Loaded from the Go binary (go:embed) by
# package widgets/kit; Python code can `import duet_widgets` once loaded.
import math

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Graphene", "1.0")
from gi.repository import GObject, Graphene, Gtk, Pango  # noqa: E402

PALETTE = [
    (0.20, 0.52, 0.89),
    (0.90, 0.38, 0.20),
    (0.18, 0.65, 0.38),
    (0.61, 0.35, 0.71),
    (0.85, 0.65, 0.13),
    (0.30, 0.30, 0.30),
]


class LineChart(Gtk.Widget):
    """A live line chart drawn with cairo: one line per series, the last
    `capacity` values of each, with a legend showing the latest values."""

    __gtype_name__ = "DuetLineChart"

    title = GObject.Property(type=str, default="")
    capacity = GObject.Property(type=int, default=300, minimum=2, maximum=1000000)
    unit = GObject.Property(type=str, default="")

    def __init__(self, **kw):
        super().__init__(**kw)
        self._series = {}
        self._order = []

    # -- data --------------------------------------------------------------
    def push(self, series: str, value: float) -> None:
        self.push_many({series: [value]})

    def push_many(self, batch: dict[str, list[float]]) -> None:
        """Appends values to series (made on first use)."""
        cap = self.props.capacity
        for name, values in batch.items():
            if name not in self._series:
                self._series[name] = []
                self._order.append(name)
            data = self._series[name]
            data.extend(float(v) for v in values)
            if len(data) > cap:
                del data[: len(data) - cap]
        self.queue_draw()

    def clear(self) -> None:
        """Forgets every series."""
        self._series.clear()
        self._order.clear()
        self.queue_draw()

    def points(self, series: str) -> list[float]:
        """The values kept of a series."""
        return list(self._series.get(series, ()))

    def series(self) -> list[str]:
        """The series' names, in order of appearance."""
        return list(self._order)

    # -- GTK ---------------------------------------------------------------
    def do_measure(self, orientation, for_size):
        if orientation == Gtk.Orientation.HORIZONTAL:
            return (160, 480, -1, -1)
        return (100, 220, -1, -1)

    def do_snapshot(self, snapshot):
        w, h = self.get_width(), self.get_height()
        if w <= 0 or h <= 0:
            return
        cr = snapshot.append_cairo(Graphene.Rect().init(0, 0, w, h))
        self._draw(cr, w, h)

    def _draw(self, cr, w, h):
        cr.set_source_rgb(1, 1, 1)
        cr.paint()
        left, right, top, bottom = 48, 12, 28, 22
        pw, ph = max(w - left - right, 1), max(h - top - bottom, 1)
        values = [v for name in self._order for v in self._series[name]]
        lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
        if hi - lo < 1e-9:
            lo, hi = lo - 1, hi + 1
        pad = (hi - lo) * 0.08
        lo, hi = lo - pad, hi + pad

        cr.select_font_face("Sans")
        cr.set_font_size(10)
        cr.set_line_width(1)
        for i in range(5):
            y = top + ph * i / 4
            cr.set_source_rgb(0.9, 0.9, 0.9)
            cr.move_to(left, y + 0.5)
            cr.line_to(left + pw, y + 0.5)
            cr.stroke()
            cr.set_source_rgb(0.4, 0.4, 0.4)
            label = _fmt(hi - (hi - lo) * i / 4)
            ext = cr.text_extents(label)
            cr.move_to(left - 6 - ext.width, y + ext.height / 2)
            cr.show_text(label)

        cap = self.props.capacity
        for idx, name in enumerate(self._order):
            data = self._series[name]
            if not data:
                continue
            r, g, b = PALETTE[idx % len(PALETTE)]
            cr.set_source_rgb(r, g, b)
            cr.set_line_width(2)
            step = pw / max(cap - 1, 1)
            x0 = left + pw - step * (len(data) - 1)
            for i, v in enumerate(data):
                x = x0 + step * i
                y = top + ph * (hi - v) / (hi - lo)
                if i == 0:
                    cr.move_to(x, y)
                else:
                    cr.line_to(x, y)
            cr.stroke()

        cr.set_font_size(12)
        cr.set_source_rgb(0.1, 0.1, 0.1)
        cr.move_to(left, 18)
        cr.show_text(self.props.title)
        x = left + (cr.text_extents(self.props.title).x_advance + 16 if self.props.title else 0)
        cr.set_font_size(10)
        for idx, name in enumerate(self._order):
            data = self._series[name]
            r, g, b = PALETTE[idx % len(PALETTE)]
            cr.set_source_rgb(r, g, b)
            cr.rectangle(x, 9, 10, 10)
            cr.fill()
            text = "%s %s%s" % (name, _fmt(data[-1]) if data else "-", self.props.unit)
            cr.set_source_rgb(0.2, 0.2, 0.2)
            cr.move_to(x + 14, 18)
            cr.show_text(text)
            x += 14 + cr.text_extents(text).x_advance + 14


def _fmt(v):
    a = abs(v)
    if a >= 1e6:
        return "%.1fM" % (v / 1e6)
    if a >= 1e4:
        return "%.0fk" % (v / 1e3)
    if a >= 100 or v == int(v):
        return "%.0f" % v
    return "%.2g" % v if a < 0.01 else "%.2f" % v


class LogView(Gtk.ScrolledWindow):
    """A scrolling log: one line per entry, the newest at the bottom, at
    most `max-lines` kept, levels shown in colour."""

    __gtype_name__ = "DuetLogView"

    max_lines = GObject.Property(type=int, default=1000, minimum=1, maximum=1000000)

    def __init__(self, **kw):
        super().__init__(**kw)
        self.set_min_content_height(120)
        self._view = Gtk.TextView(editable=False, cursor_visible=False, monospace=True)
        self._view.set_wrap_mode(Gtk.WrapMode.WORD_CHAR)
        buf = self._view.get_buffer()
        buf.create_tag("info", foreground="#333333")
        buf.create_tag("warn", foreground="#b36b00")
        buf.create_tag("error", foreground="#c01c28", weight=Pango.Weight.BOLD)
        self.set_child(self._view)
        self._lines = 0

    def append(self, text: str, level: str = "info") -> None:
        self.append_many([(text, level)])

    def append_many(self, entries: list[list[str]]) -> None:
        """Appends (text, level) lines; level is info, warn or error."""
        buf = self._view.get_buffer()
        for text, level in entries:
            if level not in ("info", "warn", "error"):
                level = "info"
            buf.insert_with_tags_by_name(buf.get_end_iter(), text.rstrip("\n") + "\n", level)
            self._lines += 1
        excess = self._lines - self.props.max_lines
        if excess > 0:
            start = buf.get_start_iter()
            end = buf.get_iter_at_line(excess)
            end = end[1] if isinstance(end, tuple) else end
            buf.delete(start, end)
            self._lines -= excess
        self._view.scroll_to_mark(buf.get_insert(), 0.0, False, 0, 0)
        buf.place_cursor(buf.get_end_iter())
        self._view.scroll_mark_onscreen(buf.get_insert())

    def text(self) -> str:
        """The whole log."""
        buf = self._view.get_buffer()
        return buf.get_text(buf.get_start_iter(), buf.get_end_iter(), False)

    def line_count(self) -> int:
        """How many lines the log holds."""
        return self._lines
