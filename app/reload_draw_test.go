package app_test

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

const swatchPy = `from gi.repository import Gdk, Graphene, Gtk


class Swatch(Gtk.Widget):
    def do_measure(self, orientation, for_size):
        return 80, 80, -1, -1

    def do_snapshot(self, snapshot):
        colour = Gdk.RGBA()
        colour.parse("red")
        snapshot.append_color(colour, Graphene.Rect().init(0, 0, self.get_width(), self.get_height()))
`

// capturePy renders the window as GTK drew it last into a PNG, inside
// the app. A Gtk.WidgetPaintable shows its widget's render node of the
// last frame, and each widget in that node is its own last frame's unless
// it was queued to draw again: a widget whose do_snapshot changed but that
// nobody queued still shows the old colour here, as on the screen. What
// is read is exact: no X server in between, no external tool. GTK's own
// calls through ctypes for the render node (a GskRenderNode, which neither
// PyGObject nor gotk4 can hold).
const capturePy = `import ctypes
from gi.repository import Gtk

_gtk = ctypes.CDLL("libgtk-4.so.1")
_p = ctypes.c_void_p


class _Rect(ctypes.Structure):
    _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_float), ("w", ctypes.c_float), ("h", ctypes.c_float)]


for _name, _res, _args in [
        ("gtk_snapshot_new", _p, []),
        ("gdk_paintable_snapshot", None, [_p, _p, ctypes.c_double, ctypes.c_double]),
        ("gtk_snapshot_free_to_node", _p, [_p]),
        ("gtk_native_get_renderer", _p, [_p]),
        ("gsk_renderer_render_texture", _p, [_p, _p, ctypes.POINTER(_Rect)]),
        ("gdk_texture_save_to_png", ctypes.c_bool, [_p, ctypes.c_char_p]),
        ("gsk_render_node_unref", None, [_p]),
        ("g_object_unref", None, [_p])]:
    _f = getattr(_gtk, _name)
    _f.restype, _f.argtypes = _res, _args
_capsule = ctypes.pythonapi.PyCapsule_GetPointer
_capsule.restype, _capsule.argtypes = _p, [ctypes.py_object, ctypes.c_char_p]


def capture(win, widget, path):
    """Saves the window's last frame to path (a PNG) and returns the
    widget's centre in it; None before the first frame."""
    ok, wb = win.compute_bounds(win)
    renderer = _gtk.gtk_native_get_renderer(_capsule(win.__gpointer__, None))
    if not ok or not renderer:
        return None
    w, h = wb.get_width(), wb.get_height()
    paintable = Gtk.WidgetPaintable.new(win)
    s = _gtk.gtk_snapshot_new()
    _gtk.gdk_paintable_snapshot(_capsule(paintable.__gpointer__, None), s, w, h)
    node = _gtk.gtk_snapshot_free_to_node(s)
    if not node:
        return None
    try:
        texture = _gtk.gsk_renderer_render_texture(renderer, node, ctypes.byref(_Rect(0, 0, w, h)))
    finally:
        _gtk.gsk_render_node_unref(node)
    try:
        if not _gtk.gdk_texture_save_to_png(texture, path.encode()):
            return None
    finally:
        _gtk.g_object_unref(texture)
    ok, b = widget.compute_bounds(win)
    return [b.get_x() + b.get_width() / 2 - wb.get_x(), b.get_y() + b.get_height() / 2 - wb.get_y()]
`

