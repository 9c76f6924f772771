# The census window (duet's widgets.ShowCensus): what lives in this process
# as duet sees it, refreshed every second while the window is open.
#
# take() is a Go callback that returns a census as a dict of three tables,
# each a list of [name, site, count] rows, plus "quarantined" and "at"
# (seconds since the process started).
import gi

gi.require_version("Graphene", "1.0")
from gi.repository import Gdk, GLib, Graphene, Gtk

HISTORY = 60  # samples each sparkline keeps (one a second)
MAX_ROWS = 200  # per table; the rest is summed in one line
TABLES = (("callbacks", "Go callbacks"), ("python", "Python objects held by Go"), ("gobjects", "GObjects"))

_window = None


class Sparkline(Gtk.Widget):
    """Bars for the last HISTORY values, from zero to their maximum.
    Drawn in do_snapshot: no draw-func closure to tie the widget to itself."""

    def __init__(self, values, width=120, height=18):
        super().__init__()
        self.values = list(values[-HISTORY:])
        self.set_size_request(width, height)
        self.color = Gdk.RGBA()
        self.color.parse("#3584e4")

    def do_snapshot(self, snap):
        vals = self.values
        if not vals:
            return
        hi = max(max(vals), 1)
        w, h = self.get_width(), self.get_height()
        bw = w / HISTORY
        for i, v in enumerate(vals):
            bh = 1 + (h - 1) * v / hi
            x = (HISTORY - len(vals) + i) * bw
            snap.append_color(self.color, Graphene.Rect().init(x, h - bh, max(bw - 0.5, 0.5), bh))


def _label(text, xalign=0.0, markup=False, css=None):
    lab = Gtk.Label(xalign=xalign)
    if markup:
        lab.set_markup(text)
    else:
        lab.set_text(text)
    if css:
        lab.add_css_class(css)
    return lab


def _clear(grid):
    child = grid.get_first_child()
    while child is not None:
        nxt = child.get_next_sibling()
        grid.remove(child)
        child = nxt


