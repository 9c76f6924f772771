package explore_test

import (
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

// laterWindow is window's toplevel shown only after delay (a program
// whose window takes its time to come up), from a timeout of the loop's;
// the function returned destroys it.
func laterWindow(t *testing.T, title, src string, delay time.Duration) func() {
	t.Helper()
	var g *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		var b pygi.Block
		g = b.Globals(pygi.Kw{"title": title, "delay": int(delay / time.Millisecond)})
		// A window shown and gone first: GTK's first window in the process
		// warns that it found no accessibility bus, which a run under way
		// would take for a finding.
		b.Exec(`from gi.repository import Gtk, GLib
first = Gtk.Window()
first.present()
first.destroy()
state = {"win": None}
def show():
    win = Gtk.Window(title=title)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
    win.set_child(box)
`+indent(src, "    ")+`
    state["win"] = win
    win.present()
    return False
GLib.timeout_add(delay, show)
`, g)
		require.NoError(t, b.Err())
	})
	return func() {
		looptest.Do(t, func(t testing.TB) {
			assert.NoError(t, pygi.Exec(`if state["win"] is not None: state["win"].destroy()`, g))
		})
	}
}

// indent puts prefix before each line of src.
func indent(src, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSpace(src), "\n", "\n"+prefix)
}

// A step that finds nothing to act on draws nothing: the same seed takes
// the same actions on a program whose window comes up after 10 ms in one
// run and after 400 ms in the other (the number of passes that found no
// window differs by hundreds).
func TestSameSeedWhateverTheWait(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	trace := func(delay time.Duration) []string {
		defer laterWindow(t, "late", everyKind, delay)()
		rep := run(t, explore.Options{Seed: 12, Actions: 40, LeakRounds: -1})
		require.Empty(t, rep.Findings, "%s", rep)
		require.Len(t, rep.Trace, 40)
		var words []string
		for _, a := range rep.Trace {
			words = append(words, a.Verb+" "+a.Address+" "+a.Value)
		}
		return words
	}
	assert.Equal(t, trace(10*time.Millisecond), trace(400*time.Millisecond))
}

// A replay's first action waits for the program to come up (up to Hang),
// not only ReplayWait: a fresh process on a loaded machine may take
// seconds to show its window, and a replay that gave up would say that a
// trace does not reproduce. Once a window is up, a missing address is
// said after ReplayWait.
func TestReplayWaitsForTheProgramToComeUp(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	var recorded []explore.Action
	func() {
		defer laterWindow(t, "slow", everyKind, 10*time.Millisecond)()
		rep := run(t, explore.Options{Seed: 3, Actions: 5, LeakRounds: -1})
		require.Len(t, rep.Trace, 5, "%s", rep)
		recorded = rep.Trace
	}()
	func() {
		defer laterWindow(t, "slow", everyKind, 1500*time.Millisecond)()
		rep := run(t, explore.Options{Replay: recorded, ReplayWait: 200 * time.Millisecond, LeakRounds: -1})
		assert.Empty(t, rep.ReplayError)
		assert.Len(t, rep.Trace, 5, "%s", rep)
	}()
	func() {
		defer laterWindow(t, "other", everyKind, 10*time.Millisecond)()
		began := time.Now()
		rep := run(t, explore.Options{Replay: recorded, ReplayStrict: true, ReplayWait: 200 * time.Millisecond, LeakRounds: -1})
		assert.Contains(t, rep.ReplayError, "recorded action 1")
		assert.Less(t, time.Since(began), 5*time.Second, "a window is up: the address is missing, no need to wait for Hang")
	}()
}
