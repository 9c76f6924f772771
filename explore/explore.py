# The explorer's eyes and hands: it walks the visible toplevels, lists what
# a user could act on (each with an address that does not depend on memory
# addresses, so it survives a restart), and performs one action through
# GTK's public API. Go chooses; this module only looks and acts, so the
# choice (and its seed) stays on one side.
#
# The walk is done here rather than one crossing per widget from Go: a
# window of a few hundred widgets is then one call.

import json

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import Gio, GLib, Gtk

# Texts typed into entries and text views: short, long, empty, non-ASCII
# (combining marks, right-to-left, astral plane, a NUL-free control char).
TEXTS = [
    "a",
    "hello world",
    "",
    "x" * 4096,
    "héllo wörld ñ",
    "日本語のテキスト",
    "שלום עולם",
    "e\u0301\u0301 🎉👩‍👩‍👧 \U0001F600",
    "line one\nline two\ttab",
    "-1",
    "0",
    "1e309",
]

# Actions on app and window actions a user reaches through menus: quitting
# would end the exploration itself, so it is left out (see the package doc).
SKIPPED_ACTIONS = {"quit"}

_candidates = []
_seen = set()
_reached = set()


def reset():
    _candidates.clear()
    _seen.clear()
    _reached.clear()


def coverage():
    """How many distinct addresses could be acted on, and were."""
    return [len(_seen), len(_reached)]


def _type_name(w):
    return type(w).__gtype__.name


def _label(w):
    """What a user reads on the widget: its label, else its name when the
    program set one, else its accessible role."""
    for getter in ("get_label", "get_title", "get_text"):
        f = getattr(w, getter, None)
        if f is None or isinstance(w, Gtk.Editable) and getter == "get_text":
            continue
        try:
            v = f()
        except TypeError:
            continue
        if isinstance(v, str) and v:
            return v.replace("_", "", 1) if getattr(w, "get_use_underline", lambda: False)() else v
    # A button whose child is a label (or an icon) says what the child says.
    child = w.get_first_child()
    if child is not None and isinstance(w, (Gtk.Button, Gtk.MenuButton)):
        inner = child
        while inner is not None and not isinstance(inner, Gtk.Label):
            inner = inner.get_first_child()
        if inner is not None and inner.get_label():
            return inner.get_label()
        icon = getattr(w, "get_icon_name", lambda: None)()
        if icon:
            return icon
    name = w.get_name()
    if name and name != _type_name(w):
        return name
    try:
        role = w.get_accessible_role()
        return role.value_nick
    except (AttributeError, TypeError):
        return ""


def _segment(w, index):
    label = _label(w)
    seg = "%s#%d" % (_type_name(w), index)
    if label:
        seg += " %r" % _short(label)
    return seg


def _short(s, n=40):
    s = s.replace("\n", " ")
    return s if len(s) <= n else s[: n - 1] + "…"


def _window_name(win):
    title = win.get_title() if hasattr(win, "get_title") else None
    return title if title else _type_name(win)


def _usable(w):
    return w.get_visible() and w.get_child_visible()


def _add(kind, addr, label, window, widget, extra=None):
    _candidates.append((addr, kind, label, window, widget, extra))


def _walk(w, path, window):
    """Lists w's actionable descendants; path is w's address."""
    counts = {}
    child = w.get_first_child()
    while child is not None:
        t = _type_name(child)
        i = counts.get(t, 0)
        counts[t] = i + 1
        if _usable(child):
            addr = path + " > " + _segment(child, i)
            if _consider(child, addr, window):
                _walk(child, addr, window)
        child = child.get_next_sibling()