func init() {
	// An app in development mode whose window holds a Python widget
	// (swatch.py, LoadFile) that draws itself red. The child waits for a
	// frame with red at the widget's centre, saves the file drawing blue
	// and waits for a frame with blue there; it prints each colour seen
	// and what the reload said. Nothing else happens in the window
	// meanwhile: only the reload can have queued the new drawing.
	children["reloaddraw"] = func() int {
		dir, shots := os.Getenv("RELOAD_DIR"), os.Getenv("SHOTS")
		file := filepath.Join(dir, "swatch.py")
		a := mustNew(app.Options{ID: "org.duet.ReloadDraw", NonUnique: true, Reload: true})
		redrawn := make(chan int, 4)
		stop := reload.Observe(func(r reload.Result) {
			if r.Path == file {
				redrawn <- r.Redrawn
			}
		})
		defer stop()
		must(a.OnActivate(func() {
			m, err := widgets.LoadFile(file)
			must(err)
			swatch, err := m.New("Swatch", nil)
			must(err)
			g, err := pygi.NewGlobals()
			must(err)
			must(g.SetItem("app", a.Python()))
			must(g.SetItem("swatch", swatch.Object))
			must(pygi.Exec(capturePy+`
box = Gtk.Box(margin_top=40, margin_start=60, margin_end=60, margin_bottom=40)
box.append(swatch)
win = Gtk.ApplicationWindow(application=app, child=box, default_width=200, default_height=160)
win.present()
`, g))
			// colour is the pixel at the swatch's centre in the window's
			// last frame ("" before the first), saved to shots/name.png.
			colour := func(name string) string {
				var c string
				path := filepath.Join(shots, name+".png")
				must(eventloop.InvokeWait(context.Background(), func() error {
					must(g.SetItem("path", path))
					o, err := pygi.Eval("capture(win, swatch, path)", g)
					if err != nil {
						return err
					}
					defer o.Close()
					centre, err := pygi.As[[]float64](o)
					if err != nil || len(centre) != 2 {
						return err // None: no frame yet
					}
					c, err = pixel(path, centre)
					return err
				}))
				return c
			}
			// poll takes frames until the swatch is want, for 20 s.
			poll := func(want, name string) string {
				deadline := time.Now().Add(20 * time.Second)
				c := colour(name)
				for c != want && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					c = colour(name)
				}
				return c
			}
			go func() {
				defer a.Quit()
				fmt.Println("before:", poll("red", "reload-draw-before"))
				// Saved again each second until the reload comes: the first
				// save may come before the watcher watches the file (saved
				// again as it was, a file is not reloaded twice).
				blue := []byte(strings.Replace(swatchPy, `"red"`, `"blue"`, 1))
				tick := time.NewTicker(time.Second)
				defer tick.Stop()
				deadline := time.After(20 * time.Second)
			wait:
				for {
					tmp := file + ".tmp~"
					must(os.WriteFile(tmp, blue, 0o644))
					must(os.Rename(tmp, file))
					select {
					case n := <-redrawn:
						fmt.Println("redrawn:", n)
						break wait
					case <-tick.C:
					case <-deadline:
						fmt.Println("no reload")
						return
					}
				}
				fmt.Println("after:", poll("blue", "reload-draw-after"))
			}()
		}))
		return a.Run(context.Background(), prog)
	}
}

// pixel names the colour of the PNG at path at centre: red, blue, or its
// RGB.
func pixel(path string, centre []float64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return "", err
	}
	r, g, b, _ := img.At(img.Bounds().Min.X+int(centre[0]), img.Bounds().Min.Y+int(centre[1])).RGBA()
	r, g, b = r>>8, g>>8, b>>8
	switch {
	case r == 255 && g == 0 && b == 0:
		return "red", nil
	case r == 0 && g == 0 && b == 255:
		return "blue", nil
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b), nil
}

// A Python widget's do_snapshot saved with another colour: the running
// app draws it again by itself, within the deadline, and its next frame
// (rendered inside the app) has the new colour where the old one was.
// Without the reload's redraw GTK would keep the old frame's drawing of
// the widget until something else invalidated it.
func TestReloadDrawChangeIsOnScreen(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "swatch.py"), []byte(swatchPy), 0o644))
	shots := t.TempDir()
	if d := os.Getenv("DUET_SCREENSHOTS"); d != "" { // where make test keeps pictures
		shots = d
	}
	r := runChild(t, "reloaddraw", nil, "RELOAD_DIR="+dir, "SHOTS="+shots, "DUET_RELOAD=")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
	assert.Contains(t, r.out, "before: red\n", "stderr:\n%s", r.err)
	assert.Contains(t, r.out, "redrawn: 1\n", "the one swatch in a window")
	assert.Contains(t, r.out, "after: blue\n", "stderr:\n%s", r.err)
	assert.Contains(t, r.err, "duet reload: swatch.py: applied (1 method)\n")
	for _, name := range []string{"reload-draw-before.png", "reload-draw-after.png"} {
		_, err := os.Stat(filepath.Join(shots, name))
		assert.NoError(t, err)
	}
}
