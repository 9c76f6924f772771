# The explorer's eyes and hands: it walks the visible toplevels, lists what
# a user could act on (each with an address that does not depend on memory
# addresses, so it survives a restart), and performs one action through
# GTK's public API. Go chooses: it draws the candidate and the random
# numbers its input is made of (plan), so the choice (and its seed) stays
# on one side; this module looks, and acts from an input, drawn or
# recorded alike (act_as).
#
# The walk is done here rather than one crossing per widget from Go: a
# window of a few hundred widgets is then one call.

import json
from collections import namedtuple

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import Gio, GLib, GObject, Gtk

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

# A candidate: its address, its verb, what it reads, its window's title, the
# widget (or action group, or window) it acts on, what the verb needs of it
# besides, and its structural key (see _structure).
Candidate = namedtuple("Candidate", "addr kind label window widget extra key")

_candidates = []
# Each listed window's key by its address ("window 'w'"): its GType and its
# index among the visible windows of that type in the order they were made
# ("GtkWindow#1"), what stays of it when its title changes.
_window_keys = {}
_seen = set()  # structural keys (see _structure), so that a label's changes
_reached = set()  # do not count one widget again


def reset():
    _candidates.clear()
    _seen.clear()
    _reached.clear()


# The GLib domains whose warnings and criticals PyGObject turns into Python
# warnings (its g_log handlers for GLib, GLib-GObject and GThread call
# warnings.warn with the message alone, its domain and level lost); GLib-GIO
# with them, whatever the PyGObject. While a run goes, a handler of the
# explorer's own, ahead of PyGObject's (GLib takes a domain's newest
# handler first), hands them to GLib's default handler instead, which
# writes them as any other domain's (the records the explorer makes
# findings of, domain and level named). A fatal message (G_DEBUG=fatal-
# criticals) goes past every handler (none takes the fatal flag) to the
# default one, as before.
_GLIB_DOMAINS = ("GLib", "GLib-GObject", "GLib-GIO", "GThread")
_log_handlers = []


def _to_default_handler(domain, level, message, *unused):
    try:
        GLib.log_default_handler(domain, level, message)
    except Exception:  # a log handler must not raise into whatever logged
        pass


def watch_logs():
    unwatch_logs()
    levels = GLib.LogLevelFlags.LEVEL_WARNING | GLib.LogLevelFlags.LEVEL_CRITICAL
    for domain in _GLIB_DOMAINS:
        _log_handlers.append((domain, GLib.log_set_handler(domain, levels, _to_default_handler)))


def unwatch_logs():
    """Takes the explorer's handlers out: PyGObject's are the domains'
    handlers again."""
    while _log_handlers:
        domain, handler = _log_handlers.pop()
        GLib.log_remove_handler(domain, handler)


def coverage():
    """How many distinct widgets and actions could be acted on, and were,
    by their structural key (see _structure)."""
    return [len(_seen), len(_reached)]


def _gid(obj):
    """The GObject's address: PyGObject hashes a wrapper by it, through
    GObject.Object's __hash__, which a program's class that defines __eq__
    (and so no __hash__ of its own) hides from hash()."""
    return GObject.Object.__hash__(obj)


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
    # A list box's row says what the first label in it says.
    if isinstance(w, Gtk.ListBoxRow):
        text = _text_inside(w)
        if text:
            return text
    name = w.get_name()
    if name and name != _type_name(w):
        return name
    try:
        role = w.get_accessible_role()
        return role.value_nick
    except (AttributeError, TypeError):
        return ""


def _text_inside(w):
    """The text of the first label in w, depth first; "" for none."""
    child = w.get_first_child()
    while child is not None:
        if isinstance(child, Gtk.Label) and child.get_label():
            return child.get_label()
        text = _text_inside(child)
        if text:
            return text
        child = child.get_next_sibling()
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


