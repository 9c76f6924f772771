package explore_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func TestMain(m *testing.M) {
	if name := os.Getenv("EXPLORE_CHILD"); name != "" {
		os.Exit(childMain(name))
	}
	looptest.Main(m)
}

// lastGlobals are the globals of the last window's source (see window).
var lastGlobals *pygi.Object

// window builds a toplevel titled title from Python source that appends
// widgets to box (a vertical Gtk.Box), with handlers as globals (kept in
// lastGlobals), and returns it for the test to destroy.
func window(t *testing.T, title, src string, handlers pygi.Kw) *pygi.Object {
	t.Helper()
	var win *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		vars := pygi.Kw{"title": title}
		for k, v := range handlers {
			vars[k] = v
		}
		var b pygi.Block
		g := b.Globals(vars)
		b.Exec("from gi.repository import Gtk\nwin = Gtk.Window(title=title)\nbox = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)\nwin.set_child(box)\n"+src+"\nwin.present()\n", g)
		win = b.Item(g, "win")
		require.NoError(t, b.Err())
		lastGlobals = g
	})
	t.Cleanup(func() { destroy(t, win) })
	return win
}

func destroy(t *testing.T, win *pygi.Object) {
	if win.Closed() {
		return
	}
	looptest.Do(t, func(t testing.TB) {
		r, err := win.CallMethod("destroy")
		r.Close()
		assert.NoError(t, err)
		win.Close()
	})
}

func run(t *testing.T, opts explore.Options) *explore.Report {
	t.Helper()
	if opts.Pace == 0 {
		opts.Pace = time.Millisecond
	}
	if opts.GC == 0 {
		opts.GC = 20 * time.Millisecond
	}
	if opts.Duration == 0 {
		opts.Duration = 10 * time.Second
	}
	rep, err := explore.Run(context.Background(), opts)
	require.NoError(t, err)
	return rep
}

// A window with one widget of each kind the explorer acts on.
const everyKind = `
for i in range(3):
    box.append(Gtk.Button(label="button %d" % i))
box.append(Gtk.CheckButton(label="check"))
box.append(Gtk.ToggleButton(label="toggle"))
box.append(Gtk.Switch())
box.append(Gtk.Entry())
box.append(Gtk.TextView())
box.append(Gtk.SpinButton.new_with_range(-5, 5, 1))
box.append(Gtk.Scale.new_with_range(Gtk.Orientation.HORIZONTAL, 0, 100, 1))
box.append(Gtk.DropDown.new_from_strings(["alpha", "beta", "gamma"]))
stack = Gtk.Stack()
stack.add_titled(Gtk.Label(label="one"), "one", "One")
stack.add_titled(Gtk.Button(label="on page two"), "two", "Two")
box.append(stack)
nb = Gtk.Notebook()
nb.append_page(Gtk.Label(label="first"), Gtk.Label(label="First"))
nb.append_page(Gtk.Label(label="second"), Gtk.Label(label="Second"))
box.append(nb)
lb = Gtk.ListBox()
for s in ("one", "two"):
    lb.append(Gtk.Label(label=s))
box.append(lb)
lf = Gtk.SignalListItemFactory()
lf.connect("setup", lambda f, item: item.set_child(Gtk.Label()))
lf.connect("bind", lambda f, item: item.get_child().set_label(item.get_item().get_string()))
box.append(Gtk.ListView(model=Gtk.SingleSelection(model=Gtk.StringList.new(["x", "y", "z"])), factory=lf))
box.append(Gtk.Button(label="hidden", visible=False))
box.append(Gtk.Button(label="insensitive", sensitive=False))
`

