package explore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// Two leaks are the same trouble when the same thing leaked, whatever the
// counts: a unit check of Same on messages as the census writes them.
func TestSameLeak(t *testing.T) {
	leak := func(what string, from, to int) *explore.Finding {
		return &explore.Finding{Kind: explore.KindLeak, Message: what + " grew at each of 4 censuses, 5 or more actions apart: " + itoa(from) + " → " + itoa(to)}
	}
	bytes := `Python objects Go holds, of type "bytearray"`
	labels := `GObjects of type "GtkLabel"`
	assert.True(t, leak(bytes, 3, 23).Same(leak(bytes, 40, 48)), "the counts differ, the leak does not")
	assert.True(t, leak(labels, 1, 9).Same(leak(labels, 2, 5)))
	assert.False(t, leak(bytes, 3, 23).Same(leak(labels, 3, 23)), "another type is another leak")
	assert.False(t, leak(`GObjects of type "GtkButton"`, 1, 9).Same(leak(labels, 1, 9)))
	cb := leak(`live Go callback "on_keep"`, 1, 9)
	cb.Where = "main.go:10"
	other := leak(`live Go callback "on_keep"`, 2, 7)
	other.Where = "main.go:12"
	assert.False(t, cb.Same(other), "a callback made elsewhere is another leak")
	other.Where = cb.Where
	assert.True(t, cb.Same(other))
}

func itoa(n int) string { return fmt.Sprint(n) }

// A leak found, then replayed from a shorter trace that still leaks (two
// clicks of the leaking button before a pause left out, as shrinking
// leaves out what is not needed): the counts in the message change, the
// finding is the same one. Once for Python objects Go holds (by type),
// once for GObjects duet watches (by GType).
func TestShrunkLeakIsTheSame(t *testing.T) {
	var kept []*pygi.Object
	t.Cleanup(func() {
		for _, o := range kept {
			o.Close()
		}
	})
	const src = `hoard = []
k = Gtk.Button(label="keep"); k.connect("clicked", on_keep); box.append(k)
box.append(Gtk.Button(label="idle"))`
	for _, tc := range []struct {
		name, what string
		keep       func(b *pygi.Object)
	}{
		{"python objects", `Python objects Go holds, of type "bytearray"`, func(*pygi.Object) {
			if o, err := pygi.Eval("bytearray(1)", nil); err == nil {
				kept = append(kept, o)
			}
		}},
		{"gobjects", `GObjects of type "GtkLabel"`, func(*pygi.Object) {
			// A label Python keeps (in hoard) and duet watches: the
			// census counts it by its GType.
			var b pygi.Block
			label := b.CallMethod(b.Import("gi.repository.Gtk"), "Label")
			b.CallMethod(b.Item(lastGlobals, "hoard"), "append", label)
			if err := b.Err(); err == nil {
				if _, err := widgets.WatchFinalize(label); err != nil {
					t.Error(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			title := "leak " + tc.name
			click := func(label string, i int) explore.Action {
				return explore.Action{Verb: "click", Label: label, Address: fmt.Sprintf("window '%s' > GtkBox#0 'group' > GtkButton#%d '%s'", title, i, label)}
			}
			keep, idle := click("keep", 0), click("idle", 1)
			// A census every 2 actions, a leak after 3 growths in a row:
			// the first two keeps grow nothing at the census after
			// them, the run of keeps after the pause does.
			trace := []explore.Action{keep, keep, idle, idle, idle, idle}
			for range 8 {
				trace = append(trace, keep)
			}
			opts := explore.Options{LeakEvery: 2, LeakRounds: 3}
			replay := func(trace []explore.Action, expect *explore.Finding) *explore.Report {
				win := window(t, title, src, pygi.Kw{"on_keep": tc.keep})
				defer destroy(t, win)
				opts := opts
				opts.Replay, opts.Expect = trace, expect
				rep := run(t, opts)
				assert.Empty(t, rep.ReplayError)
				return rep
			}
			rep := replay(trace, nil)
			require.Len(t, rep.Findings, 1, "%s", rep)
			f := rep.Findings[0]
			require.Equal(t, explore.KindLeak, f.Kind, "%s", rep)
			assert.Contains(t, f.Message, tc.what)

			shrunk := f.Trace[2:]
			again := replay(shrunk, f)
			require.NotEmpty(t, again.Findings, "%s", again)
			assert.NotEqual(t, f.Message, again.Findings[0].Message, "the counts differ")
			assert.Less(t, len(again.Findings[0].Trace), len(f.Trace))
			assert.True(t, again.Reproduced, "the same leak: %s\nrecorded: %s", again, f)
		})
	}
}

// What the program's Python holds is counted too: GObjects Python keeps a
// wrapper of (a list of labels no Go code knows of), by GType, and the
// instances of the program's own Python classes, by class.
func TestLeaksPythonHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memo.py")
	require.NoError(t, os.WriteFile(path, []byte(`import collections, weakref
from gi.repository import Gtk
labels, memos = [], []

class Memo:
    pass

# What the census cannot read is left out, not the census: a weak proxy
# of a widget (isinstance sees the widget through it), a class whose
# __class__ raises.
class Odd:
    @property
    def __class__(self):
        raise RuntimeError("no class")

keep_alive = Gtk.Label()
odd = [weakref.proxy(keep_alive), Odd()]

# A bounded history of the program's own objects is no leak once it is
# full; while it fills, it grows as one: the last 20 entries, over twice
# the censuses a leak of Go's needs.
class Entry:
    pass

recent = collections.deque(maxlen=20)

def keep_label(button):
    labels.append(Gtk.Label(label="kept"))

def keep_memo(button):
    memos.append(Memo())

def keep_recent(button):
    recent.append(Entry())
`), 0o644))
	var mod *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		var err error
		mod, err = widgets.LoadFile(path)
		require.NoError(t, err)
	})
	for _, tc := range []struct{ handler, what string }{
		{"keep_label", `GObjects Python holds, of type "GtkLabel"`},
		{"keep_memo", `instances of the Python class "` + mod.Name + `.Memo"`},
		{"keep_recent", ""},
	} {
		t.Run(tc.handler, func(t *testing.T) {
			window(t, "hold "+tc.handler, `b = Gtk.Button(label="keep"); b.connect("clicked", handler); box.append(b)`,
				pygi.Kw{"handler": mustAttr(t, mod.Object, tc.handler)})
			rep := run(t, explore.Options{Seed: 1, Actions: 400, LeakEvery: 5, LeakRounds: 3})
			if tc.what == "" {
				assert.Empty(t, rep.Findings, "%s", rep)
				return
			}
			require.NotEmpty(t, rep.Findings, "%s", rep)
			f := rep.Findings[0]
			assert.Equal(t, explore.KindLeak, f.Kind, "%s", rep)
			assert.Contains(t, f.Message, tc.what)
		})
	}
}

func mustAttr(t *testing.T, o *pygi.Object, name string) *pygi.Object {
	t.Helper()
	var a *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		var err error
		a, err = o.Attr(name)
		require.NoError(t, err)
	})
	return a
}
