package explore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
)

// A window's stateful actions, as a menu's radio items use them: the
// explorer gives each only values it is known to take (GLib checks none of
// them: a parameter out of them would become the state, and the handler,
// which trusts its menus, fail: a false alarm).
const radios = `from gi.repository import Gio, GLib
appwin = Gtk.ApplicationWindow(title="radios")
appwin.set_deletable(False)  # its actions stay: it is not closed
SIZES = ("small", "medium", "large")
def on_size(action, value):
    SIZES[value.get_int32()] if value.get_int32() >= 0 else SIZES[99]
    action.set_state(value)
# A radio: an int32 state, no hint (its values are in the program's menu).
size = Gio.SimpleAction.new_stateful("size", GLib.VariantType("i"), GLib.Variant("i", 1))
size.connect("change-state", on_size)
appwin.add_action(size)
# A state hint's range: 0 to 4.
def on_level(action, value):
    if not 0 <= value.get_int32() <= 4:
        raise ValueError("level %d" % value.get_int32())
    action.set_state(value)
level = Gio.SimpleAction.new_stateful("level", GLib.VariantType("i"), GLib.Variant("i", 2))
level.set_state_hint(GLib.Variant("(ii)", (0, 4)))
level.connect("change-state", on_level)
appwin.add_action(level)
# A state hint's enumeration of strings.
def on_mode(action, value):
    {"view": 0, "edit": 1}[value.get_string()]
    action.set_state(value)
mode = Gio.SimpleAction.new_stateful("mode", GLib.VariantType("s"), GLib.Variant("s", "view"))
mode.set_state_hint(GLib.Variant("as", ["view", "edit"]))
mode.connect("change-state", on_mode)
appwin.add_action(mode)
# No state: any int32 is the parameter's type's, as before.
seen = []
def on_jump(action, value):
    seen.append(value.get_int32())
jump = Gio.SimpleAction.new("jump", GLib.VariantType("i"))
jump.connect("activate", on_jump)
appwin.add_action(jump)
appwin.present()`

func TestActionParameters(t *testing.T) {
	window(t, "params", radios, nil)
	g := lastGlobals
	defer looptest.Do(t, func(t testing.TB) {
		assert.NoError(t, pygi.Exec(`appwin.destroy()`, g))
	})
	rep := run(t, explore.Options{Seed: 4, Actions: 200, LeakRounds: -1})
	require.Empty(t, rep.Findings, "%s", rep)
	require.Len(t, rep.Trace, 200, "%s", rep)
	values := map[string]map[string]bool{}
	for _, a := range rep.Trace {
		if a.Verb != "activate" {
			continue
		}
		if values[a.Label] == nil {
			values[a.Label] = map[string]bool{}
		}
		values[a.Label][a.Value] = true
	}
	assert.Equal(t, map[string]bool{"1": true}, values["win.size"], "a radio with no hint: its state, the one value known")
	require.NotEmpty(t, values["win.level"])
	for v := range values["win.level"] {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		assert.True(t, 0 <= n && n <= 4, "within the hint's range: %s", v)
	}
	assert.True(t, values["win.level"]["0"] && values["win.level"]["4"], "its extremes: %v", values["win.level"])
	assert.Equal(t, map[string]bool{"'view'": true, "'edit'": true}, values["win.mode"])
	assert.True(t, values["win.jump"]["2147483647"] || values["win.jump"]["-2147483648"], "without a state, the type's extremes as before: %v", values["win.jump"])
	assert.NotEqual(t, "[]", pyEval(t, "seen"))
	for _, a := range rep.Trace {
		assert.False(t, strings.Contains(a.Value, "refused"), "%s", a)
	}
}
