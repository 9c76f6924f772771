package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

const reloadUI = `<interface>
  <object class="GtkApplicationWindow" id="win">
    <child>
      <object class="GtkBox" id="box">
        <property name="orientation">vertical</property>
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
    </child>
  </object>
</interface>`

func init() {
	// An app whose window comes from a .ui file (LoadUIFS from an fs.FS,
	// the file on disk in Options.ReloadDir). The file is saved broken
	// (the banner shows the error), then fixed with a new label (the
	// banner goes, the label is the new one, the Go handler runs).
	children["reloadui"] = func() int {
		dir := os.Getenv("RELOAD_DIR")
		file := filepath.Join(dir, "reload_app.ui")
		a := mustNew(app.Options{ID: "org.duet.ReloadUI", NonUnique: true, Reload: true, ReloadDir: dir})
		must(a.OnActivate(func() {
			clicks := 0
			ui, err := widgets.LoadUIFS(fstest.MapFS{"reload_app.ui": {Data: []byte(reloadUI)}}, "reload_app.ui",
				map[string]any{"on_go": func(*pygi.Object) { clicks++ }})
			must(err)
			win, err := ui.Object("win")
			must(err)
			_, err = win.CallMethod("set_application", a.Python())
			must(err)
			_, err = win.CallMethod("present")
			must(err)
			// state reads, on the loop, the banner's lines, the label's
			// text through UI.Object and the Go handler's clicks after a
			// click of the button UI.Object gives.
			state := func() (banner []string, text string, n int) {
				must(eventloop.InvokeWait(context.Background(), func() error {
					g, err := pygi.NewGlobals()
					if err != nil {
						return err
					}
					defer g.Close()
					l, err := ui.Object("label")
					if err != nil {
						return err
					}
					defer l.Close()
					b, err := ui.Object("button")
					if err != nil {
						return err
					}
					defer b.Close()
					if _, err := b.Emit("clicked"); err != nil {
						return err
					}
					g.SetItem("win", win.Object)
					g.SetItem("label", l.Object)
					o, err := pygi.Eval("(__import__('duet_reload_banner').text(win) if 'duet_reload_banner' in __import__('sys').modules else None) or []", g)
					if err != nil {
						return err
					}
					defer o.Close()
					if banner, err = pygi.As[[]string](o); err != nil {
						return err
					}
					t, err := l.CallMethod("get_label")
					if err != nil {
						return err
					}
					text, err = pygi.As[string](t)
					n = clicks
					return err
				}))
				return
			}
			save := func(src string) {
				tmp := file + ".tmp~"
				must(os.WriteFile(tmp, []byte(src), 0o644))
				must(os.Rename(tmp, file))
			}
			// poll saves src until ok: the first save may come before the
			// watcher watches the file (saved again as it was, the file is
			// not reloaded twice).
			poll := func(src string, ok func([]string, string) bool) ([]string, string, int) {
				deadline := time.Now().Add(20 * time.Second)
				for i := 0; ; i++ {
					if i%40 == 0 {
						save(src)
					}
					b, text, n := state()
					if ok(b, text) || time.Now().After(deadline) {
						return b, text, n
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			go func() {
				defer a.Quit()
				b, text, _ := state()
				fmt.Printf("before: %q %q\n", b, text)
				var before int
				b, text, before = poll(strings.Replace(reloadUI, "</interface>", "", 1), func(b []string, _ string) bool { return len(b) > 0 })
				fmt.Printf("broken: %q %q\n", b, text)
				b, text, n := poll(strings.Replace(reloadUI, "old text", "new text", 1), func(b []string, text string) bool { return len(b) == 0 && text == "new text" })
				// The click of the state that read the new label was of the
				// new button (a reload runs between two events).
				fmt.Printf("fixed: %q %q, the Go handler ran: %v\n", b, text, n > before)
			}()
		}))
		return a.Run(context.Background(), prog)
	}
}

// A .ui file in an app in development mode: a broken save shows the
// error in a banner over the window and keeps the old interface; the fix
// takes the banner away and puts the new interface in the window, whose
// Go handler still runs.
func TestReloadUIInAnApp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reload_app.ui"), []byte(reloadUI), 0o644))
	r := runChild(t, "reloadui", nil, "RELOAD_DIR="+dir, "DUET_RELOAD=")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
	assert.Contains(t, r.out, `before: [] "old text"`)
	assert.Regexp(t, `broken: \["duet reload: reload_app.ui: kept the old code: [^"]*ParseError[^"]*"\] "old text"`, r.out)
	assert.Contains(t, r.out, `fixed: [] "new text", the Go handler ran: true`)
	assert.Regexp(t, `duet reload: watching /\S+/reload_app.ui\n`, r.err)
	assert.Contains(t, r.err, "duet reload: reload_app.ui: applied (1 object rebuilt)\n")
}
