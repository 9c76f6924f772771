# duet's reload banner: while the last reload of some file failed, each
# visible window shows the error over its content.
#
# The banner is a Gtk.Overlay put between the window and its child only
# while an error shows, and taken out when the file is fixed: the window's
# child is the app's again, as it was. Meanwhile window.get_child() is the
# overlay (named "duet-reload-banner"), whose child is the app's. The
# banner itself takes no input (can_target off): what is under it can be
# clicked through it.
from gi.repository import GLib, Gtk, Pango

OVERLAY = "duet-reload-banner"
BOX = "duet-reload-banner-box"

_CSS = b"""
.duet-reload-banner {
  background-color: rgba(165, 29, 45, 0.92);
  color: white;
  padding: 4px 10px;
  font-size: smaller;
}
"""
_providers = {}


def _style(widget):
    display = widget.get_display()
    if display is None or display in _providers:
        return
    p = Gtk.CssProvider()
    p.load_from_data(_CSS)
    Gtk.StyleContext.add_provider_for_display(display, p, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION + 1)
    _providers[display] = p


def _box(overlay):
    w = overlay.get_first_child()
    while w is not None:
        if w.get_name() == BOX:
            return w
        w = w.get_next_sibling()
    return None


def _fill(box, lines):
    while box.get_first_child() is not None:
        box.remove(box.get_first_child())
    for line in lines:
        label = Gtk.Label(label=line, xalign=0, ellipsize=Pango.EllipsizeMode.END, tooltip_text=line)
        box.append(label)


def _show(win, lines):
    child = win.get_child()
    if child is not None and child.get_name() == OVERLAY:
        _fill(_box(child), lines)
        return
    if not win.get_visible():
        return
    _style(win)
    overlay = Gtk.Overlay(name=OVERLAY)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, name=BOX,
                  valign=Gtk.Align.START, halign=Gtk.Align.FILL, can_target=False)
    box.add_css_class("duet-reload-banner")
    _fill(box, lines)
    overlay.add_overlay(box)
    if child is not None:
        win.set_child(None)
        overlay.set_child(child)
    win.set_child(overlay)


def _hide(win):
    overlay = win.get_child()
    if overlay is None or overlay.get_name() != OVERLAY:
        return
    child = overlay.get_child()
    overlay.set_child(None)
    win.set_child(child)


# While the banner shows: the lines, and the connection that shows them
# in windows made meanwhile.
_state = {"lines": [], "watch": None}


def _toplevels_changed(model, position, removed, added):
    if added:
        # A window is a toplevel from its construction, shown later: most
        # often in the same callback, so once it returned.
        GLib.idle_add(_again)


def _again():
    if _state["lines"]:
        _apply(_state["lines"])
    return GLib.SOURCE_REMOVE


def update(lines):
    """Shows lines (the failed reloads' errors) in each visible window, and
    in windows shown while they stand, or takes the banners away when there
    are none."""
    _state["lines"] = list(lines)
    model = Gtk.Window.get_toplevels()
    if lines and _state["watch"] is None:
        _state["watch"] = (model, model.connect("items-changed", _toplevels_changed))
    elif not lines and _state["watch"] is not None:
        m, hid = _state["watch"]
        m.disconnect(hid)
        _state["watch"] = None
    _apply(lines)


def _apply(lines):
    for win in Gtk.Window.list_toplevels():
        if not isinstance(win, Gtk.Window):
            continue
        if lines:
            _show(win, lines)
        else:
            _hide(win)


def text(win):
    """The banner's lines in win, or None: tests."""
    overlay = win.get_child()
    if overlay is None or overlay.get_name() != OVERLAY:
        return None
    box = _box(overlay)
    out = []
    w = box.get_first_child()
    while w is not None:
        out.append(w.get_label())
        w = w.get_next_sibling()
    return out