def _segments(addr):
    """Splits an address into its segments, each (segment, segment without
    its label): a label is a literal as repr wrote it ("GtkButton#1 'OK'"),
    and a " > " inside one does not split."""
    segs, start, bare = [], 0, []
    i, n = 0, len(addr)
    while i < n:
        c = addr[i]
        if c in "'\"" and (i == 0 or addr[i - 1] == " "):
            k = i + 1
            while k < n and addr[k] != c:
                k += 2 if addr[k] == "\\" else 1
            i = k + 1
            continue
        if addr.startswith(" > ", i):
            segs.append((addr[start:i], "".join(bare).rstrip()))
            bare, start = [], i + 3
            i += 3
            continue
        bare.append(c)
        i += 1
    segs.append((addr[start:], "".join(bare).rstrip()))
    return segs


def _structure(addr):
    """An address's structural key: the window's segment as it is (its
    title with it), then each widget's type and index without what it
    reads, so that a button whose label counts its clicks stays one widget
    ("window 'w' > GtkBox#0 > GtkButton#1")."""
    segs = _segments(addr)
    return " > ".join([segs[0][0]] + [bare for _, bare in segs[1:]])


def _add(kind, addr, label, window, widget, extra=None):
    _candidates.append(Candidate(addr, kind, label, window, widget, extra, _structure(addr)))


def _children(w):
    """w's children, each with its index among its siblings of its type
    (the address's "GtkButton#1")."""
    counts = {}
    child = w.get_first_child()
    while child is not None:
        t = _type_name(child)
        i = counts.get(t, 0)
        counts[t] = i + 1
        yield child, i
        child = child.get_next_sibling()


def _walk(w, path, window):
    """Lists w's actionable descendants; path is w's address."""
    for child, i in _children(w):
        if _usable(child):
            addr = path + " > " + _segment(child, i)
            if _consider(child, addr, window):
                _walk(child, addr, window)


def _consider(w, addr, window):
    """Adds w's actions when it has any; returns whether to walk inside."""
    if isinstance(w, Gtk.WindowControls):
        # The title bar's close, minimize and maximize buttons: closing is the
        # "close" verb's, with its rules (never the last window).
        return False
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
    # A list box is addressed itself, its row by its index in the input:
    # one candidate per verb, however long the list (a thousand rows would
    # otherwise be most of the choices). The widgets in its rows are walked
    # as anywhere (a list box's rows are its own, not recycled).
    if isinstance(w, Gtk.ListBox):
        if sensitive:
            if _box_rows(w, "select"):
                _add("select", addr, label, window, w)
            if _box_rows(w, "open"):
                _add("open", addr, label, window, w)
        return True
    # A list view's, a grid view's or a column view's items are addressed by
    # their position in the view's model: its row widgets are recycled (the
    # one at index 3 shows another item once the list scrolls), and only
    # the rows on screen exist. The inner list of a column view is its own.
    if isinstance(w, (Gtk.ListView, Gtk.GridView, Gtk.ColumnView)) and not isinstance(w.get_parent(), Gtk.ColumnView):
        model = w.get_model()
        if sensitive and model is not None and model.get_n_items() > 0:
            if not isinstance(model, Gtk.NoSelection):
                _add("select", addr, label, window, w)
            _add("open", addr, label, window, w)
        return True
    return True


def _box_rows(box, verb):
    """The indexes of a list box's rows a user can select (verb "select")
    or activate ("open") now."""
    if verb == "select" and box.get_selection_mode() == Gtk.SelectionMode.NONE:
        return []
    rows = []
    row = box.get_first_child()
    while row is not None:
        if isinstance(row, Gtk.ListBoxRow) and _box_row_ok(row, verb):
            rows.append(row.get_index())
        row = row.get_next_sibling()
    return rows


def _box_row_ok(row, verb):
    if not (_usable(row) and row.is_sensitive()):
        return False
    return row.get_selectable() if verb == "select" else row.get_activatable()


