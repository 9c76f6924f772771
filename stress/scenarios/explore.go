package scenarios

import (
	"errors"
	"fmt"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/stress/harness"
)

// exploreWindow is the UI the explorer drives: one widget of each kind it
// acts on, each with a Go handler the signal alone holds (made by
// env.Callback, so that the broken ownership mode frees it under the
// signal, as in the seed).
const exploreWindow = `
from gi.repository import Gtk
win = Gtk.ApplicationWindow(application=app, title="explore")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
win.set_child(box)
button = Gtk.Button(label="press"); button.connect("clicked", on_clicked); box.append(button)
toggle = Gtk.ToggleButton(label="toggle"); toggle.connect("toggled", on_clicked); box.append(toggle)
entry = Gtk.Entry(); entry.connect("changed", on_clicked); box.append(entry)
spin = Gtk.SpinButton.new_with_range(0, 100, 1); spin.connect("value-changed", on_clicked); box.append(spin)
drop = Gtk.DropDown.new_from_strings(["one", "two", "three"]); drop.connect("notify::selected", on_notify); box.append(drop)
rows = Gtk.ListBox()
for i in range(5):
    rows.append(Gtk.Label(label="row %d" % i))
rows.connect("row-activated", on_row); box.append(rows)
pages = Gtk.Notebook()
for i in range(3):
    # As widgets/kit/census.py does: with GTK 4.8 and PyGObject 3.42 the
    # tab label append_page makes, or is given, is never freed.
    page = Gtk.Label(label="page %d" % i)
    pages.append_page(page, None)
    pages.set_tab_label_text(page, "tab %d" % i)
pages.connect("switch-page", on_page); box.append(pages)
win.present()
`

// Explore is package explore driving a window through GTK's own API, its
// choices seeded, while the harness forces both collectors and judges
// memory and callbacks: the explorer as a workload. A finding (a panic, an
// exception, a GTK critical, a stall) fails the run; leaks are the
// harness's to judge, over the whole run.
func Explore(env *harness.Env) error {
	// Closed by the explorer's goroutine; one that never started (the
	// application never activated) leaves nothing to wait for.
	done := make(chan struct{})
	started := false
	err := runApp(env, "explore", func(a *app.App) (func(), error) {
		g, err := pygi.NewGlobals()
		if err != nil {
			return nil, err
		}
		started = true
		go func() {
			defer close(done)
			// What a run sets up once for the process (its Python module,
			// the log routing's callback) comes first, and the baseline
			// again after it: no growth of this run's. No window yet: it
			// acts on nothing.
			explore.Run(env.Ctx, explore.Options{Seed: 1, Duration: 100 * time.Millisecond, App: a.Python(), LeakRounds: -1})
			if err := eventloop.InvokeWait(env.Ctx, func() error { return exploreUI(env, a, g) }); err != nil {
				if env.Ctx.Err() == nil {
					fail(err)
				}
				return
			}
			env.Baseline()
			pending := -1
			rep, err := explore.Run(env.Ctx, explore.Options{
				Seed:       1,
				Duration:   24 * time.Hour, // the run's context ends it
				GC:         env.GCInterval,
				App:        a.Python(),
				LeakRounds: -1,
				OnAction: func(n int, act explore.Action) {
					if n != pending { // before it is done
						pending = n
						env.Op("explore %d: %s", n+1, act)
						return
					}
					env.Iter(1) // done
				},
			})
			switch {
			case err != nil && env.Ctx.Err() == nil && !errors.Is(err, eventloop.ErrNotRunning):
				fail(err)
			case rep != nil && len(rep.Findings) > 0:
				fail(fmt.Errorf("the explorer found: %s", rep.Findings[0]))
			}
		}()
		return func() {
			// On the loop, the run's context done: the explorer's last step
			// is cut short, the window goes.
			if w, err := g.Item("win"); err == nil {
				w.CallMethod("destroy")
				w.Close()
			}
			g.Close()
		}, nil
	})
	if started { // set on the UI thread, in the run runApp has returned from
		<-done // its report made and its hooks undone before the harness counts
	}
	return err
}

// exploreUI makes the window, in g, on the UI thread.
func exploreUI(env *harness.Env, a *app.App, g *pygi.Object) error {
	handlers := map[string]any{
		"on_clicked": func(*pygi.Object) {},
		"on_notify":  func(*pygi.Object, *pygi.Object) {},
		"on_row":     func(*pygi.Object, *pygi.Object) {},
		"on_page":    func(*pygi.Object, *pygi.Object, int) {},
	}
	for name, fn := range handlers {
		cb, err := env.Callback(fn, name)
		if err != nil {
			return err
		}
		err = g.SetItem(name, cb)
		cb.Close() // only the globals, then the signals, hold it
		if err != nil {
			return err
		}
	}
	if err := g.SetItem("app", a.Python()); err != nil {
		return err
	}
	if err := pygi.Exec(exploreWindow, g); err != nil {
		return err
	}
	for name := range handlers { // the signals alone hold them now
		if err := pygi.Exec("del "+name, g); err != nil {
			return err
		}
	}
	return nil
}
