package widgets_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// .ui files loaded with LoadUIFS in development mode (a watcher runs): a
// change rebuilds the interface and puts its objects where the old ones
// are placed. Most tests apply the change with reload.Now (the record's
// key is "ui:" and the file's path in its fs.FS); one saves the file.

const panelUI = `<interface>
  <object class="GtkBox" id="panel">
    <child>
      <object class="GtkLabel" id="label">
        <property name="label">old text</property>
      </object>
    </child>
    <child>
      <object class="GtkButton" id="button">
        <property name="label">go</property>
        <signal name="clicked" handler="on_go"/>
      </object>
    </child>
  </object>
</interface>`

// startWatcher starts a watcher (development mode) for the test.
func startWatcher(t *testing.T, dir string) (*reload.Watcher, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	w, err := reload.Start(reload.Config{Out: out, Guess: dir, Debounce: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w, out
}

// py evaluates expr with vars (on the loop) and returns it as a T.
func py[T any](t testing.TB, expr string, vars map[string]*pygi.Object) T {
	t.Helper()
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	for k, v := range vars {
		require.NoError(t, g.SetItem(k, v))
	}
	o, err := pygi.Eval(expr, g)
	require.NoError(t, err, expr)
	defer o.Close()
	v, err := pygi.As[T](o)
	require.NoError(t, err, expr)
	return v
}

// uiText is the text of the label with id in u, read through UI.Object.
func uiText(t testing.TB, u *widgets.UI, id string) string {
	t.Helper()
	l, err := u.Object(id)
	require.NoError(t, err)
	defer l.Close()
	return py[string](t, "l.get_label()", map[string]*pygi.Object{"l": l.Object})
}

// A label's text changed: the new panel takes the old one's place in the
// app's box (between the same siblings), UI.Object gives the new objects,
// the Go handler bound by name runs on the new button, and the old panel,
// label and button are finalised.
func TestReloadUIRebuildsPlacedWidgets(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reload_panel.ui"), []byte(panelUI), 0o644))
	_, out := startWatcher(t, dir)

	var u *widgets.UI
	var win *pygi.Object
	var watches []*widgets.Watch
	clicks := 0
	looptest.Do(t, func(t testing.TB) {
		var err error
		u, err = widgets.LoadUIFS(os.DirFS(dir), "reload_panel.ui", map[string]any{
			"on_go": func(*pygi.Object) { clicks++ },
		})
		require.NoError(t, err)
		panel, err := u.Object("panel")
		require.NoError(t, err)
		defer panel.Close()
		g, err := pygi.NewGlobals()
		require.NoError(t, err)
		defer g.Close()
		require.NoError(t, g.SetItem("panel", panel.Object))
		require.NoError(t, pygi.Exec(`from gi.repository import Gtk
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
box.append(Gtk.Label(label="before"))
box.append(panel)
box.append(Gtk.Label(label="after"))
win = Gtk.Window(child=box)
win.present()
`, g))
		win, err = pygi.Eval("win", g)
		require.NoError(t, err)
		for _, id := range []string{"panel", "label", "button"} {
			o, err := u.Object(id)
			require.NoError(t, err)
			w, err := widgets.WatchFinalize(o)
			require.NoError(t, err)
			o.Close()
			watches = append(watches, w)
		}
	})
	t.Cleanup(func() {
		looptest.Do(t, func(t testing.TB) {
			_, err := win.CallMethod("destroy")
			assert.NoError(t, err)
			win.Close()
		})
	})

	looptest.Do(t, func(t testing.TB) {
		res, err := reload.Now("ui:reload_panel.ui", strings.Replace(panelUI, "old text", "new text", 1), out)
		require.NoError(t, err)
		assert.Equal(t, reload.Applied, res.Outcome, res.Line)
		assert.Equal(t, 1, res.Objects)
		assert.Equal(t, "duet reload: reload_panel.ui: applied (1 object rebuilt)", res.Line)

		assert.Equal(t, "new text", uiText(t, u, "label"))
		panel, err := u.Object("panel")
		require.NoError(t, err)
		defer panel.Close()
		assert.Equal(t, []string{"before", "new text", "after"}, py[[]string](t,
			`[w.get_label() if isinstance(w, Gtk.Label) else w.get_first_child().get_label() for w in win.get_child()]`,
			map[string]*pygi.Object{"win": win, "Gtk": Gtk(t)}))
		assert.True(t, py[bool](t, "panel.get_parent() is win.get_child()", map[string]*pygi.Object{"win": win, "panel": panel.Object}))

		button, err := u.Object("button")
		require.NoError(t, err)
		defer button.Close()
		_, err = button.Emit("clicked")
		require.NoError(t, err)
		assert.Equal(t, 1, clicks, "the Go handler runs on the new button")
	})
	assert.True(t, finalized(t, watches...), "the old panel, label and button are finalised")
}

// A change that names a handler with no Go func, or no longer names one
// that has one, is said as LoadUI says it, and the old interface stays; so
// does XML that does not parse, or names a class that does not exist.
func TestReloadUIHandlerMismatchKeepsOldUI(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reload_mismatch.ui"), []byte(panelUI), 0o644))
	_, out := startWatcher(t, dir)
	looptest.Do(t, func(t testing.TB) {
		u, err := widgets.LoadUIFS(os.DirFS(dir), "reload_mismatch.ui", map[string]any{"on_go": func() {}})
		require.NoError(t, err)
		panel, err := u.Object("panel")
		require.NoError(t, err)
		defer panel.Close()
		win, err := Gtk(t).CallMethod("Window", pygi.Kw{"child": panel.Object})
		require.NoError(t, err)
		defer func() { win.CallMethod("destroy"); win.Close() }()
		_, err = win.CallMethod("present")
		require.NoError(t, err)
		builder := u.Builder

		for src, why := range map[string]string{
			strings.Replace(panelUI, `handler="on_go"`, `handler="on_stop"`, 1):         "the interface names handlers with no Go func: on_stop; Go funcs the interface never names: on_go",
			strings.Replace(panelUI, `<signal name="clicked" handler="on_go"/>`, "", 1): "Go funcs the interface never names: on_go",
			strings.Replace(panelUI, "</interface>", "", 1):                             "xml.etree.ElementTree.ParseError: no element found: line 15, column 0",
			strings.Replace(panelUI, "GtkLabel", "GtkNoSuchLabel", 1):                   "gi.repository.GLib.GError: gtk-builder-error-quark: .:5:1 Invalid object type 'GtkNoSuchLabel'",
		} {
			res, err := reload.Now("ui:reload_mismatch.ui", strings.Replace(src, "old text", "new text", 1), out)
			require.NoError(t, err)
			assert.Equal(t, reload.KeptOld, res.Outcome)
			assert.True(t, strings.HasPrefix(res.Error, why), "%s\nis not\n%s...", res.Error, why)
			assert.True(t, strings.HasPrefix(res.Line, "duet reload: reload_mismatch.ui: kept the old code: "+why), res.Line)
			assert.Same(t, builder, u.Builder)
			assert.Equal(t, "old text", uiText(t, u, "label"))
			// In development mode the window shows the error in a banner
			// over the panel.
			assert.True(t, py[bool](t, "win.get_child().get_child() is panel and bool(__import__('duet_reload_banner').text(win))",
				map[string]*pygi.Object{"win": win, "panel": panel.Object}))
		}
	})
}

const windowUI = `<interface>
  <object class="GtkWindow" id="win">
    <property name="title">reload</property>
    <child>
      <object class="GtkLabel" id="label">
        <property name="label">old text</property>
      </object>
    </child>
  </object>
</interface>`

// A shown window stays the window the app shows (what Go holds of it stays
// good): its child is the new window's, and UI.Object gives that same
// window; the old child is finalised. The change here comes through the
// watcher: the file saved on disk.
func TestReloadUIShownWindowThroughWatcher(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "reload_window.ui")
	require.NoError(t, os.WriteFile(path, []byte(windowUI), 0o644))
	_, out := startWatcher(t, dir)
	var u *widgets.UI
	var win *widgets.Widget
	var oldLabel *widgets.Watch
	looptest.Do(t, func(t testing.TB) {
		var err error
		u, err = widgets.LoadUIFS(os.DirFS(dir), "reload_window.ui", nil)
		require.NoError(t, err)
		win, err = u.Object("win")
		require.NoError(t, err)
		_, err = win.CallMethod("present")
		require.NoError(t, err)
		l, err := u.Object("label")
		require.NoError(t, err)
		oldLabel, err = widgets.WatchFinalize(l)
		require.NoError(t, err)
		l.Close()
	})
	t.Cleanup(func() {
		looptest.Do(t, func(t testing.TB) {
			win.CallMethod("destroy")
			win.Close()
		})
	})
	r := &reloading{t: t, out: out}
	r.waitWatching("reload_window.ui")

	tmp := path + ".tmp~"
	require.NoError(t, os.WriteFile(tmp, []byte(strings.Replace(windowUI, "old text", "new text", 1)), 0o644))
	require.NoError(t, os.Rename(tmp, path))
	r.waitOut("duet reload: reload_window.ui: applied (1 object rebuilt)")

	looptest.Do(t, func(t testing.TB) {
		assert.Equal(t, "new text", uiText(t, u, "label"))
		w, err := u.Object("win")
		require.NoError(t, err)
		defer w.Close()
		assert.True(t, py[bool](t, "a is b and a.get_visible()", map[string]*pygi.Object{"a": w.Object, "b": win.Object}))
		l, err := u.Object("label")
		require.NoError(t, err)
		defer l.Close()
		assert.True(t, py[bool](t, "win.get_child() is l", map[string]*pygi.Object{"win": win.Object, "l": l.Object}))
	})
	assert.True(t, finalized(t, oldLabel), "the old label is finalised")
}

// The banner: a syntax error shows the error line over each visible
// window's content, and over a window made and shown while it stands; the
// fix takes it away and the windows' children are the app's again.
func TestReloadBannerShowsTheError(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "reload_banner.py")
	require.NoError(t, os.WriteFile(path, []byte("def f():\n    return 1\n"), 0o644))
	var mod *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		var err error
		mod, err = widgets.LoadFile(path)
		require.NoError(t, err)
	})
	_, out := startWatcher(t, dir)
	vars := map[string]*pygi.Object{}
	window := func(t testing.TB, name string) {
		G := Gtk(t)
		child, err := G.CallMethod("Label", pygi.Kw{"label": "the app's"})
		require.NoError(t, err)
		win, err := G.CallMethod("Window", pygi.Kw{"child": child})
		require.NoError(t, err)
		_, err = win.CallMethod("present")
		require.NoError(t, err)
		vars[name], vars[name+"_child"] = win, child
	}
	t.Cleanup(func() {
		looptest.Do(t, func(t testing.TB) {
			for _, name := range []string{"win", "late"} {
				if w := vars[name]; w != nil {
					w.CallMethod("destroy")
				}
			}
			for _, o := range vars {
				o.Close()
			}
		})
	})
	const banner = "__import__('duet_reload_banner').text(%s)"
	looptest.Do(t, func(t testing.TB) {
		window(t, "win")
		res, err := reload.Now(mod.Name, "def f(:\n    return 2\n", out)
		require.NoError(t, err)
		require.Equal(t, reload.KeptOld, res.Outcome)
		lines := py[[]string](t, fmt.Sprintf(banner, "win"), vars)
		require.Len(t, lines, 1)
		assert.Contains(t, lines[0], "duet reload: reload_banner.py: kept the old code: SyntaxError")
		assert.NotContains(t, lines[0], "traceback follows")
		assert.True(t, py[bool](t, "win.get_child().get_child() is win_child", vars), "the app's child is in the banner's overlay")
		window(t, "late")
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		var lines []string
		looptest.Do(t, func(t testing.TB) { lines = py[[]string](t, fmt.Sprintf(banner, "late")+" or []", vars) })
		if len(lines) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the window made while the error stands never showed the banner")
		}
		time.Sleep(5 * time.Millisecond)
	}
	looptest.Do(t, func(t testing.TB) {
		res, err := reload.Now(mod.Name, "def f():\n    return 3\n", out)
		require.NoError(t, err)
		require.Equal(t, reload.Applied, res.Outcome)
		for _, name := range []string{"win", "late"} {
			assert.True(t, py[bool](t, fmt.Sprintf(banner, name)+" is None and "+name+".get_child() is "+name+"_child", vars), name)
		}
	})
}