def _actions(group, prefix, where, window):
    for name in sorted(group.list_actions()):
        if name in SKIPPED_ACTIONS or not group.get_action_enabled(name):
            continue
        ptype = group.get_action_parameter_type(name)
        state = group.get_action_state(name)
        valid = _valid_params(group, name, ptype, state) if ptype is not None else None
        if ptype is not None and valid is None and ptype.dup_string() not in ("b", "i"):
            # No valid parameter to make for it (see the package doc): any
            # string is none, only a state's own values are known.
            continue
        _add("activate", where + " > action " + prefix + name, prefix + name, window, group, (name, ptype, state, valid))


def _valid_params(group, name, ptype, state):
    """The parameters a stateful action is known to take, when its state
    says: a list of them (its state hint's enumeration, or the state itself:
    a radio's other values are in the program's menus, not in the action),
    ("range", lo, hi) for a state hint's range, or None when nothing but
    the parameter's type is known. GLib checks neither a hint nor a radio's
    values: a parameter outside them becomes the state, and the program's
    handler meets what no menu of its own could give it."""
    t = ptype.dup_string()
    hint = group.get_action_state_hint(name)
    if hint is not None:
        ht = hint.get_type_string()
        if ht == "a" + t and hint.n_children() > 0:
            return [hint.get_child_value(k) for k in range(hint.n_children())]
        if ht == "(%s%s)" % (t, t):
            return ("range", hint.get_child_value(0), hint.get_child_value(1))
    if state is not None and state.get_type_string() == t:
        if t == "b":
            return [GLib.Variant("b", False), GLib.Variant("b", True)]
        return [state]
    return None


def _in_range(t, lo, hi, f):
    """A parameter of type t within [lo, hi]: an extreme for f < 0 or f > 1,
    else the point f of the way (numbers only; the extremes otherwise)."""
    if f < 0:
        return lo
    if f > 1 or t not in "ynqiuxtd":
        return hi
    a, b = lo.unpack(), hi.unpack()
    v = a + f * (b - a)
    return GLib.Variant(t, v if t == "d" else min(max(int(round(v)), a), b))


def _closable(win, usable, app):
    """Whether closing win leaves the program running, with a window to
    explore: not the last visible, sensitive window (of the application,
    when win is one of its windows: a Gtk.Application ends with its last
    window), and not a window without a close button."""
    if not win.get_deletable():
        return False
    others = [w for w in usable if w is not win]
    if isinstance(app, Gtk.Application) and win.get_application() is app:
        others = [w for w in others if w.get_application() is app]
    return bool(others)


def _grabs(windows):
    """The window each window group's input goes to, for the groups that
    have a visible modal window: GTK 4 shows a modal window with a grab on
    its window group (the default group holds every window not put in one
    of its own, transient or not), and events for the group's other
    windows go nowhere. Of several modal windows in a group, the last made
    (list_toplevels' order: a dialog opened from a dialog comes after it),
    as the grab last added is the one that takes the input."""
    grabs = {}
    for w in windows:
        if w.get_modal():
            grabs[_gid(w.get_group())] = w
    return grabs


def _blocked(win, grabs):
    g = grabs.get(_gid(win.get_group()))
    return g is not None and g is not win


def _window_key(c):
    """The key of candidate c's window ("" for the application's actions)."""
    return _window_keys.get(_segments(c.addr)[0][0], "")


def _below_window(addr):
    """An address's structural key without its window's segment."""
    return " > ".join(bare for _, bare in _segments(addr)[1:])