def _consider(w, addr, window):
    """Adds w's actions when it has any; returns whether to walk inside."""
    sensitive = w.is_sensitive()
    label = _label(w)
    if isinstance(w, Gtk.SpinButton):
        if sensitive:
            _add("set", addr, label, window, w)
        return False
    if isinstance(w, Gtk.Editable):
        if sensitive and w.get_editable():
            _add("type", addr, label, window, w)
        return False
    if isinstance(w, Gtk.TextView):
        if sensitive and w.get_editable():
            _add("type", addr, label, window, w)
        return False
    if isinstance(w, (Gtk.ToggleButton, Gtk.CheckButton, Gtk.Switch)):
        if sensitive:
            _add("toggle", addr, label, window, w)
        return False
    if isinstance(w, Gtk.LinkButton):
        return False  # it opens a browser: outside the program under test
    if isinstance(w, Gtk.Button):
        if sensitive:
            _add("click", addr, label, window, w)
        return False
    if isinstance(w, Gtk.Scale):
        if sensitive:
            _add("set", addr, label, window, w)
        return False
    if isinstance(w, Gtk.DropDown):
        if sensitive and w.get_model() is not None and w.get_model().get_n_items() > 0:
            _add("pick", addr, label, window, w)
        return False
    # A Gtk.Stack's pages are not switched directly: a user switches them
    # only through what the program offers (a StackSwitcher's buttons, which
    # are toggles here, or the program's own buttons); a wizard's stack
    # switched by hand reaches states no user can.
    if isinstance(w, Gtk.Notebook):
        if sensitive and w.get_n_pages() > 1 and w.get_show_tabs():
            _add("page", addr, label, window, w)
        return True
    return True


def _actions(group, prefix, where, window):
    for name in sorted(group.list_actions()):
        if name in SKIPPED_ACTIONS or not group.get_action_enabled(name):
            continue
        ptype = group.get_action_parameter_type(name)
        if ptype is not None and ptype.dup_string() not in ("b", "s", "i"):
            continue  # no valid parameter to make for it (see the package doc)
        state = group.get_action_state(name)
        if ptype is not None and ptype.dup_string() == "s" and state is None:
            continue  # any string is no valid parameter: only a state's own values are known
        _add("activate", where + " > action " + prefix + name, prefix + name, window, group, (name, ptype, state))


def candidates(app):
    """Lists the actions now possible, sorted by address; returns how many,
    with the coverage so far (see coverage)."""
    _candidates.clear()
    windows = [w for w in Gtk.Window.list_toplevels() if w.get_visible()]
    named = sorted(((_window_name(w), _type_name(w)), i, w) for i, w in enumerate(windows))
    seen = {}
    for (title, _), _, win in named:
        n = seen.get(title, 0)
        seen[title] = n + 1
        where = "window %r" % _short(title) if n == 0 else "window %r#%d" % (_short(title), n)
        if not win.is_sensitive():
            continue
        _walk(win, where, title)
        if isinstance(win, Gio.ActionGroup):
            _actions(win, "win.", where, title)
    if app is not None:
        _actions(app, "app.", "application", "")
    _candidates.sort(key=lambda c: (c[0], c[1]))
    _seen.update(c[0] for c in _candidates)
    return [len(_candidates), len(_seen), len(_reached)]


def peek(i):
    """What candidate i is, before it is done: (verb, address, label,
    window, value, input), the value and the input still empty."""
    addr, kind, label, window, _, _ = _candidates[i]
    return (kind, addr, label, window, "", "")


class ReplayMismatch(Exception):
    """A recorded action that cannot be done as recorded here (an item
    position the drop-down no longer has, say)."""


def find(addr, verb):
    """The index of the candidate at addr doing verb, or -1."""
    for i, c in enumerate(_candidates):
        if c[0] == addr and c[1] == verb:
            return i
    return -1


def act(i, r, f):
    """Performs candidate i; r (an integer) and f (a float in [0, 1], or
    -1 and 2 for the extremes) are Go's random choices for the value.
    Returns (verb, address, label, window, value, input): the value in
    words, the input (JSON) what act_as needs to do it again."""
    return _do(i, r, f, None)


