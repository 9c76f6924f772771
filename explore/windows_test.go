package explore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
)

// A window whose title counts its button's clicks (a document window
// that says its file's name): a trace recorded while it read "clicks 0"
// replays when it reads otherwise, the window found by its type and
// index, the button below it by its structure.
const titled = `
n = {"v": start}
win.set_title("clicks %d" % start)
def on_count(b):
    n["v"] += 1
    win.set_title("clicks %d" % n["v"])
c = Gtk.Button(label="count"); c.connect("clicked", on_count); box.append(c)
box.append(Gtk.Entry())
`

func TestWindowTitleChanges(t *testing.T) {
	first := window(t, "clicks", titled, pygi.Kw{"start": 0})
	rep := run(t, explore.Options{Seed: 2, Actions: 30, LeakRounds: -1})
	require.Empty(t, rep.Findings, "%s", rep)
	titles := map[string]bool{}
	for _, a := range rep.Trace {
		titles[a.Window] = true
		assert.Equal(t, "GtkWindow#0", a.WindowKey, "%s", a)
	}
	require.Greater(t, len(titles), 3, "the title changed: %v", titles)
	destroy(t, first)

	win := window(t, "clicks", titled, pygi.Kw{"start": 700})
	again := run(t, explore.Options{Replay: rep.Trace, LeakRounds: -1, ReplayWait: 200 * time.Millisecond})
	assert.Empty(t, again.ReplayError)
	require.Equal(t, len(rep.Trace), again.Replayed)
	clicks := 0
	for i, a := range again.Trace {
		assert.Equal(t, rep.Trace[i].Verb, a.Verb)
		assert.Equal(t, rep.Trace[i].Value, a.Value)
		assert.Equal(t, fmt.Sprintf("clicks %d", 700+clicks), a.Window, "found by its key")
		if a.Label == "count" {
			clicks++
		}
	}
	assert.Equal(t, fmt.Sprint(700+clicks), pyEval(t, `n["v"]`))
	destroy(t, win)

	// The key must match: another type's window is no fallback.
	window(t, "clicks", titled, pygi.Kw{"start": 0})
	a := rep.Trace[0]
	a.Address = strings.Replace(a.Address, "window 'clicks 0'", "window 'gone'", 1)
	a.WindowKey = "GtkApplicationWindow#0"
	wrong := run(t, explore.Options{Replay: []explore.Action{a}, LeakRounds: -1, ReplayWait: 100 * time.Millisecond})
	assert.Contains(t, wrong.ReplayError, "nothing to")
}

// A window that closes itself (a toast) soon after it opens: a replay in
// which it closed before the recorded action on it is a replay error (the
// UI changed), which is no finding, and nothing is done in another window
// instead.
const toast = `from gi.repository import GLib
win.set_deletable(False)
toasts = []
def on_open(button):
    t = Gtk.Window(title="toast", deletable=False)
    ok = Gtk.Button(label="ok"); ok.connect("clicked", on_ok); t.set_child(ok)
    toasts.append(t)
    t.present()
    GLib.timeout_add(life, lambda: t.destroy() or False)
b = Gtk.Button(label="open"); b.connect("clicked", on_open); box.append(b)
`

func TestSelfClosingWindow(t *testing.T) {
	oks := 0
	handlers := func(life int) pygi.Kw {
		return pygi.Kw{"life": life, "on_ok": func(*pygi.Object) { oks++ }}
	}
	cleanup := func() {
		g := lastGlobals
		looptest.Do(t, func(t testing.TB) {
			assert.NoError(t, pygi.Exec(`for t in toasts: t.destroy()`, g))
		})
	}
	open := explore.Action{Verb: "click", Label: "open", Window: "toast app", WindowKey: "GtkWindow#0",
		Address: "window 'toast app' > GtkBox#0 'group' > GtkButton#0 'open'"}
	ok := explore.Action{Verb: "click", Label: "ok", Window: "toast", WindowKey: "GtkWindow#1",
		Address: "window 'toast' > GtkButton#0 'ok'"}
	trace := []explore.Action{open, ok, open, ok}

	// The toast lives long enough: the trace replays.
	win := window(t, "toast app", toast, handlers(60000))
	rep := run(t, explore.Options{Replay: trace, LeakRounds: -1, ReplayWait: 300 * time.Millisecond})
	assert.Empty(t, rep.ReplayError)
	assert.Empty(t, rep.Findings, "%s", rep)
	assert.Equal(t, 2, oks)
	cleanup()
	destroy(t, win)

	// It closes at once: the ok recorded in it finds nothing.
	oks = 0
	window(t, "toast app", toast, handlers(0))
	defer cleanup()
	rep = run(t, explore.Options{Replay: trace, LeakRounds: -1, ReplayWait: 300 * time.Millisecond})
	assert.Contains(t, rep.ReplayError, "recorded action 2")
	assert.Contains(t, rep.ReplayError, "nothing to click")
	assert.Empty(t, rep.Findings, "%s", rep)
	assert.Equal(t, 1, rep.Replayed, "the open only")
	assert.Zero(t, oks)
}