def candidates(app):
    """Lists the actions now possible, sorted by address; returns how many,
    with the coverage so far (see coverage)."""
    _candidates.clear()
    _window_keys.clear()
    windows = [w for w in Gtk.Window.list_toplevels() if w.get_visible()]
    # list_toplevels lists the windows in the order they were made.
    by_type, keys = {}, {}
    for w in windows:
        t = _type_name(w)
        keys[_gid(w)] = "%s#%d" % (t, by_type.get(t, 0))
        by_type[t] = by_type.get(t, 0) + 1
    usable = [w for w in windows if w.is_sensitive()]
    grabs = _grabs(windows)
    named = sorted(((_window_name(w), _type_name(w)), i, w) for i, w in enumerate(windows))
    seen = {}
    for (title, _), _, win in named:
        n = seen.get(title, 0)
        seen[title] = n + 1
        where = "window %r" % _short(title) if n == 0 else "window %r#%d" % (_short(title), n)
        _window_keys[where] = keys[_gid(win)]
        if not win.is_sensitive():
            continue
        if _blocked(win, grabs):
            # Behind a modal window, nothing takes a user's input: the
            # window is not explored, nor closed (its title bar is as
            # dead); it still counts as one the program has (_closable).
            continue
        _walk(win, where, title)
        if isinstance(win, Gio.ActionGroup):
            _actions(win, "win.", where, title)
        if _closable(win, usable, app):
            _add("close", where, title, title, win)
    # The application's actions are a user's through its windows' menus
    # and shortcuts: not while a modal window of another's holds the input
    # (one of the application's own still takes its shortcuts).
    modal_elsewhere = any(not (isinstance(app, Gtk.Application) and g.get_application() is app) for g in grabs.values())
    # An application that has ended (its last window closed, quit) is no
    # longer registered: asking it for its actions is a GLib-GIO critical
    # of the explorer's own.
    if app is not None and not modal_elsewhere and app.get_is_registered():
        _actions(app, "app.", "application", "")
    _candidates.sort(key=lambda c: (c.addr, c.kind))
    _seen.update(c.key for c in _candidates)
    return [len(_candidates), len(_seen), len(_reached)]


class ReplayMismatch(Exception):
    """A recorded action that cannot be done as recorded here (an item
    position the drop-down no longer has, say)."""


def find(addr, verb, window_key="", strict=False):
    """The index of the candidate at addr doing verb, or -1. When none has
    that very address, the one candidate with its structural key and verb
    (a label that changed: "clicked 3 times" for "clicked 1 time"); then,
    given the recorded window's key (see _window_keys), the one in the
    window of that key with the same structure below the window (a window
    whose title changed: "notes.txt" for "Untitled"); -1 when there are
    none or several. A window that closed (by itself, say) has no key: an
    action recorded in it finds nothing. strict (Options.ReplayStrict)
    takes that very address only: a fallback may act on another widget,
    the one the key names after the UI changed."""
    for i, c in enumerate(_candidates):
        if c.addr == addr and c.kind == verb:
            return i
    if strict:
        return -1
    key = _structure(addr)
    same = [i for i, c in enumerate(_candidates) if c.key == key and c.kind == verb]
    if len(same) == 1:
        return same[0]
    if same or not window_key or addr.startswith("application"):
        return -1
    below = _below_window(addr)
    same = [i for i, c in enumerate(_candidates)
            if c.kind == verb and _window_key(c) == window_key and _below_window(c.addr) == below]
    return same[0] if len(same) == 1 else -1


# The steps of an action: plan chooses its input (from Go's random
# numbers), peek describes it before it is done, act_as does it. A replay
# takes the recorded input to peek and act_as: an action is done the one
# way, from its input, whether that was just drawn or recorded.


def plan(i, r, f):
    """The input for candidate i, as JSON ("" for none): r (an integer) and
    f (a float in [0, 1], or -1 and 2 for the extremes) are Go's random
    choices for it."""
    inp = _plan(_candidates[i], r, f)
    return json.dumps(inp, ensure_ascii=False) if inp else ""