def act_as(i, given):
    """Performs candidate i with the input a recorded action gives (its
    JSON, as act returned it): replay draws nothing."""
    return _do(i, 0, 0.0, json.loads(given) if given else {})


def _need(given, key):
    if key not in given:
        raise ReplayMismatch("the recorded action has no %r" % key)
    return given[key]


def _do(i, r, f, given):
    addr, kind, label, window, w, extra = _candidates[i]
    _reached.add(addr)
    value = ""
    inp = {}
    if kind == "click":
        w.emit("clicked")
    elif kind == "toggle":
        # As a click or the space bar, not set_active, so that the active
        # button of a radio group stays on, as it does for a user. A toggle
        # button is clicked: its activate flips it only when its pressed
        # look ends, 250 ms later, so that what the action read (and a
        # replay met) depended on the machine's speed.
        if isinstance(w, Gtk.ToggleButton):
            w.emit("clicked")
        else:
            w.activate()
        value = "on" if w.get_active() else "off"
    elif kind == "type":
        if given is None:
            text, enter = TEXTS[r % len(TEXTS)], bool(r % 2)
        else:
            text, enter = _need(given, "text"), bool(given.get("enter", False))
        if isinstance(w, Gtk.TextView):
            buf = w.get_buffer()
            buf.set_text(text, -1)
            got = buf.get_text(buf.get_start_iter(), buf.get_end_iter(), True)
            inp = {"text": text}
        else:
            w.set_text(text)
            got = w.get_text()  # what the entry took (its max length, say)
            if enter:
                w.activate()  # Enter, as a user ends typing
            inp = {"text": text, "enter": enter}
        value = repr(_short(got))
    elif kind == "set":
        if given is None:
            adj = w.get_adjustment()
            lo, hi = adj.get_lower(), adj.get_upper() - adj.get_page_size()
            v = lo if f < 0 else hi if f > 1 else lo + f * (hi - lo)
        else:
            v = float(_need(given, "value"))
        w.set_value(v)
        value = "%g" % w.get_value()
        inp = {"value": v}
    elif kind == "pick":
        model = w.get_model()
        n = model.get_n_items()
        pos = r % n if given is None else int(_need(given, "position"))
        if not 0 <= pos < n:
            raise ReplayMismatch("item %d of %d" % (pos, n))
        w.set_selected(pos)
        item = model.get_item(pos)
        value = item.get_string() if isinstance(item, Gtk.StringObject) else "item %d" % pos
        inp = {"position": pos}
    elif kind == "page":
        n = w.get_n_pages()
        pos = r % n if given is None else int(_need(given, "page"))
        if not 0 <= pos < n:
            raise ReplayMismatch("page %d of %d" % (pos, n))
        w.set_current_page(pos)
        page = w.get_nth_page(pos)
        value = w.get_tab_label_text(page) or "page %d" % pos
        inp = {"page": pos}
    elif kind == "activate":
        name, ptype, state = extra
        param = None
        if ptype is not None:
            t = ptype.dup_string()
            if given is not None:
                try:
                    param = GLib.Variant.parse(ptype, _need(given, "param"), None, None)
                except GLib.Error as e:
                    raise ReplayMismatch("parameter %r: %s" % (given["param"], e.message))
            elif t == "b":
                param = GLib.Variant("b", bool(r % 2))
            elif t == "i":
                param = GLib.Variant("i", [0, 1, -1, 2**31 - 1, -(2**31)][r % 5])
            else:
                param = state  # the state's own value: known to be valid
            value = param.print_(False)
            inp = {"param": param.print_(True)}
        w.activate_action(name, param)
    return (kind, addr, label, window, value, json.dumps(inp, ensure_ascii=False) if inp else "")


def forget():
    """Drops the widgets the last listing held, so that the explorer keeps
    nothing alive between its steps (a window the app closes must go)."""
    _candidates.clear()