func TestSameSeedSameTrace(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	// Each run on a fresh window: the same program from its start.
	trace := func(seed uint64) []string {
		win := window(t, "every kind", everyKind, nil)
		defer destroy(t, win)
		rep := run(t, explore.Options{Seed: seed, Actions: 80, LeakRounds: -1})
		require.Empty(t, rep.Findings)
		require.Len(t, rep.Trace, 80)
		var words []string
		for _, a := range rep.Trace {
			words = append(words, a.Verb+" "+a.Address+" "+a.Value)
		}
		return words
	}
	first, again, other := trace(7), trace(7), trace(8)
	assert.Equal(t, first, again, "the same seed takes the same actions")
	assert.NotEqual(t, first, other, "another seed takes others")

	verbs := map[string]bool{}
	for _, w := range first {
		verbs[strings.Fields(w)[0]] = true
		assert.NotContains(t, w, "hidden")
		assert.NotContains(t, w, "insensitive")
	}
	for _, v := range []string{"click", "toggle", "type", "set", "pick", "page", "select", "open"} {
		assert.True(t, verbs[v], "80 actions on this window include a %q: %v", v, first)
	}
}

// Each kind of finding, planted in a window of the test's own.
func TestFindings(t *testing.T) {
	var clicks int
	var kept []*pygi.Object
	t.Cleanup(func() {
		for _, o := range kept {
			o.Close()
		}
	})
	for _, tc := range []struct {
		name     string
		src      string
		handlers pygi.Kw
		opts     explore.Options
		kind     explore.Kind
		message  string
		where    string
		words    string
	}{
		{
			name: "go panic on the third click",
			src:  `b = Gtk.Button(label="A"); b.connect("clicked", on_a); box.append(b)`,
			handlers: pygi.Kw{"on_a": func(*pygi.Object) {
				if clicks++; clicks == 3 {
					var m map[string]int
					m["boom"]++
				}
			}},
			kind:    explore.KindPanic,
			message: "assignment to entry in nil map",
			where:   "explore_test.go:",
			words:   "click 'A' in 'go panic on the third click', click 'A' in 'go panic on the third click', click 'A' in 'go panic on the third click' → Go panic: assignment to entry in nil map (explore_test.go:",
		},
		{
			name: "python exception",
			src: `def on_b(button):
    {}["missing"]
b = Gtk.Button(label="B"); b.connect("clicked", on_b); box.append(b)`,
			kind:    explore.KindException,
			message: "KeyError: 'missing'",
			where:   "<duet>:6",
			words:   "click 'B' in 'python exception' → Python exception: KeyError: 'missing'",
		},
		{
			name:     "stall",
			src:      `b = Gtk.Button(label="slow"); b.connect("clicked", on_slow); box.append(b)`,
			handlers: pygi.Kw{"on_slow": func(*pygi.Object) { time.Sleep(1200 * time.Millisecond) }},
			kind:     explore.KindStall,
			message:  "kept the UI thread for ", // how long depends on the machine
			words:    "click 'slow' in 'stall' → UI stall",
		},
		{
			name: "stall in work the handler queued",
			src: `from gi.repository import GLib
import time
def on_later(button):
    GLib.idle_add(lambda: time.sleep(1.2))
b = Gtk.Button(label="later"); b.connect("clicked", on_later); box.append(b)`,
			kind:    explore.KindStall,
			message: "busy for ", // part of the sleep may fall in the pace
			words:   "click 'later' in 'stall in work the handler queued' → UI stall",
		},
		{
			name: "hang",
			src: `import time
def on_stuck(button):
    time.sleep(3)
b = Gtk.Button(label="stuck"); b.connect("clicked", on_stuck); box.append(b)`,
			opts:    explore.Options{Hang: time.Second},
			kind:    explore.KindHang,
			message: "did not come back from the action within 1s",
			words:   "click 'stuck' in 'hang' → hang",
		},
		{
			name: "leak",
			src:  `b = Gtk.Button(label="keep"); b.connect("clicked", on_keep); box.append(b)`,
			handlers: pygi.Kw{"on_keep": func(*pygi.Object) {
				o, err := pygi.Eval("bytearray(1)", nil)
				if err == nil {
					kept = append(kept, o)
				}
			}},
			opts:    explore.Options{LeakEvery: 5, LeakRounds: 4},
			kind:    explore.KindLeak,
			message: `Python objects Go holds, of type "bytearray" grew at each of 4 censuses, 5 or more actions apart`,
			words:   "click 'keep' in 'leak' → leak: Python objects Go holds",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clicks = 0
			window(t, tc.name, tc.src, tc.handlers)
			opts := tc.opts
			opts.Seed = 1
			rep := run(t, opts)
			require.Len(t, rep.Findings, 1, "%s", rep)
			f := rep.Findings[0]
			assert.Equal(t, tc.kind, f.Kind)
			assert.Contains(t, f.Message, tc.message)
			assert.Contains(t, f.Where, tc.where)
			assert.Contains(t, f.String(), tc.words)
			assert.Equal(t, rep.Trace, f.Trace, "the run stops at its first finding")
			t.Log(f)
		})
	}
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want explore.Options
		err  string
	}{
		{in: "seed=42,duration=3s,gc=20ms", want: explore.Options{Seed: 42, Duration: 3 * time.Second, GC: 20 * time.Millisecond}},
		{in: "seed=1,gc=off,leak=off,keep-going,actions=9,stall=2s,pace=1ms", want: explore.Options{Seed: 1, GC: -1, LeakRounds: -1, KeepGoing: true, Actions: 9, Stall: 2 * time.Second, Pace: time.Millisecond}},
		{in: "seed=1,leak-every=3,leak-rounds=2", want: explore.Options{Seed: 1, LeakEvery: 3, LeakRounds: 2}},
		{in: "seed=1,hang=3s,keep-going=false", want: explore.Options{Seed: 1, Hang: 3 * time.Second}},
		{in: "seed=x", err: `option "seed=x"`},
		{in: "speed=1", err: `unknown option "speed"`},
		{in: "", err: "no options"},
		{in: "seed=1,duration=-5s", err: "must be positive"},
		{in: "seed=1,duration=0", err: "must be positive"},
		{in: "seed=1,actions=-3", err: "must be positive"},
		{in: "seed=1,stall=-1s", err: "must be positive"},
		{in: "seed=1,leak-every=0", err: "must be positive"},
		{in: "seed=1,keep-going=yes", err: "keep-going"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := explore.ParseOptions(tc.in)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	o, err := explore.ParseOptions("duration=1s")
	require.NoError(t, err)
	assert.NotZero(t, o.Seed, "without seed=, one from the clock")
}

func TestRunOnTheUIThreadIsRefused(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		_, err := explore.Run(context.Background(), explore.Options{})
		assert.ErrorContains(t, err, "goroutine")
	})
}

// What no user can do, the explorer does not do either: turn off the
// active button of a radio group, or switch a stack's page behind the
// program's back (a wizard's).
func TestNoFalseAlarms(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"radio group", `r1 = Gtk.CheckButton(label="small"); r2 = Gtk.CheckButton(label="large", group=r1); r1.set_active(True)
def on_go(button):
    next(r for r in (r1, r2) if r.get_active())
box.append(r1); box.append(r2)
g = Gtk.Button(label="go"); g.connect("clicked", on_go); box.append(g)`},
		{"wizard stack", `data = {}
stack = Gtk.Stack()
def on_next(button):
    data["name"] = "x"
    stack.set_visible_child_name("two")
def on_finish(button):
    data["name"]
n = Gtk.Button(label="next"); n.connect("clicked", on_next)
f = Gtk.Button(label="finish"); f.connect("clicked", on_finish)
stack.add_named(n, "one"); stack.add_named(f, "two")
box.append(stack)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			window(t, tc.name, tc.src, nil)
			rep := run(t, explore.Options{Seed: 3, Actions: 60, LeakRounds: -1})
			assert.Empty(t, rep.Findings, "%s", rep)
		})
	}
}
