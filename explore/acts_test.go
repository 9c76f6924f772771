package explore_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// position reads a "select" or "open" action's recorded position.
func position(t *testing.T, a explore.Action) int {
	t.Helper()
	var in struct{ Position *int }
	require.NoError(t, json.Unmarshal(a.Input, &in), "%s: %s", a, a.Input)
	require.NotNil(t, in.Position, "%s: %s", a, a.Input)
	return *in.Position
}

// Lists: a list box (its rows selected and activated), a list view, a grid
// view and a column view (their items selected through the selection model
// and activated as GTK does), and a list view whose model selects nothing.
const lists = `
def factory():
    f = Gtk.SignalListItemFactory()
    f.connect("setup", lambda f, item: item.set_child(Gtk.Label()))
    f.connect("bind", lambda f, item: item.get_child().set_label(item.get_item().get_string()))
    return f
words = Gtk.StringList.new(["alpha", "beta", "gamma", "delta"])
lb = Gtk.ListBox()
for s in ("one", "two", "three"):
    lb.append(Gtk.Label(label=s))
lb.connect("row-selected", lambda b, row: row is not None and on_row("selected", row.get_index()))
lb.connect("row-activated", lambda b, row: on_row("activated", row.get_index()))
box.append(lb)
# A list box that neither selects nor activates: nothing to do there.
inert = Gtk.ListBox(selection_mode=Gtk.SelectionMode.NONE)
inert.append(Gtk.Label(label="inert"))
inert.get_row_at_index(0).set_activatable(False)
box.append(inert)
lv = Gtk.ListView(model=Gtk.SingleSelection(model=words), factory=factory())
gv = Gtk.GridView(model=Gtk.MultiSelection(model=words), factory=factory())
cv = Gtk.ColumnView(model=Gtk.SingleSelection(model=words))
cv.append_column(Gtk.ColumnViewColumn(title="word", factory=factory()))
nv = Gtk.ListView(model=Gtk.NoSelection(model=words), factory=factory())
for name, v in (("list", lv), ("grid", gv), ("columns", cv), ("none", nv)):
    v.connect("activate", lambda v, pos, name=name: on_view(name, pos))
    box.append(v)
`

// The views of lists by the last part of their address.
var viewNames = map[string]string{"GtkListView#0": "list", "GtkGridView#0": "grid", "GtkColumnView#0": "columns", "GtkListView#1": "none"}

func viewOf(a explore.Action) string {
	for part, name := range viewNames {
		if strings.Contains(a.Address, "> "+part+" ") {
			return name
		}
	}
	if strings.Contains(a.Address, "> GtkListBox#0 ") {
		return "box"
	}
	return "?"
}

