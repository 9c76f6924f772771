package explore_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// Child programs: tiny apps, unmodified for exploring (app.Main, as a
// user's main is), each run in its own process with DUET_EXPLORE set.
var children = map[string]struct {
	src      string
	handlers func() pygi.Kw
}{
	"panic": {
		src: `a = Gtk.Button(label="A"); a.connect("clicked", on_a); box.append(a)
b = Gtk.Button(label="B"); b.connect("clicked", on_b); box.append(b)`,
		handlers: func() pygi.Kw {
			var a, b int
			return pygi.Kw{
				"on_a": func(*pygi.Object) { a++ },
				"on_b": func(*pygi.Object) {
					if b++; a > 0 && b == 2 {
						var m map[string]int
						m["b"] = a
					}
				},
			}
		},
	},
	"critical": {
		src: `bad = Gtk.Button(label="bad"); bad.connect("clicked", on_bad); box.append(bad)`,
		handlers: func() pygi.Kw {
			return pygi.Kw{"on_bad": func(button *pygi.Object) {
				// A label put in a second box while it is in a first:
				// gtk_box_append's g_return_if_fail says so.
				var b pygi.Block
				Gtk := b.Import("gi.repository.Gtk")
				label := b.CallMethod(Gtk, "Label")
				b.CallMethod(b.CallMethod(Gtk, "Box"), "append", label)
				b.CallMethod(b.CallMethod(Gtk, "Box"), "append", label)
			}}
		},
	},
	// GLib-GObject's g_return_if_fail: PyGObject's log handler makes it
	// a Python warning, which says neither the domain nor the level.
	"gcritical": {
		src: `from gi.repository import GObject
def on_bad(button):
    GObject.signal_handler_disconnect(button, 0)
bad = Gtk.Button(label="bad"); bad.connect("clicked", on_bad); box.append(bad)`,
		handlers: func() pygi.Kw { return pygi.Kw{} },
	},
	// An application window and a window of no application's, opened
	// from a button: the palette is closed and opened again; the
	// application's only window never is (the application would end).
	"windows": {
		src: `state = {"palette": None}
def on_palette(button):
    p = state["palette"]
    if p is not None and p.get_visible():
        p.present()
        return
    p = Gtk.Window(title="palette")
    p.set_child(Gtk.Button(label="swatch"))
    state["palette"] = p
    p.present()
pb = Gtk.Button(label="palette"); pb.connect("clicked", on_palette); box.append(pb)
on_palette(pb)`,
		handlers: func() pygi.Kw { return pygi.Kw{} },
	},
	"clean": {
		src: `count = Gtk.Label(label="0")
def bump(button):
    count.set_label(str(int(count.get_label()) + 1))
more = Gtk.Button(label="more"); more.connect("clicked", bump); box.append(more)
box.append(count)
box.append(Gtk.CheckButton(label="check"))
e = Gtk.Entry(); e.connect("changed", on_changed); box.append(e)
box.append(Gtk.Scale.new_with_range(Gtk.Orientation.HORIZONTAL, 0, 10, 1))`,
		handlers: func() pygi.Kw {
			return pygi.Kw{"on_changed": func(entry *pygi.Object) {
				if r, err := entry.CallMethod("get_text"); err == nil {
					r.Close()
				}
			}}
		},
	},
}

func childMain(name string) int {
	if name == "ctx-ends-then-the-loop-stops" {
		return explore.CtxEndsThenTheLoopStops() // a loop of its own, no app
	}
	c, ok := children[name]
	if !ok {
		return 2
	}
	flag.Parse() // the test binary's flags, so that GApplication gets none
	return app.Main(app.Options{ID: "org.duet.Explore." + strings.ToUpper(name[:1]) + name[1:], NonUnique: true}, func(a *app.App) error {
		vars := c.handlers()
		vars["application"], vars["title"] = a.Python(), name
		var b pygi.Block
		b.Exec(`from gi.repository import Gtk
win = Gtk.ApplicationWindow(application=application, title=title)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
win.set_child(box)
`+c.src+`
win.present()`, b.Globals(vars))
		return b.Err()
	})
}