def _plan(c, r, f):
    kind, w = c.kind, c.widget
    if kind == "type":
        text = TEXTS[r % len(TEXTS)]
        if isinstance(w, Gtk.TextView):
            return {"text": text}
        return {"text": text, "enter": bool(r % 2)}
    if kind == "set":
        adj = w.get_adjustment()
        lo, hi = adj.get_lower(), adj.get_upper() - adj.get_page_size()
        return {"value": lo if f < 0 else hi if f > 1 else lo + f * (hi - lo)}
    if kind == "pick":
        return {"position": r % w.get_model().get_n_items()}
    if kind == "page":
        return {"page": r % w.get_n_pages()}
    if kind in ("select", "open"):
        if isinstance(w, Gtk.ListBox):
            rows = _box_rows(w, kind)
            return {"position": rows[r % len(rows)]}
        return {"position": r % w.get_model().get_n_items()}
    if kind == "activate":
        name, ptype, state, valid = c.extra
        if ptype is None:
            return {}
        t = ptype.dup_string()
        if isinstance(valid, tuple):
            param = _in_range(t, valid[1], valid[2], f)
        elif valid:
            param = valid[r % len(valid)]  # known to be valid
        elif t == "b":
            param = GLib.Variant("b", bool(r % 2))
        else:  # "i", with no state to say which are valid: the extremes too
            param = GLib.Variant("i", [0, 1, -1, 2**31 - 1, -(2**31)][r % 5])
        return {"param": param.print_(True)}
    return {}


def peek(i, given):
    """What candidate i is, before it is done with the input given (JSON,
    as plan or a recorded action has it): (verb, address, label, window,
    value, input, window key), the value what is known of it before (what will be
    typed, the item to pick), the input the one given."""
    c = _candidates[i]
    try:
        value = _foresee(c, json.loads(given) if given else {})
    except Exception:  # only words: act_as meets the trouble, if any
        value = ""
    return (c.kind, c.addr, c.label, c.window, value, given, _window_key(c))


def _foresee(c, inp):
    kind, w = c.kind, c.widget
    if kind == "type" and "text" in inp:
        return repr(_short(inp["text"]))
    if kind == "set" and "value" in inp:
        return "%g" % float(inp["value"])
    if kind == "pick" and "position" in inp:
        return _item_words(w.get_model(), int(inp["position"]))
    if kind == "page" and "page" in inp:
        page = w.get_nth_page(int(inp["page"]))
        return (w.get_tab_label_text(page) or "page %d" % inp["page"]) if page is not None else ""
    if kind in ("select", "open") and "position" in inp:
        return _row_words(w, int(inp["position"]))
    if kind == "activate" and "param" in inp:
        return GLib.Variant.parse(c.extra[1], inp["param"], None, None).print_(False)
    return ""


def _item_words(model, pos):
    """What item pos of a list model reads: a string list's string (a tree
    list's row: its item's), else its position."""
    if not 0 <= pos < model.get_n_items():
        return ""
    item = model.get_item(pos)
    if isinstance(item, Gtk.TreeListRow):
        item = item.get_item()
    return item.get_string() if isinstance(item, Gtk.StringObject) else "item %d" % pos


def _row_words(w, pos):
    if isinstance(w, Gtk.ListBox):
        row = w.get_row_at_index(pos)
        return (_label(row) if row is not None else "") or "row %d" % pos
    return _item_words(w.get_model(), pos)


def act_as(i, given):
    """Performs candidate i with the input given (JSON, as plan made it or
    a recorded action has it). Returns (verb, address, label, window, value,
    input): the value in words (what the widget took), the input the one
    given."""
    c = _candidates[i]
    win = c.widget if c.kind == "close" else c.widget.get_root() if isinstance(c.widget, Gtk.Widget) else None
    if isinstance(win, Gtk.Window) and not win.get_visible():
        # Gone since the listing (it closed by itself while what ran since
        # ran): the action is not done on a window no user sees.
        raise ReplayMismatch("the window %r closed" % c.window)
    _reached.add(c.key)
    value = _do(c, json.loads(given) if given else {})
    return (c.kind, c.addr, c.label, c.window, value, given, _window_key(c))


def _need(given, key):
    if key not in given:
        raise ReplayMismatch("the recorded action has no %r" % key)
    return given[key]