func TestListRows(t *testing.T) {
	var rows, views []string
	window(t, "list rows", lists, pygi.Kw{
		"on_row":  func(what string, i int) { rows = append(rows, fmt.Sprint(what, " ", i)) },
		"on_view": func(name string, pos int) { views = append(views, fmt.Sprint(name, " ", pos)) },
	})
	rep := run(t, explore.Options{Seed: 4, Actions: 150, LeakRounds: -1})
	require.Empty(t, rep.Findings, "%s", rep)
	require.Len(t, rep.Trace, 150)

	words := []string{"alpha", "beta", "gamma", "delta"}
	boxRows := []string{"one", "two", "three"}
	var wantActivated, wantViews []string
	wantSelected := map[string]bool{}
	done := map[string]bool{}
	for _, a := range rep.Trace {
		require.Contains(t, []string{"select", "open"}, a.Verb, "%s", a)
		assert.NotContains(t, a.Address, "GtkListBox#1", "the inert list box has nothing to do")
		assert.NotContains(t, a.Address, "GtkListItemWidget", "a view's items are addressed by the view")
		view, pos := viewOf(a), position(t, a)
		done[view+" "+a.Verb] = true
		if view == "box" {
			require.Less(t, pos, len(boxRows))
			assert.Equal(t, boxRows[pos], a.Value)
			if a.Verb == "open" {
				wantActivated = append(wantActivated, fmt.Sprint("activated ", pos))
			} else {
				wantSelected[fmt.Sprint("selected ", pos)] = true
			}
			continue
		}
		require.Less(t, pos, len(words))
		assert.Equal(t, words[pos], a.Value)
		assert.Contains(t, a.String(), fmt.Sprintf("%s '%s' in ", a.Verb, words[pos]))
		if a.Verb == "open" {
			wantViews = append(wantViews, fmt.Sprint(view, " ", pos))
		}
	}
	for _, want := range []string{"box select", "box open", "list select", "list open", "grid select", "grid open", "columns select", "columns open", "none open"} {
		assert.True(t, done[want], "150 actions include a %q", want)
	}
	assert.False(t, done["none select"], "a list whose model selects nothing has no select")
	assert.Equal(t, wantViews, views, "each open emitted the view's activate with the recorded position")
	// Each open emitted row-activated; each select selected its row (a
	// row selected already says nothing again).
	var activated []string
	selected := map[string]bool{}
	for _, r := range rows {
		if strings.HasPrefix(r, "activated") {
			activated = append(activated, r)
		} else {
			selected[r] = true
		}
	}
	assert.Equal(t, wantActivated, activated)
	for r := range wantSelected {
		assert.True(t, selected[r], "%s: %v", r, rows)
	}
	assert.Equal(t, 5, rep.Seen, "the list box and four views, each one widget however many verbs and rows")
	assert.Equal(t, 5, rep.Reached)

	// The selection models hold what the last select chose (in the list
	// box, an open selects its row too).
	last := map[string]int{}
	for _, a := range rep.Trace {
		if a.Verb == "select" || viewOf(a) == "box" {
			last[viewOf(a)] = position(t, a)
		}
	}
	got := pyEval(t, "[lv.get_model().get_selected(), cv.get_model().get_selected(), gv.get_model().is_selected(%d), lb.get_selected_row().get_index()]", last["grid"])
	assert.Equal(t, fmt.Sprintf("[%d, %d, True, %d]", last["list"], last["columns"], last["box"]), got)
}

// pyEval evaluates a Python expression in the last window's globals (see
// window) and says what it gives (its str); format's arguments are put in
// first.
func pyEval(t *testing.T, format string, args ...any) string {
	t.Helper()
	require.NotNil(t, lastGlobals)
	var out string
	looptest.Do(t, func(t testing.TB) {
		r, err := pygi.Eval(fmt.Sprintf(format, args...), lastGlobals)
		require.NoError(t, err)
		defer r.Close()
		out = r.String()
	})
	return out
}

