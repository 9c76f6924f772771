package explore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
)

// GLib-GObject's warnings are findings, named by domain and level as GTK's
// are, whether Python code or a Go handler made GLib warn; PyGObject turns
// them into Python warnings, which were let through. A program's own
// Python warnings are no findings, as before. (Criticals: the child
// "gcritical" of TestExploreHook, where they do not abort.)
func TestGLibWarningsAreFindings(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		handlers  pygi.Kw
		message   string // "" for no finding
	}{
		{
			name: "from python",
			src: `from gi.repository import GObject
def on_bad(button):
    GObject.signal_handler_disconnect(button, 424242)
b = Gtk.Button(label="bad"); b.connect("clicked", on_bad); box.append(b)`,
			message: "GLib-GObject-WARNING: ",
		},
		{
			name: "from go",
			src:  `b = Gtk.Button(label="bad"); b.connect("clicked", on_bad); box.append(b)`,
			handlers: pygi.Kw{"on_bad": func(button *pygi.Object) {
				var b pygi.Block
				b.CallMethod(b.Import("gi.repository.GObject"), "signal_handler_disconnect", button, 434343)
				assert.NoError(t, b.Err())
			}},
			message: "GLib-GObject-WARNING: ",
		},
		{
			name: "python warnings",
			src: `import warnings
def on_old(button):
    warnings.warn("old stuff", DeprecationWarning)
    warnings.warn("careful", UserWarning)
b = Gtk.Button(label="old"); b.connect("clicked", on_old); box.append(b)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			window(t, tc.name, tc.src, tc.handlers)
			rep := run(t, explore.Options{Seed: 1, Actions: 5, LeakRounds: -1})
			if tc.message == "" {
				assert.Empty(t, rep.Findings, "%s", rep)
				return
			}
			require.Len(t, rep.Findings, 1, "%s", rep)
			f := rep.Findings[0]
			assert.Equal(t, explore.KindLog, f.Kind)
			assert.Contains(t, f.Message, tc.message)
			assert.Contains(t, f.Message, "has no handler with id")
			assert.Contains(t, f.String(), "click 'bad' in '"+tc.name+"' → GLib/GTK message: GLib-GObject-WARNING: ")
		})
	}

	// Once the run is over, PyGObject's handlers are the domains' again:
	// the warning is a Python warning, of PyGObject's category.
	looptest.Do(t, func(t testing.TB) {
		var b pygi.Block
		g := b.Globals(nil)
		b.Exec(`import warnings
from gi.repository import GObject, Gtk
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    GObject.signal_handler_disconnect(Gtk.Button(), 454545)
got = [(w.category.__module__, w.category.__name__) for w in caught]`, g)
		got := b.Item(g, "got")
		require.NoError(t, b.Err())
		assert.Equal(t, "[('gobject', 'Warning')]", got.String())
	})
}

// A GTK message that names a widget by its address (GTK's own internal
// widgets' warnings say nothing else) says where that widget is in the UI.
func TestLogFindingSaysWhereTheNamedWidgetIs(t *testing.T) {
	window(t, "named", `from gi.repository import GLib
def on_warn(button):
    GLib.log_variant("Gtk", GLib.LogLevelFlags.LEVEL_WARNING, GLib.Variant("a{sv}", {
        "MESSAGE": GLib.Variant("s", "Trying to snapshot GtkLabel 0x%x without a current allocation" % hash(button.get_child()))}))
inner = Gtk.Box(); box.append(inner)
b = Gtk.Button(label="warn"); b.connect("clicked", on_warn); inner.append(b)`, nil)
	rep := run(t, explore.Options{Seed: 1, Actions: 3, LeakRounds: -1})
	require.Len(t, rep.Findings, 1, "%s", rep)
	f := rep.Findings[0]
	assert.Contains(t, f.Message, "Gtk-WARNING: Trying to snapshot GtkLabel 0x")
	assert.Regexp(t, `^GtkLabel 0x[0-9a-f]+ is at window 'named' > .*GtkBox#0 'group' > GtkButton#0 'warn' > GtkLabel#0 'warn'$`, f.Detail)
}

// Options.IgnoreLog: the toolkit's own warnings a program cannot help are
// no findings; the others still are.
func TestIgnoreLog(t *testing.T) {
	window(t, "ignored", `from gi.repository import GLib
def warn(text):
    GLib.log_variant("Gtk", GLib.LogLevelFlags.LEVEL_WARNING, GLib.Variant("a{sv}", {"MESSAGE": GLib.Variant("s", text)}))
a = Gtk.Button(label="toolkit"); a.connect("clicked", lambda b: warn("Trying to snapshot GtkGizmo 0x%x without a current allocation" % hash(b))); box.append(a)
b = Gtk.Button(label="mine"); b.connect("clicked", lambda b: warn("my own trouble")); box.append(b)`, nil)
	opts, err := explore.ParseOptions(`seed=1,actions=30,leak=off,ignore-log="^Gtk-WARNING: Trying to snapshot GtkGizmo 0x[0-9a-f]+ without a current allocation$"`)
	require.NoError(t, err)
	rep := run(t, opts)
	for _, f := range rep.Findings {
		assert.NotContains(t, f.Message, "Trying to snapshot", "ignored")
	}
	opts.KeepGoing = true
	rep = run(t, opts)
	require.Len(t, rep.Findings, 1, "%s", rep)
	assert.Equal(t, "Gtk-WARNING: my own trouble", rep.Findings[0].Message)

	_, err = explore.ParseOptions("seed=1,ignore-log=(")
	assert.ErrorContains(t, err, `option "ignore-log=("`)
}

// A program's class that defines __eq__ has no hash() (Python takes
// __hash__ away with it): the explorer keys windows and widgets by their
// GObject's address all the same.
func TestClassesWithoutHash(t *testing.T) {
	window(t, "eq", `from gi.repository import GLib
class EqBox(Gtk.Box):
    def __eq__(self, other):
        return self is other
class EqWin(Gtk.Window):
    def __eq__(self, other):
        return self is other
win.connect("close-request", lambda w: True)  # stays: the warn button with it
other = EqWin(title="eq window"); other.set_child(Gtk.Button(label="other")); other.present()
inner = EqBox(); box.append(inner)
def on_warn(button):
    GLib.log_variant("Gtk", GLib.LogLevelFlags.LEVEL_WARNING, GLib.Variant("a{sv}", {
        "MESSAGE": GLib.Variant("s", "Trying to snapshot GtkLabel 0x%x without a current allocation" % GObject.Object.__hash__(button.get_child()))}))
from gi.repository import GObject
b = Gtk.Button(label="warn"); b.connect("clicked", on_warn); inner.append(b)`, nil)
	t.Cleanup(func() {
		looptest.Do(t, func(t testing.TB) { assert.NoError(t, pygi.Exec("other.destroy()", lastGlobals)) })
	})
	rep := run(t, explore.Options{Seed: 1, Actions: 300, LeakRounds: -1})
	require.NotEmpty(t, rep.Findings, "%s", rep)
	assert.Contains(t, rep.Findings[0].Detail, "is at window 'eq' > GtkBox#0 'group' > builtins+EqBox#0 'group' > GtkButton#0 'warn'", "%s", rep)
}

// An application that has ended (the builder example's Close quits it) is
// no longer registered: the explorer does not ask it for its actions,
// which GLib answers with a GLib-GIO critical, of the explorer's own.
func TestEndedApplicationIsNotAsked(t *testing.T) {
	window(t, "ended", `b = Gtk.Button(label="ok"); box.append(b)`, nil)
	var app *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		app, err = pygi.Eval(`__import__("gi.repository.Gtk", fromlist=["Gtk"]).Application(application_id="org.duet.test.Ended")`, nil)
		require.NoError(t, err)
	})
	rep := run(t, explore.Options{Seed: 1, Actions: 5, LeakRounds: -1, App: app})
	assert.Empty(t, rep.Findings, "%s", rep)
	assert.Len(t, rep.Trace, 5)
}