class CensusWindow(Gtk.Window):
    def __init__(self, take):
        super().__init__(title="duet census")
        self.set_default_size(820, 560)
        self.take = take
        self.mark = None  # {(table, name, site): count} at the mark
        self.history = {}  # (table, name, site) or (table,) -> [counts]
        self.rows = {t: [] for t, _ in TABLES}  # the last refresh: [name, site, n, delta]
        self.refreshes = 0

        outer = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
        for side in ("top", "bottom", "start", "end"):
            getattr(outer, "set_margin_" + side)(10)
        bar = Gtk.Box(spacing=8)
        mark = Gtk.Button(label="Mark")
        mark.set_tooltip_text("Counts from now on are shown against this moment")
        # Through the emitter, not self: a handler on a child that held its
        # window would keep both alive (a cycle through C no collector sees).
        mark.connect("clicked", lambda button: button.get_root().set_mark())
        self.status = _label("", css="dim-label")
        self.status.set_hexpand(True)
        bar.append(mark)
        bar.append(self.status)
        outer.append(bar)

        self.summary = Gtk.Grid(column_spacing=16, row_spacing=4)
        outer.append(self.summary)

        self.notebook = Gtk.Notebook()
        self.notebook.set_vexpand(True)
        self.grids = {}
        for table, title in TABLES:
            grid = Gtk.Grid(column_spacing=16, row_spacing=2)
            scroll = Gtk.ScrolledWindow()
            scroll.set_child(grid)
            # The notebook makes the tab's label itself: with GTK 4.8 and
            # PyGObject 3.42 a tab label given to append_page is never
            # freed, even in plain PyGObject (three labels, with their
            # shortcut controllers, stayed behind per window).
            self.notebook.append_page(scroll, None)
            self.notebook.set_tab_label_text(scroll, title)
            self.grids[table] = grid
        outer.append(self.notebook)
        self.set_child(outer)

        self.refresh()
        self.timer = GLib.timeout_add_seconds(1, self._tick)

    def _tick(self):
        if self._destroyed():
            self._end()
            self.timer = 0
            return GLib.SOURCE_REMOVE
        self.refresh()
        return GLib.SOURCE_CONTINUE

    def _destroyed(self):
        # gtk_window_destroy without a close request (window.destroy()):
        # no signal says so while Python holds the window, but it has left
        # GTK's toplevels.
        return self not in Gtk.Window.list_toplevels()

    def _end(self):
        global _window
        if self.timer:
            GLib.source_remove(self.timer)
            self.timer = 0
        self.take = None
        if _window is self:
            _window = None

    def do_close_request(self):
        self._end()
        return False  # GTK destroys the window

    def set_mark(self):
        self.mark = {}
        for table, _ in TABLES:
            for name, site, n, _ in self.rows[table]:
                self.mark[(table, name, site)] = n
        self.refresh()

    def refresh(self):
        if self.take is None:
            return
        census = self.take()
        self.refreshes += 1
        _clear(self.summary)
        seen = set()
        for r, (table, title) in enumerate(TABLES):
            rows = []
            for name, site, n in census[table]:
                key = (table, name, site)
                seen.add(key)
                self._push(key, n)
                delta = n - self.mark.get(key, 0) if self.mark is not None else 0
                rows.append([name, site, n, delta])
            if self.mark is not None:  # rows gone since the mark
                for key, was in self.mark.items():
                    if key[0] == table and key not in seen:
                        rows.append([key[1], key[2], 0, -was])
            rows.sort(key=lambda row: (-row[2], row[0], row[1]))
            self.rows[table] = rows
            total = sum(row[2] for row in rows)
            self._push((table,), total)
            self._fill(table, rows)
            self._summary_row(r, title, total, sum(row[3] for row in rows))
        for key in list(self.history):  # forget rows long gone
            if len(key) == 3 and key not in seen and key not in (self.mark or {}):
                del self.history[key]
        mark = "" if self.mark is None else "; changes are since the mark"
        self.status.set_text("at %.1f s, %d freed callbacks in quarantine%s" % (census["at"], census["quarantined"], mark))

    def _push(self, key, n):
        h = self.history.setdefault(key, [])
        h.append(n)
        del h[:-HISTORY]

    def _summary_row(self, r, title, total, delta):
        g = self.summary
        g.attach(_label(title), 0, r, 1, 1)
        g.attach(_label(str(total), 1.0), 1, r, 1, 1)
        g.attach(_label(self._delta(delta), 1.0, markup=True), 2, r, 1, 1)
        g.attach(Sparkline(self.history[(TABLES[r][0],)]), 3, r, 1, 1)

    def _delta(self, d):
        if self.mark is None:
            return ""
        if d > 0:
            return '<span foreground="#c01c28">+%d</span>' % d
        return "%+d" % d if d else "0"

    def _fill(self, table, rows):
        grid = self.grids[table]
        _clear(grid)
        heads = ["count", "since mark", "last minute", "name", "made at" if table == "callbacks" else ""]
        for c, h in enumerate(heads):
            grid.attach(_label("<b>%s</b>" % h, markup=True), c, 0, 1, 1)
        for i, (name, site, n, delta) in enumerate(rows[:MAX_ROWS], start=1):
            grid.attach(_label(str(n), 1.0), 0, i, 1, 1)
            grid.attach(_label(self._delta(delta), 1.0, markup=True), 1, i, 1, 1)
            grid.attach(Sparkline(self.history.get((table, name, site), [])), 2, i, 1, 1)
            grid.attach(_label(name), 3, i, 1, 1)
            grid.attach(_label(site, css="dim-label"), 4, i, 1, 1)
        if len(rows) > MAX_ROWS:
            rest = rows[MAX_ROWS:]
            grid.attach(_label("… %d more rows, %d objects" % (len(rest), sum(r[2] for r in rest))), 3, MAX_ROWS + 1, 2, 1)


def show(take, parent=None):
    """Opens the census window, or raises the one already open."""
    global _window
    if _window is not None and _window._destroyed():
        _window._end()
    if _window is None:
        _window = CensusWindow(take)
    if parent is not None:
        _window.set_transient_for(parent)
    _window.present()
    return _window


def close():
    """Closes the census window if one is open."""
    if _window is not None:
        _window.close()