// A planted panic on one item's activation is found, its trace records the
// position, and a replay of the trace does exactly the same; a position
// the list no longer has is a replay error.
func TestListRowReplay(t *testing.T) {
	handlers := func() pygi.Kw {
		return pygi.Kw{
			"on_row": func(string, int) {},
			"on_view": func(name string, pos int) {
				if name == "columns" && pos == 2 {
					var m map[string]int
					m["gamma"]++
				}
			},
		}
	}
	window(t, "list replay", lists, handlers())
	rep := run(t, explore.Options{Seed: 2, Actions: 400, LeakRounds: -1})
	require.Len(t, rep.Findings, 1, "%s", rep)
	f := rep.Findings[0]
	require.Equal(t, explore.KindPanic, f.Kind)
	last := f.Trace[len(f.Trace)-1]
	assert.Equal(t, "open", last.Verb)
	assert.Equal(t, "columns", viewOf(last))
	assert.Equal(t, 2, position(t, last))
	assert.Contains(t, f.String(), "open 'gamma' in ")
	t.Log(f)

	replay := func(trace []explore.Action, expect *explore.Finding) *explore.Report {
		win := window(t, "list replay", lists, handlers())
		defer destroy(t, win)
		return run(t, explore.Options{Replay: trace, Expect: expect, LeakRounds: -1, ReplayWait: 200 * time.Millisecond})
	}
	again := replay(f.Trace, f)
	assert.Empty(t, again.ReplayError)
	assert.True(t, again.Reproduced, "%s", again)
	require.Len(t, again.Trace, len(f.Trace))
	for i := range f.Trace {
		assert.Equal(t, f.Trace[i].Address, again.Trace[i].Address)
		assert.Equal(t, f.Trace[i].Value, again.Trace[i].Value)
		assert.JSONEq(t, string(f.Trace[i].Input), string(again.Trace[i].Input))
	}

	for _, tc := range []struct {
		widget, verb string
		pos          int
		err          string
	}{
		{"GtkListView#0 'list'", "select", 9, "item 9 of 4"},
		{"GtkColumnView#0 'tree-grid'", "open", 4, "item 4 of 4"},
		{"GtkListBox#0 'list'", "select", 3, "row 3 is not one of the 3 rows to select"},
	} {
		a := explore.Action{
			Verb:    tc.verb,
			Address: "window 'list replay' > GtkBox#0 'group' > " + tc.widget,
			Input:   json.RawMessage(fmt.Sprintf(`{"position": %d}`, tc.pos)),
		}
		bad := replay([]explore.Action{a}, nil)
		assert.Contains(t, bad.ReplayError, tc.err)
		assert.Contains(t, bad.ReplayError, "cannot be done as recorded")
	}
}

// A second window, opened by a button of the first, is closed as a user
// closes it (close-request first) and opened again, many times, under
// forced collections. (Not transient for the first: GTK 4.8 finalizing a
// destroyed transient window after its destroyed parent touches the freed
// parent, which a test's leftover Python wrapper of it would do.)
const twoWindows = `
win.set_deletable(False)  # the first window stays: the second is closed
state = {"second": None}
def on_open(button):
    s = state["second"]
    if s is not None and s.get_visible():
        s.present()
        return
    s = Gtk.Window(title="second")
    inner = Gtk.Button(label="inner")
    inner.connect("clicked", on_inner)
    s.set_child(inner)
    s.connect("close-request", on_close)
    state["second"] = s
    on_opened()
    s.present()
b = Gtk.Button(label="open"); b.connect("clicked", on_open); box.append(b)
`

// twoWindowsUp shows twoWindows with handlers; the second window goes
// when the test ends, as the first does.
func twoWindowsUp(t *testing.T, src string, handlers pygi.Kw) *pygi.Object {
	win := window(t, "first", src, handlers)
	g := lastGlobals
	cleanup := func() {
		looptest.Do(t, func(t testing.TB) {
			assert.NoError(t, pygi.Exec(`if state["second"] is not None: state["second"].destroy()`, g))
		})
	}
	t.Cleanup(cleanup)
	return win
}