const labelsUI = `<interface>
  <object class="GtkLabel" id="in_grid"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_paned"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_stack"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_scrolled"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_center"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_overlay"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_expander"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_list"><property name="label">old</property></object>
  <object class="GtkLabel" id="in_notebook"><property name="label">old</property></object>
  <object class="GtkLabel" id="unplaced"><property name="label">old</property></object>
</interface>`

// Where the app put the interface's objects, in each kind of container a
// reload knows, the new ones are put at the same place; in a notebook
// (which it does not know) the old one stays, said as needing a restart.
func TestReloadUIPutsBackInEachContainer(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reload_labels.ui"), []byte(labelsUI), 0o644))
	_, out := startWatcher(t, dir)
	looptest.Do(t, func(t testing.TB) {
		u, err := widgets.LoadUIFS(os.DirFS(dir), "reload_labels.ui", nil)
		require.NoError(t, err)
		g, err := pygi.NewGlobals()
		require.NoError(t, err)
		defer g.Close()
		get := func(id string) *pygi.Object {
			o, err := u.Object(id)
			require.NoError(t, err)
			return o.Object
		}
		for _, id := range []string{"in_grid", "in_paned", "in_stack", "in_scrolled", "in_center", "in_overlay", "in_expander", "in_list", "in_notebook", "unplaced"} {
			require.NoError(t, g.SetItem(id, get(id)))
		}
		require.NoError(t, pygi.Exec(`from gi.repository import Gtk
grid = Gtk.Grid()
grid.attach(Gtk.Label(label="corner"), 0, 0, 1, 1)
grid.attach(in_grid, 1, 2, 2, 1)
paned = Gtk.Paned(start_child=Gtk.Label(label="start"), end_child=in_paned)
stack = Gtk.Stack()
stack.add_named(Gtk.Label(label="first"), "first")
stack.add_titled(in_stack, "page", "Page")
stack.set_visible_child(in_stack)
scrolled = Gtk.ScrolledWindow(child=in_scrolled)
center = Gtk.CenterBox()
center.set_center_widget(in_center)
overlay = Gtk.Overlay(child=Gtk.Label(label="under"))
overlay.add_overlay(in_overlay)
expander = Gtk.Expander(child=in_expander, expanded=True)  # folded, its child is in no tree
listbox = Gtk.ListBox()
listbox.append(Gtk.Label(label="row 0"))
listbox.append(in_list)
notebook = Gtk.Notebook()
notebook.append_page(in_notebook)
box = Gtk.Box()
for w in (grid, paned, stack, scrolled, center, overlay, expander, listbox, notebook):
    box.append(w)
win = Gtk.Window(child=box)
win.present()
`, g))
		defer pygi.Exec("win.destroy()", g)
		for _, id := range []string{"in_grid", "in_paned", "in_stack", "in_scrolled", "in_center", "in_overlay", "in_expander", "in_list", "in_notebook", "unplaced"} {
			require.NoError(t, pygi.Exec("del "+id, g))
		}

		res, err := reload.Now("ui:reload_labels.ui", strings.ReplaceAll(labelsUI, ">old<", ">new<"), out)
		require.NoError(t, err)
		assert.Equal(t, reload.Restart, res.Outcome, res.Line)
		assert.Equal(t, 8, res.Objects)
		assert.Equal(t, []string{"in_notebook: in a GtkNotebook, which a reload cannot put a new child in: the old one stays"}, res.Restart)
		assert.Equal(t, "duet reload: reload_labels.ui: applied (8 objects rebuilt); restart needed: in_notebook: in a GtkNotebook, which a reload cannot put a new child in: the old one stays", res.Line)

		for _, id := range []string{"in_grid", "in_paned", "in_stack", "in_scrolled", "in_center", "in_overlay", "in_expander", "in_list", "in_notebook", "unplaced"} {
			require.NoError(t, g.SetItem(id, get(id)))
		}
		for expr, want := range map[string]any{
			"in_grid.get_label(), tuple(grid.query_child(in_grid))":                          []any{"new", []any{int64(1), int64(2), int64(2), int64(1)}},
			"paned.get_end_child() is in_paned and in_paned.get_label() == 'new'":            true,
			"stack.get_visible_child() is in_stack and stack.get_page(in_stack).get_title()": "Page",
			"in_scrolled.get_parent().get_parent() is scrolled and in_scrolled.get_label()":  "new",
			"center.get_center_widget() is in_center and in_center.get_label()":              "new",
			"in_overlay.get_parent() is overlay and overlay.get_child().get_label()":         "under",
			"expander.get_child() is in_expander and in_expander.get_label()":                "new",
			"listbox.get_row_at_index(1).get_child() is in_list and in_list.get_label()":     "new",
			"notebook.page_num(in_notebook) == -1 and notebook.get_nth_page(0).get_label()":  "old",
			"unplaced.get_label()": "new",
		} {
			o, err := pygi.Eval(expr, g)
			require.NoError(t, err, expr)
			got, err := pygi.As[any](o)
			require.NoError(t, err)
			o.Close()
			if w, ok := want.([]any); ok {
				assert.Equal(t, w, got, expr)
			} else {
				assert.Equal(t, want, got, expr)
			}
		}
	})
}
