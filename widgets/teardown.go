package widgets

import (
	"sync"
	"unsafe"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/pygi"
)

// # Windows take their Go handlers with them
//
// A Go handler connected to a widget that captures widgets of the same
// window forms a loop no collector can see: the window holds the widget,
// the widget's signal holds the handler (a Python callable), and the
// handler's Go closure holds the window. GTK 4 no longer disposes a
// window's widgets when the window is destroyed (GTK 3 did), and plain
// PyGObject apps leak such windows too. duet breaks the loop: Go handlers
// are recorded per GObject whichever way they were connected
// (Widget.Connect, or PyGObject's connect, connect_after, connect_object
// and connect_object_after, which duet wraps), and when a window is
// destroyed (it leaves Gtk.Window.get_toplevels()), the recorded handlers
// of every widget in it are disconnected, which frees them and everything
// they captured. A widget removed from a window that lives on is another
// matter: see "Handlers that do not leak" in the package doc.

const teardownModule = "duet_teardown"

var teardown struct {
	mu      sync.Mutex
	windows map[unsafe.Pointer]*pygi.Object
	helper  *Module
	monitor *pygi.Object // the toplevels model; held for the process
}

// hookConnect makes every connect path record Go handlers (once, on the UI
// thread, after GTK is initialised: the teardown module's Setup does it).
func hookConnect() error {
	_, err := teardownPy.Load()
	return err
}

// watchConnections forgets the connection records of a GObject when it
// is finalised (lifetime calls it for each object's first record).
// One watch per object, however often its records come and go (a handler
// connected and disconnected in a loop).
func watchConnections(gobj uintptr) {
	p := cptr(gobj)
	track.mu.Lock()
	defer track.mu.Unlock()
	if track.connWatched[p] {
		return
	}
	if track.connWatched == nil {
		track.connWatched = map[unsafe.Pointer]bool{}
	}
	track.connWatched[p] = true
	watchLocked(p, watcher{obj: p, quiet: true, fn: func() {
		track.mu.Lock()
		delete(track.connWatched, p)
		track.mu.Unlock()
		lifetime.ForgetObject(gobj)
	}})
}

// startMonitor is the teardown module's Setup.
func startMonitor(mod *pygi.Object) error {
	lifetime.SetConnectionWatcher(watchConnections)
	if err := hooks.InstallConnectHook(); err != nil {
		return err
	}
	// The checked property writes live as long as the interpreter: made
	// here, with GTK, they are not the growth of the first Module.New or
	// SetProp in a census.
	if _, _, err := propertyFuncs(); err != nil {
		return err
	}
	teardown.windows = map[unsafe.Pointer]*pygi.Object{}
	m := &Module{Object: mod, Name: teardownModule}
	teardown.helper = m
	cb, err := callbacks.New(toplevelsChanged, callbacks.Name("duet_toplevels_changed"))
	if err != nil {
		return err
	}
	defer cb.Close()
	teardown.monitor, err = m.CallMethod("install", cb)
	if err != nil {
		return err
	}
	lifetime.AtFinalize(func() {
		if r, err := m.CallMethod("uninstall"); err != nil {
			report.Print("widgets: disconnecting from GTK's toplevels", err)
		} else {
			r.Close()
		}
	})
	return refreshWindows(false)
}

// toplevelsChanged runs on the UI thread, inside GTK, when windows appear
// or are destroyed. It learns the change at once (a window may come and go
// within one turn of the loop) and leaves the disconnecting for the loop's
// next turn, out of GTK's way.
func toplevelsChanged(removed, added int) {
	refreshWindows(true)
}

// refreshWindows learns new windows and schedules the teardown of destroyed
// ones.
func refreshWindows(tearDown bool) error {
	list, err := teardown.helper.CallMethod("windows", teardown.monitor)
	if err != nil {
		return err
	}
	ws, err := pygi.As[[]*pygi.Object](list)
	if err != nil {
		return err
	}
	current := map[unsafe.Pointer]*pygi.Object{}
	for _, w := range ws {
		p, _, err := pointer(w)
		if err != nil {
			continue
		}
		current[p] = w
	}
	var gone, dup []*pygi.Object
	teardown.mu.Lock()
	for p, w := range teardown.windows {
		if _, ok := current[p]; !ok {
			gone = append(gone, w)
			delete(teardown.windows, p)
		}
	}
	for p, w := range current {
		if _, ok := teardown.windows[p]; !ok {
			teardown.windows[p] = w
		} else {
			dup = append(dup, w)
		}
	}
	teardown.mu.Unlock()
	for _, w := range dup {
		w.Close() // outside the lock: a release can run Python code that connects
	}
	if len(gone) > 0 {
		eventloop.Invoke(func() {
			for _, w := range gone {
				if tearDown {
					disconnectTree(w)
				}
				w.Close()
			}
		})
	}
	return nil
}

// disconnectTree disconnects the recorded Go handlers of w and of every
// widget inside it.
func disconnectTree(w *pygi.Object) {
	list, err := teardown.helper.CallMethod("descendants", w)
	if err != nil {
		return
	}
	all, err := pygi.As[[]*pygi.Object](list)
	if err != nil {
		return
	}
	ptrs := make([]unsafe.Pointer, len(all))
	for i, o := range all {
		p, _, err := pointer(o)
		if err != nil {
			continue
		}
		ptrs[i] = p
		// A gotk4-made widget (a window from gtk.NewWindow, a button
		// from gtk.NewButton) carries gotk4's reference until duet
		// releases it: the window's end is where duet learns of it.
		noteWrap(p)
	}
	for i, o := range all {
		if p := ptrs[i]; p != nil {
			for _, id := range lifetime.TakeConnections(uintptr(p)) {
				if r, err := teardown.helper.CallMethod("disconnect", o, id); err == nil {
					r.Close()
				}
			}
		}
		o.Close()
	}
}