def _do(c, given):
    """Does candidate c with its input given (a dict); returns the value in
    words."""
    kind, w = c.kind, c.widget
    if kind == "click":
        w.emit("clicked")
        return ""
    if kind == "toggle":
        # As a click or the space bar, not set_active, so that the active
        # button of a radio group stays on, as it does for a user. A toggle
        # button is clicked: its activate flips it only when its pressed
        # look ends, 250 ms later, so that what the action read (and a
        # replay met) depended on the machine's speed. A switch's click
        # and activate flip it at the end of the knob's animation, for the
        # same trouble: it is flipped as that end does, with set_active
        # (which emits state-set, as the animation's end does; a switch is
        # in no group).
        if isinstance(w, Gtk.ToggleButton):
            w.emit("clicked")
        elif isinstance(w, Gtk.Switch):
            w.set_active(not w.get_active())
        else:
            w.activate()
        return "on" if w.get_active() else "off"
    if kind == "type":
        text = _need(given, "text")
        if isinstance(w, Gtk.TextView):
            buf = w.get_buffer()
            buf.set_text(text, -1)
            got = buf.get_text(buf.get_start_iter(), buf.get_end_iter(), True)
        else:
            w.set_text(text)
            got = w.get_text()  # what the entry took (its max length, say)
            if given.get("enter", False):
                w.activate()  # Enter, as a user ends typing
        return repr(_short(got))
    if kind == "set":
        w.set_value(float(_need(given, "value")))
        return "%g" % w.get_value()
    if kind == "pick":
        model = w.get_model()
        n = model.get_n_items()
        pos = int(_need(given, "position"))
        if not 0 <= pos < n:
            raise ReplayMismatch("item %d of %d" % (pos, n))
        w.set_selected(pos)
        return _item_words(model, pos)
    if kind == "page":
        n = w.get_n_pages()
        pos = int(_need(given, "page"))
        if not 0 <= pos < n:
            raise ReplayMismatch("page %d of %d" % (pos, n))
        w.set_current_page(pos)
        return w.get_tab_label_text(w.get_nth_page(pos)) or "page %d" % pos
    if kind in ("select", "open"):
        pos = int(_need(given, "position"))
        if isinstance(w, Gtk.ListBox):
            return _do_box_row(w, kind, pos)
        return _do_item(w, kind, pos)
    if kind == "close":
        # As the title bar's close button: close-request first, whose
        # handler may refuse.
        w.close()
        return "refused" if w.get_visible() else ""
    if kind == "activate":
        name, ptype = c.extra[0], c.extra[1]
        param = None
        if ptype is not None:
            try:
                param = GLib.Variant.parse(ptype, _need(given, "param"), None, None)
            except GLib.Error as e:
                raise ReplayMismatch("parameter %r: %s" % (given["param"], e.message))
        words = param.print_(False) if param is not None else ""
        # Through Gio.ActionGroup's own method: on a window, w.activate_action
        # is Gtk.Widget's, which wants the "win." prefix and, given the bare
        # name, did nothing at all.
        try:
            Gio.ActionGroup.activate_action(w, name, param)
        except (TypeError, ValueError, OverflowError, GLib.Error) as e:
            # The call itself refused the parameter (GLib or PyGObject
            # did: a program's handlers' exceptions never come back through
            # it, they are reported as they happen): what a user's menu
            # would not have offered, no finding.
            return "%s (refused: %s)" % (words, e)
        return words
    raise ReplayMismatch("no such verb %r" % kind)