// GLib's log handlers come out of the process also when the loop stops
// right after a Run whose ctx ended while they went in: their undo cannot
// wait for a loop that will not run it.
func TestLogHandlersOutWhenTheLoopStopsRightAfter(t *testing.T) {
	out, stderr, err := testutil.RunChild(t, "EXPLORE_CHILD=ctx-ends-then-the-loop-stops", "GTK_A11Y=none")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, out, "handlers in after the loop: 0")
}

// lines reads the JSON lines DUET_EXPLORE_OUT got.
func lines(t *testing.T, path string) (actions []explore.Action, findings []explore.Finding, summary map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Action  *explore.Action
			Finding *explore.Finding
			Summary map[string]any
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "%s", sc.Bytes())
		switch {
		case line.Action != nil:
			actions = append(actions, *line.Action)
		case line.Finding != nil:
			findings = append(findings, *line.Finding)
		case line.Summary != nil:
			summary = line.Summary
		}
	}
	require.NoError(t, sc.Err())
	return
}

// DUET_EXPLORE on an unmodified app: it finds the planted bug, says it in
// words on stderr, as JSON lines in DUET_EXPLORE_OUT and with a mark in
// the plot in DUET_EXPLORE_PLOT, and exits 3; a clean app exits 0.
func TestExploreHook(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		status int
		kind   explore.Kind
		words  string
	}{
		{name: "panic", status: 3, kind: explore.KindPanic,
			words: "click 'B' in 'panic' → Go panic: assignment to entry in nil map (child_test.go:"},
		// Criticals abort a test binary's children (looptest's
		// G_DEBUG=fatal-criticals): this one lets them through to the
		// explorer.
		{name: "critical", env: []string{"DUET_ALLOW_CRITICALS=1", "G_DEBUG="}, status: 3, kind: explore.KindLog,
			words: "click 'bad' in 'critical' → GLib/GTK message: Gtk-CRITICAL: gtk_box_append: assertion"},
		{name: "gcritical", env: []string{"DUET_ALLOW_CRITICALS=1", "G_DEBUG="}, status: 3, kind: explore.KindLog,
			words: "click 'bad' in 'gcritical' → GLib/GTK message: GLib-GObject-CRITICAL: g_signal_handler_disconnect: assertion"},
		{name: "clean", status: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "explore.jsonl")
			plot := filepath.Join(t.TempDir(), "explore.svg")
			env := append([]string{"EXPLORE_CHILD=" + tc.name, "GTK_A11Y=none",
				"DUET_EXPLORE=seed=3,duration=3s,gc=20ms,pace=2ms", "DUET_EXPLORE_OUT=" + out, "DUET_EXPLORE_PLOT=" + plot}, tc.env...)
			_, stderr, err := testutil.RunChild(t, env...)
			require.Equal(t, tc.status, testutil.ExitCode(t, err), "stderr:\n%s", stderr)
			assert.Contains(t, stderr, "explore: seed 3: ")
			actions, findings, summary := lines(t, out)
			require.NotNil(t, summary, "the summary line")
			assert.NotEmpty(t, actions)
			assert.EqualValues(t, 3, summary["seed"])
			assert.EqualValues(t, len(actions), summary["actions"])
			assert.Contains(t, summary, "actions_per_s")
			assert.Contains(t, summary, "coverage")
			svg, err := os.ReadFile(plot)
			require.NoError(t, err, "DUET_EXPLORE_PLOT")
			labels, marks, lines := svgMarks(t, svg)
			assert.Equal(t, 3, lines, "actions, live callbacks, RSS")
			assert.Equal(t, len(findings), marks)
			if len(findings) == 1 {
				assert.Equal(t, []string{"1 " + string(tc.kind)}, labels)
			}
			if tc.status == 0 {
				assert.Contains(t, stderr, "nothing found")
				assert.Empty(t, findings)
				assert.NotContains(t, stderr, "WARNING")
				assert.NotContains(t, stderr, "CRITICAL")
				return
			}
			require.Len(t, findings, 1, "stderr:\n%s", stderr)
			assert.Equal(t, tc.kind, findings[0].Kind)
			assert.Contains(t, stderr, tc.words)
			assert.Equal(t, actions, findings[0].Trace, "the run stopped at its finding")
		})
	}
}