func TestCloseAndReopen(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		var opened, closes, inner int
		twoWindowsUp(t, twoWindows, pygi.Kw{
			"on_opened": func() { opened++ },
			"on_inner":  func(*pygi.Object) { inner++ },
			"on_close":  func(*pygi.Object) bool { closes++; return false },
		})
		rep := run(t, explore.Options{Seed: 5, Actions: 200, LeakEvery: 10, LeakRounds: 4})
		require.Empty(t, rep.Findings, "%s", rep)
		var closed, reopened int
		sinceClose := false
		for _, a := range rep.Trace {
			switch {
			case a.Verb == "close":
				assert.Equal(t, "window 'second'", a.Address, "only the second window is closed")
				assert.Equal(t, "close window 'second'", a.String())
				closed++
				sinceClose = true
			case a.Verb == "click" && a.Label == "inner" && sinceClose:
				reopened++
				sinceClose = false
			}
		}
		assert.GreaterOrEqual(t, closed, 10, "%v", rep.Trace)
		assert.GreaterOrEqual(t, reopened, 5, "the reopened window's button clicked")
		assert.Equal(t, closed, closes, "each close ran close-request")
		assert.Equal(t, closed+1, opened+boolInt(pyEval(t, "state['second'].get_visible()") == "False"), "each close, then an open, made a new window")
		assert.Positive(t, inner)
	})

	t.Run("refused", func(t *testing.T) {
		var opened int
		twoWindowsUp(t, twoWindows, pygi.Kw{
			"on_opened": func() { opened++ },
			"on_inner":  func(*pygi.Object) {},
			"on_close":  func(*pygi.Object) bool { return true }, // "not now"
		})
		rep := run(t, explore.Options{Seed: 5, Actions: 40, LeakRounds: -1})
		require.Empty(t, rep.Findings, "%s", rep)
		closes := 0
		for _, a := range rep.Trace {
			if a.Verb == "close" {
				closes++
				assert.Equal(t, "close window 'second' (refused)", a.String())
			}
		}
		assert.Positive(t, closes)
		assert.Equal(t, 1, opened, "the window refused to close: never opened again")
		assert.Equal(t, "True", pyEval(t, "state['second'].get_visible()"))
	})

	t.Run("close-request raises", func(t *testing.T) {
		twoWindowsUp(t, twoWindows+`
def on_close(w):
    raise RuntimeError("close went wrong")
`, pygi.Kw{"on_opened": func() {}, "on_inner": func(*pygi.Object) {}})
		rep := run(t, explore.Options{Seed: 5, Actions: 200, LeakRounds: -1})
		require.Len(t, rep.Findings, 1, "%s", rep)
		f := rep.Findings[0]
		assert.Equal(t, explore.KindException, f.Kind)
		assert.Contains(t, f.Message, "RuntimeError: close went wrong")
		assert.Equal(t, "close", f.Trace[len(f.Trace)-1].Verb)
		assert.Contains(t, f.String(), "close window 'second' → Python exception")
	})

	// A close-request handler tears down what the window's button uses,
	// and the window opened again does not set it up: its button's first
	// click after a reopen panics. The trace replays to it.
	handlers := func() pygi.Kw {
		clicks := map[string]int{}
		return pygi.Kw{
			"on_opened": func() {},
			"on_inner":  func(*pygi.Object) { clicks["inner"]++ },
			"on_close":  func(*pygi.Object) bool { clicks = nil; return false },
		}
	}
	t.Run("reopen uses what close tore down", func(t *testing.T) {
		twoWindowsUp(t, twoWindows, handlers())
		rep := run(t, explore.Options{Seed: 5, Actions: 200, LeakRounds: -1})
		require.Len(t, rep.Findings, 1, "%s", rep)
		f := rep.Findings[0]
		assert.Equal(t, explore.KindPanic, f.Kind)
		assert.Contains(t, f.Message, "assignment to entry in nil map")
		var verbs []string
		for _, a := range f.Trace {
			verbs = append(verbs, a.Verb+" "+a.Label)
		}
		assert.Contains(t, verbs, "close second")
		assert.Equal(t, "click inner", verbs[len(verbs)-1])
		t.Log(f)

		twoWindowsUp(t, twoWindows, handlers())
		again := run(t, explore.Options{Replay: f.Trace, Expect: f, LeakRounds: -1})
		assert.Empty(t, again.ReplayError)
		assert.True(t, again.Reproduced, "%s", again)
	})

	t.Run("the last window", func(t *testing.T) {
		window(t, "alone", `box.append(Gtk.Button(label="stay"))`, nil)
		rep := run(t, explore.Options{Seed: 5, Actions: 30, LeakRounds: -1})
		require.Empty(t, rep.Findings, "%s", rep)
		for _, a := range rep.Trace {
			assert.NotEqual(t, "close", a.Verb, "the only window is never closed")
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A button whose label counts its clicks: one widget for coverage, and a
// trace recorded while it read "clicked 1" replays when it reads
// otherwise.
const counter = `
n = {"v": start}
def on_count(b):
    n["v"] += 1
    b.set_label("clicked %d" % n["v"])
c = Gtk.Button(label="clicked %d" % start); c.connect("clicked", on_count); box.append(c)
box.append(Gtk.Button(label="still"))
`

func TestChangingLabels(t *testing.T) {
	window(t, "counter", counter, pygi.Kw{"start": 0})
	rep := run(t, explore.Options{Seed: 1, Actions: 40, LeakRounds: -1})
	require.Empty(t, rep.Findings, "%s", rep)
	addrs := map[string]bool{}
	for _, a := range rep.Trace {
		addrs[a.Address] = true
	}
	assert.Greater(t, len(addrs), 10, "the counter's address reads its label: %v", addrs)
	assert.Contains(t, addrs, "window 'counter' > GtkBox#0 'group' > GtkButton#0 'clicked 1'")
	assert.Equal(t, 2, rep.Seen, "two buttons, however their labels change")
	assert.Equal(t, 2, rep.Reached)

	win := window(t, "counter", counter, pygi.Kw{"start": 500})
	again := run(t, explore.Options{Replay: rep.Trace, LeakRounds: -1})
	assert.Empty(t, again.ReplayError)
	assert.Equal(t, len(rep.Trace), again.Replayed)
	clicks := 0
	for i, a := range again.Trace {
		assert.Equal(t, rep.Trace[i].Verb, a.Verb)
		if strings.Contains(a.Address, "GtkButton#0") {
			clicks++
			assert.Equal(t, fmt.Sprintf("window 'counter' > GtkBox#0 'group' > GtkButton#0 'clicked %d'", 500+clicks-1), a.Address, "found by its structure")
		}
	}
	assert.Equal(t, fmt.Sprint(500+clicks), pyEval(t, `n["v"]`))
	destroy(t, win)

	// The structure must match: another widget's is no fallback.
	window(t, "counter", counter, pygi.Kw{"start": 0})
	wrong := run(t, explore.Options{Replay: []explore.Action{{Verb: "click", Address: "window 'counter' > GtkBox#0 'group' > GtkButton#5 'clicked 1'"}}, LeakRounds: -1, ReplayWait: 100 * time.Millisecond})
	assert.Contains(t, wrong.ReplayError, "nothing to click at")
	// Nor another verb's.
	wrong = run(t, explore.Options{Replay: []explore.Action{{Verb: "toggle", Address: "window 'counter' > GtkBox#0 'group' > GtkButton#0 'clicked 1'"}}, LeakRounds: -1, ReplayWait: 100 * time.Millisecond})
	assert.Contains(t, wrong.ReplayError, "nothing to toggle at")
}

// What a crashed child leaves is each action's pending entry: it carries
// its input already, and a trace of pending entries alone replays.
const inputs = `
box.append(Gtk.Entry())
box.append(Gtk.TextView())
box.append(Gtk.SpinButton.new_with_range(-5, 5, 1))
box.append(Gtk.DropDown.new_from_strings(["alpha", "beta", "gamma"]))
nb = Gtk.Notebook()
nb.append_page(Gtk.Label(label="first"), Gtk.Label(label="First"))
nb.append_page(Gtk.Label(label="second"), Gtk.Label(label="Second"))
box.append(nb)
lb = Gtk.ListBox()
for s in ("one", "two"):
    lb.append(Gtk.Label(label=s))
box.append(lb)
box.append(Gtk.CheckButton(label="check"))
`

func TestPendingInput(t *testing.T) {
	var mu sync.Mutex
	var pending []explore.Action
	window(t, "inputs", inputs, nil)
	rep := run(t, explore.Options{Seed: 9, Actions: 80, LeakRounds: -1, OnAction: func(n int, a explore.Action) {
		mu.Lock()
		defer mu.Unlock()
		if n == len(pending) { // the first call for n: before it is done
			pending = append(pending, a)
		}
	}})
	require.Empty(t, rep.Findings, "%s", rep)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, pending, len(rep.Trace))
	need := map[string]string{"type": "text", "set": "value", "pick": "position", "page": "page", "select": "position", "open": "position"}
	verbs := map[string]bool{}
	for i, p := range pending {
		done := rep.Trace[i]
		verbs[p.Verb] = true
		assert.Equal(t, done.Address, p.Address)
		assert.Equal(t, string(done.Input), string(p.Input), "the input done is the one planned: %s", done)
		if key, ok := need[p.Verb]; ok {
			var in map[string]any
			require.NoError(t, json.Unmarshal(p.Input, &in), "%s: %q", p, p.Input)
			assert.Contains(t, in, key, "%s", p)
			if p.Verb != "set" { // a spin button rounds what it is set to
				assert.Equal(t, done.Value, p.Value, "what it would do is said before: %s", p)
			}
		}
	}
	for _, v := range []string{"type", "set", "pick", "page", "select", "open", "toggle"} {
		assert.True(t, verbs[v], "80 actions include a %q", v)
	}

	window(t, "inputs", inputs, nil)
	again := run(t, explore.Options{Replay: pending, LeakRounds: -1})
	assert.Empty(t, again.ReplayError)
	require.Equal(t, len(pending), again.Replayed)
	for i, a := range again.Trace {
		assert.Equal(t, rep.Trace[i].Value, a.Value, "action %d: %s", i, a)
	}
}

// In an application (the child "windows"), a window of no application's
// is closed and opened again, and the application's only window, which
// would end it, is not closed.
func TestCloseInAnApplication(t *testing.T) {
	out := filepath.Join(t.TempDir(), "explore.jsonl")
	_, stderr, err := testutil.RunChild(t, "EXPLORE_CHILD=windows", "GTK_A11Y=none",
		"DUET_EXPLORE=seed=3,actions=150,gc=20ms,pace=2ms", "DUET_EXPLORE_OUT="+out)
	require.Equal(t, 0, testutil.ExitCode(t, err), "stderr:\n%s", stderr)
	actions, findings, summary := lines(t, out)
	require.NotNil(t, summary)
	assert.Empty(t, findings)
	require.Len(t, actions, 150, "the run went to its end: the application did not")
	closes := 0
	for _, a := range actions {
		if a.Verb == "close" {
			assert.Equal(t, "window 'palette'", a.Address)
			closes++
		}
	}
	assert.Positive(t, closes)
}

// A window's own actions (win.NAME) run their handlers: on a window,
// Gtk.Widget's activate_action wants the prefix, and given the bare name did
// nothing, so every bug behind a window action was missed.
func TestWindowActionsRun(t *testing.T) {
	window(t, "win actions", `from gi.repository import Gio
appwin = Gtk.ApplicationWindow(title="with actions")
def on_hello(action, param):
    raise ValueError("the window action ran")
act = Gio.SimpleAction.new("hello", None)
act.connect("activate", on_hello)
appwin.add_action(act)
appwin.present()`, nil)
	defer func() {
		looptest.Do(t, func(t testing.TB) {
			var b pygi.Block
			b.CallMethod(b.Item(lastGlobals, "appwin"), "destroy")
			assert.NoError(t, b.Err())
		})
	}()
	rep := run(t, explore.Options{Seed: 1, Actions: 200, LeakRounds: -1})
	require.NotEmpty(t, rep.Findings, "%s", rep)
	f := rep.Findings[0]
	assert.Equal(t, explore.KindException, f.Kind, "%s", rep)
	assert.Contains(t, f.Message, "the window action ran")
}

// The title bar's own buttons are left alone: its close button ended an app
// whose only window has a header bar (closing is the close verb's, which
// never closes the last window).
func TestTitleBarButtonsAreLeftAlone(t *testing.T) {
	window(t, "header bar", `hb = Gtk.HeaderBar()
win.set_titlebar(hb)
box.append(Gtk.Button(label="work"))`, nil)
	rep := run(t, explore.Options{Seed: 2, Actions: 60, LeakRounds: -1})
	assert.Empty(t, rep.Findings, "%s", rep)
	for _, a := range rep.Trace {
		assert.NotContains(t, a.Address, "GtkWindowControls", "%s", a)
	}
}
