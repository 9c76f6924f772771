package widgets_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

const fancySource = `
from gi.repository import GObject, Gtk
class Fancy(Gtk.Box):
    __gtype_name__ = "DuetFancyBox"
    __gsignals__ = {"poked": (GObject.SignalFlags.RUN_LAST, None, (int,))}
`

const fancyUI = `<interface>
  <object class="GtkBox" id="root">
    <child>
      <object class="DuetFancyBox" id="fancy">
        <signal name="poked" handler="on_poked"/>
      </object>
    </child>
    <child>
      <object class="GtkButton" id="button">
        <property name="label">press</property>
        <signal name="clicked" handler="on_clicked" object="fancy"/>
      </object>
    </child>
  </object>
</interface>`

func TestLoadUIBindsHandlersToGoFuncs(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	looptest.Do(t, func(t testing.TB) {
		_, err := widgets.LoadSource("fancy_widgets", fancySource)
		require.NoError(t, err)
		var poked []int
		var pressed []string
		ui, err := widgets.LoadUI(fancyUI, map[string]any{
			"on_poked": func(self *pygi.Object, n int) { poked = append(poked, n) },
			// object="fancy", swapped as GtkBuilder makes it: the object first, the emitter last
			"on_clicked": func(fancy, button *pygi.Object) {
				t, _ := fancy.TypeName()
				pressed = append(pressed, t)
			},
		})
		require.NoError(t, err)
		fancy, err := ui.Object("fancy")
		require.NoError(t, err)
		_, err = fancy.Emit("poked", 7)
		require.NoError(t, err)
		button, err := ui.Object("button")
		require.NoError(t, err)
		_, err = button.Emit("clicked")
		require.NoError(t, err)
		assert.Equal(t, []int{7}, poked)
		assert.Equal(t, []string{"Fancy"}, pressed)
		_, err = ui.Object("nobody")
		assert.ErrorContains(t, err, `no object "nobody"`)
	})
}

func TestLoadUIErrors(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		_, err := widgets.LoadSource("fancy_widgets2", fancySource)
		require.Error(t, err, "the GType name is taken: loading twice is refused by PyGObject")
		noop := func() {}
		for name, tc := range map[string]struct {
			handlers map[string]any
			xml      string
			want     string
		}{
			"missing":       {map[string]any{"on_poked": noop}, fancyUI, "no Go func: on_clicked"},
			"mistyped":      {map[string]any{"on_poked": noop, "on_clicked": noop, "on_clikced": noop}, fancyUI, "never names: on_clikced"},
			"malformed":     {nil, "<interface><object", "ParseError"},
			"unknown class": {nil, `<interface><object class="NoSuchWidgetClass" id="x"/></interface>`, "NoSuchWidgetClass"},
		} {
			_, err := widgets.LoadUI(tc.xml, tc.handlers)
			assert.ErrorContains(t, err, tc.want, name)
		}
	})
	_, err := widgets.LoadUI(fancyUI, nil)
	assert.ErrorIs(t, err, eventloop.ErrNotMain)
}

// The census names a handler LoadUI bound as the interface names it, and
// sites it where the Go func is.
func TestLoadUIHandlersAreNamedInTheCensus(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	looptest.Do(t, func(t testing.TB) {
		ui, err := widgets.LoadUI(`<interface>
  <object class="GtkButton" id="save"><signal name="clicked" handler="on_save_clicked"/></object>
  <object class="GtkButton" id="quit"><signal name="clicked" handler="on_quit_clicked" object="save"/></object>
</interface>`, map[string]any{
			"on_save_clicked": func(*pygi.Object) {},
			"on_quit_clicked": func(_, _ *pygi.Object) {},
		})
		require.NoError(t, err)
		sites := map[string]string{}
		for _, l := range diag.CallbackCensus.Read() {
			sites[l.Name] = l.Site
		}
		for _, name := range []string{"on_save_clicked", "on_quit_clicked"} {
			if assert.Contains(t, sites, name, "live: %v", sites) {
				assert.Contains(t, sites[name], "widgets/ui_test.go:")
			}
		}
		runtime.KeepAlive(ui)

		_, err = widgets.LoadUI(`<interface><object class="GtkButton"><signal name="clicked" handler="h"/></object></interface>`,
			map[string]any{"h": "not a func"})
		assert.ErrorContains(t, err, "handler h: callbacks: want a non-nil func, got string")
	})
}

// A handler in a list item factory's template (an interface inside the
// interface, built for each item later) is bound like the others, and
// checked by name when the interface loads.
func TestLoadUIBindsHandlersOfFactoryTemplates(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const xml = `<interface>
  <object class="GtkWindow" id="win">
    <property name="default-width">200</property>
    <property name="default-height">200</property>
    <child>
      <object class="GtkListView" id="list">
        <property name="factory">
          <object class="GtkBuilderListItemFactory">
            <property name="bytes"><![CDATA[
<interface>
  <template class="GtkListItem">
    <property name="child">
      <object class="GtkButton">
        <property name="label">item</property>
        <signal name="clicked" handler="on_item_clicked"/>
      </object>
    </property>
  </template>
</interface>
]]></property>
          </object>
        </property>
      </object>
    </child>
  </object>
</interface>`
	clicked := 0
	var win, g *pygi.Object
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		var err error
		g, err = pygi.NewGlobals()
		require.NoError(t, err)
		require.NoError(t, pygi.Exec(`
def buttons(w):
    out, stack = [], [w]
    while stack:
        c = stack.pop().get_first_child()
        while c is not None:
            if type(c).__name__ == "Button":
                out.append(c)
            stack.append(c)
            c = c.get_next_sibling()
    return out
`, g))
		_, err = widgets.LoadUI(xml, map[string]any{})
		assert.ErrorContains(t, err, "on_item_clicked", "the template's handler is named")
		ui, err := widgets.LoadUI(xml, map[string]any{"on_item_clicked": func(*pygi.Object) { clicked++ }})
		require.NoError(t, err)
		list, err := ui.Object("list")
		require.NoError(t, err)
		model, err := pygi.Eval("__import__('gi.repository.Gtk', fromlist=['Gtk']).NoSelection.new(__import__('gi.repository.Gtk', fromlist=['Gtk']).StringList.new(['a', 'b']))", nil)
		require.NoError(t, err)
		_, err = list.CallMethod("set_model", model)
		require.NoError(t, err)
		w, err := ui.Object("win")
		require.NoError(t, err)
		win = w.Object
		require.NoError(t, g.SetItem("win", win))
		_, err = win.CallMethod("present")
		require.NoError(t, err)
	})
	require.Eventually(t, func() bool {
		n := 0
		looptest.Do(t, func(t testing.TB) {
			r, err := pygi.Eval(`[b.emit("clicked") for b in buttons(win)]`, g)
			if err == nil {
				n, _ = r.Len()
			}
		})
		return n > 0
	}, 5*time.Second, 50*time.Millisecond, "the list made its items")
	assert.Positive(t, clicked, "the template's handler ran")
	looptest.Do(t, func(t testing.TB) { win.CallMethod("destroy") })
}