def _do_box_row(box, kind, pos):
    row = box.get_row_at_index(pos)
    if row is None or not _box_row_ok(row, kind) or kind == "select" and box.get_selection_mode() == Gtk.SelectionMode.NONE:
        n = len(_box_rows(box, kind))
        raise ReplayMismatch("row %d is not one of the %d rows to %s" % (pos, n, kind))
    words = _row_words(box, pos)
    if kind == "select":
        # What a click (or the arrow keys) selects: the row alone, in a
        # list box that selects several too (a click without Ctrl).
        if box.get_selection_mode() == Gtk.SelectionMode.MULTIPLE:
            box.unselect_all()
        box.select_row(row)
    else:
        # Enter on the row, a double click (a single click, with
        # activate-on-single-click): GTK's own path from the row's activate
        # signal, which selects the row (if it can be) and emits the list
        # box's row-activated.
        row.activate()
    return words


def _do_item(view, kind, pos):
    model = view.get_model()
    n = model.get_n_items() if model is not None else 0
    if not 0 <= pos < n:
        raise ReplayMismatch("item %d of %d" % (pos, n))
    words = _item_words(model, pos)
    if kind == "select":
        model.select_item(pos, True)  # a click: this item alone
    else:
        # A double click, Enter, or a single click with
        # single-click-activate: GTK emits the view's activate with the
        # position, whatever the selection model.
        view.emit("activate", pos)
    return words


def widget_at(pointer):
    """Where the widget whose GObject is at pointer ("0x55d5c1e0", as GTK's
    messages name it) is: its window's name, then each widget's type and
    index among its siblings of that type, internal children (a
    scrollbar's trough) included, and its label if it has one; "" when no
    window holds it. Read-only: a GTK warning may come in the middle of a
    frame."""
    try:
        want = int(pointer, 16)
    except ValueError:
        return ""

    def walk(w, path):
        if _gid(w) == want:
            return path
        for child, i in _children(w):
            found = walk(child, path + " > " + _segment(child, i))
            if found:
                return found
        return ""

    for win in Gtk.Window.list_toplevels():
        found = walk(win, "window %r" % _window_name(win))
        if found:
            return found
    return ""


def py_census():
    """What the program's Python holds, for the leak check: the GObjects
    Python has a wrapper of, by GType (a list of Gtk.Label the program
    keeps), and the instances of the program's own Python classes, by
    class (those of modules loaded from its files, not Python's library,
    site packages, PyGObject or duet), each as [table, name, count]. The
    collector's objects only: run after a collection, so that what remains
    is held. An object it cannot read (a weak proxy, a __class__ that
    raises) is left out, never the census."""
    import gc
    import sys

    mine = {}  # module name -> whether it is the program's

    def programs(modname):
        ok = mine.get(modname)
        if ok is None:
            f = getattr(sys.modules.get(modname), "__file__", None)
            ok = (isinstance(f, str) and f != "" and not f.startswith("<")
                  and not _in_library(f) and not modname.startswith(("gi.", "duet")))
            mine[modname] = ok
        return ok

    counts = {}
    gobject = GObject.Object
    for o in gc.get_objects():
        try:
            t = type(o)  # not o.__class__, which a proxy forwards
            if issubclass(t, gobject):
                key = ("pygobjects", t.__gtype__.name)
            else:
                modname = t.__module__
                if not isinstance(modname, str) or not programs(modname):
                    continue
                key = ("pyinstances", modname + "." + t.__qualname__)
        except Exception:
            continue
        counts[key] = counts.get(key, 0) + 1
    return [[table, name, n] for (table, name), n in counts.items()]


_libdirs = None


def _in_library(path):
    """Whether the file is Python's own library's or an installed package's
    (site packages, the user's included), by whole path components."""
    global _libdirs
    if _libdirs is None:
        import os
        import site
        import sysconfig
        dirs = set()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            dirs.add(sysconfig.get_paths().get(key) or "")
        try:
            dirs.update(site.getsitepackages())
        except Exception:
            pass
        try:
            dirs.add(site.getusersitepackages())
        except Exception:
            pass
        _libdirs = tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)
    import os
    real = os.path.realpath(path)
    return any(real.startswith(d) for d in _libdirs)


def forget():
    """Drops the widgets the last listing held, so that the explorer keeps
    nothing alive between its steps (a window the app closes must go)."""
    _candidates.clear()
