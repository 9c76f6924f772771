package explore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
)

// A modal dialog up: GTK sends the input of every other window of its
// window group (the default group: the program's windows, transient for
// it or not) nowhere, so the explorer acts on the dialog alone; a window
// in a group of its own is not behind it.
func TestModalDialogBlocksTheRest(t *testing.T) {
	const src = `crash = Gtk.Button(label="crash"); crash.connect("clicked", on_crash); box.append(crash)
dialog = Gtk.Window(title="dialog", modal=True, transient_for=win, deletable=False)
dialog.set_child(Gtk.Button(label="ok"))
# A window with no transient relation, in the default group: blocked too.
loose = Gtk.Window(title="loose", deletable=False)
lb = Gtk.Button(label="loose crash"); lb.connect("clicked", on_crash); loose.set_child(lb)
# A window of another window group: the dialog's grab is not its.
apart = Gtk.Window(title="apart", deletable=False)
apart.set_child(Gtk.Button(label="apart"))
Gtk.WindowGroup().add_window(apart)
loose.present()
apart.present()
win.present()
dialog.present()`
	window(t, "behind", src, pygi.Kw{"on_crash": func(*pygi.Object) { panic("clicked behind a modal dialog") }})
	g := lastGlobals
	defer looptest.Do(t, func(t testing.TB) {
		assert.NoError(t, pygi.Exec("dialog.destroy(); loose.destroy(); apart.destroy()", g))
	})
	rep := run(t, explore.Options{Seed: 1, Actions: 60, LeakRounds: -1})
	require.Empty(t, rep.Findings, "%s", rep)
	windows := map[string]int{}
	for _, a := range rep.Trace {
		windows[a.Window]++
	}
	assert.Positive(t, windows["dialog"], "%v", windows)
	assert.Positive(t, windows["apart"], "%v", windows)
	assert.Len(t, windows, 2, "nothing behind the dialog: %v", windows)

	// The dialog gone, the windows behind it are a user's again.
	looptest.Do(t, func(t testing.TB) { assert.NoError(t, pygi.Exec("dialog.set_modal(False)", g)) })
	rep = run(t, explore.Options{Seed: 1, Actions: 60, LeakRounds: -1})
	require.NotEmpty(t, rep.Findings, "%s", rep)
	assert.Equal(t, explore.KindPanic, rep.Findings[0].Kind)
}
