package widgets

import (
	_ "embed"
	"runtime"
	"sync"
	"unsafe"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
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

//go:embed teardown.py
var teardownSource string

const teardownModule = "duet_teardown"

var teardown struct {
	mu       sync.Mutex
	handlers map[unsafe.Pointer][]uint64 // GObject -> handler ids connected from Go
	windows  map[unsafe.Pointer]*pygi.Object
	helper   *Module
	monitor  *pygi.Object // the toplevels model; held for the process
	once     sync.Once
	err      error
}

// hookConnect makes every connect path record Go handlers (once, on the UI
// thread, after GTK is initialised).
func hookConnect() error {
	teardown.once.Do(func() { teardown.err = startMonitor() })
	return teardown.err
}

// recordHandler is called by the connect wrappers (teardown.py) for each
// handler whose __self__ is a capsule; only duet's callbacks are recorded.
func recordHandler(o *pygi.Object, id uint64, handler *pygi.Object) {
	if !isCallback(handler) {
		return
	}
	p, _, err := pointer(o)
	if err != nil {
		return
	}
	lifetime.NoteConnection(uintptr(p), callbackHandle(handler))
	teardown.mu.Lock()
	_, known := teardown.handlers[p]
	teardown.handlers[p] = append(teardown.handlers[p], id)
	teardown.mu.Unlock()
	if !known {
		track.mu.Lock()
		watchLocked(p, watcher{obj: p, fn: func() {
			teardown.mu.Lock()
			delete(teardown.handlers, p)
			teardown.mu.Unlock()
			lifetime.ForgetObject(uintptr(p))
		}, quiet: true})
		track.mu.Unlock()
	}
}

// nativeConnect is what PyGObject's connect and connect_after do for a Go
// callback without extra data (see teardown.py): duet's own closure. Zero
// (never a handler id) says handler is not one of duet's callbacks, and
// PyGObject connects it.
func nativeConnect(obj *pygi.Object, signal string, handler *pygi.Object, after bool) (uint64, error) {
	if callbackHandle(handler) == 0 {
		return 0, nil
	}
	return callbacks.Connect(obj, signal, handler, after)
}

func callbackHandle(o *pygi.Object) uintptr {
	if err := lifetime.Enter(); err != nil {
		return 0
	}
	defer lifetime.Exit()
	r, err := bridge.RefOf(o)
	if err != nil {
		return 0
	}
	h := capi.CallbackHandle(r)
	runtime.KeepAlive(o)
	return h
}

func isCallback(o *pygi.Object) bool {
	if err := lifetime.Enter(); err != nil {
		return false
	}
	defer lifetime.Exit()
	r, err := bridge.RefOf(o)
	if err != nil {
		return false
	}
	yes := capi.IsCallback(r)
	runtime.KeepAlive(o)
	return yes
}

func startMonitor() error {
	teardown.handlers = map[unsafe.Pointer][]uint64{}
	teardown.windows = map[unsafe.Pointer]*pygi.Object{}
	m, err := load(teardownModule, teardownSource, "<"+teardownModule+">")
	if err != nil {
		return err
	}
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
	rec, err := callbacks.New(recordHandler, callbacks.Name("duet_record_handler"))
	if err != nil {
		return err
	}
	defer rec.Close()
	native, err := callbacks.New(nativeConnect, callbacks.Name("duet_connect_native"))
	if err != nil {
		return err
	}
	defer native.Close()
	r, err := m.CallMethod("hook_connect", rec, native)
	r.Close()
	if err != nil {
		return err
	}
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
	for _, o := range all {
		p, _, err := pointer(o)
		if err == nil {
			teardown.mu.Lock()
			ids := teardown.handlers[p]
			delete(teardown.handlers, p)
			teardown.mu.Unlock()
			for _, id := range ids {
				if r, err := teardown.helper.CallMethod("disconnect", o, id); err == nil {
					r.Close()
				}
			}
		}
		o.Close()
	}
}
