// Command reloadshot takes the README's pictures of reloading, headless:
// an app in development mode (app.Options.Reload) whose window comes from
// a .ui file and holds a Python widget (swatch.py: a Gtk.Widget whose
// do_snapshot draws a red bar), both in a temporary directory. Then:
// swatch.py is saved drawing blue (the bar is blue: the reload made the
// live widget draw again); the .ui file is saved broken (the window shows
// the error in its banner, the old interface stays); it is fixed with new
// text (the new interface is in the window). A screenshot of each state
// goes to the directory -out: reload-before.png, reload-python.png,
// reload-broken.png, reload-after.png; each is checked for what it must
// show (the bar's colour, the banner's) before it is kept. make
// reload-shots runs it under Xvfb and writes them to docs/reload, where
// the README shows them.
package main

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/examples/internal/shot"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

const form = `<interface>
  <object class="GtkWindow" id="window">
    <property name="title">Greeter</property>
    <property name="default-width">560</property>
    <property name="default-height">220</property>
    <child>
      <object class="GtkBox">
        <property name="orientation">vertical</property>
        <property name="spacing">12</property>
        <property name="margin-top">48</property>
        <property name="margin-start">24</property>
        <property name="margin-end">24</property>
        <child>
          <object class="GtkLabel" id="greeting">
            <property name="label">Hello, world</property>
          </object>
        </child>
        <child>
          <object class="GreeterSwatch"/>
        </child>
        <child>
          <object class="GtkButton">
            <property name="label">Greet</property>
            <signal name="clicked" handler="on_greet" object="greeting"/>
          </object>
        </child>
      </object>
    </child>
  </object>
</interface>
`

// swatch is the Python widget in the window: a bar drawn by do_snapshot.
const swatch = `from gi.repository import Gdk, Graphene, Gtk


class Swatch(Gtk.Widget):
    __gtype_name__ = "GreeterSwatch"

    def do_measure(self, orientation, for_size):
        return 24, 24, -1, -1

    def do_snapshot(self, snapshot):
        colour = Gdk.RGBA()
        colour.parse("#e01b24")  # red
        snapshot.append_color(colour, Graphene.Rect().init(0, 0, self.get_width(), self.get_height()))
`

// The colours the pictures are checked for: the bar's, and the banner's
// background over the window's (rgba(165, 29, 45, 0.92) on #fafafa).
var (
	red    = color.RGBA{0xe0, 0x1b, 0x24, 0xff}
	blue   = color.RGBA{0x35, 0x84, 0xe4, 0xff}
	banner = func(c color.RGBA) bool { return c.R > 150 && c.R < 185 && c.G < 60 && c.B < 70 }
)

var out = flag.String("out", "out", "directory for the PNGs")

func main() {
	flag.Parse()
	work, err := os.MkdirTemp("", "duet-reloadshot")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Every way out removes work: os.Exit runs no deferred call (a defer
	// here left a directory in /tmp at each run).
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "reloadshot:", err)
		os.RemoveAll(work)
		os.Exit(1)
	}
	file, py := filepath.Join(work, "form.ui"), filepath.Join(work, "swatch.py")
	for name, src := range map[string]string{file: form, py: swatch} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			fail(err)
		}
	}
	code := app.Main(app.Options{ID: "org.duet.ReloadShot", NonUnique: true, Reload: true, ReloadDir: work}, func(a *app.App) error {
		// The class first: the .ui file names its GType.
		if _, err := widgets.LoadFile(py); err != nil {
			return err
		}
		ui, err := widgets.LoadUIFS(os.DirFS(work), "form.ui", map[string]any{
			"on_greet": func(greeting, _ *pygi.Object) error {
				_, err := greeting.CallMethod("set_label", "Hello!")
				return err
			},
		})
		if err != nil {
			return err
		}
		win, err := ui.Object("window")
		if err != nil {
			return err
		}
		var b pygi.Block
		b.CallMethod(win.Object, "set_application", a.Python())
		b.CallMethod(win.Object, "present")
		// state: the banner's lines and the greeting's text.
		state := func() (banner bool, text string) {
			err := eventloop.InvokeWait(context.Background(), func() error {
				g, err := pygi.NewGlobals()
				if err != nil {
					return err
				}
				defer g.Close()
				l, err := ui.Object("greeting")
				if err != nil {
					return err
				}
				defer l.Close()
				g.SetItem("win", win.Object)
				o, err := pygi.Eval("win.get_child().get_name() == 'duet-reload-banner'", g)
				if err != nil {
					return err
				}
				banner, _ = pygi.As[bool](o)
				o.Close()
				t, err := l.CallMethod("get_label")
				if err != nil {
					return err
				}
				text, err = pygi.As[string](t)
				return err
			})
			if err != nil {
				fail(err)
			}
			return
		}
		// pyReloads counts swatch.py's reloads, which say nothing the
		// interface shows (the bar's colour is in the picture only).
		var pyReloads atomic.Int64
		stop := reload.Observe(func(r reload.Result) {
			if r.Path == py && r.Outcome == reload.Applied {
				pyReloads.Add(1)
			}
		})
		// save writes src to path until ok (the first save may come before
		// the watcher watches the file; saved again as it was, a file is
		// not reloaded twice).
		save := func(path, src string, ok func(bool, string) bool) {
			deadline := time.Now().Add(20 * time.Second)
			for i := 0; ; i++ {
				if i%40 == 0 {
					tmp := path + ".tmp~"
					if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
						fail(err)
					}
					if err := os.Rename(tmp, path); err != nil {
						fail(err)
					}
				}
				if ok(state()) {
					return
				}
				if time.Now().After(deadline) {
					fail(fmt.Errorf("the reload of %s never showed", filepath.Base(path)))
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		// take saves the window's picture once it shows what want accepts
		// (the frame after a reload comes a little later than the reload).
		take := func(name string, want func(img image.Image) error) {
			path := filepath.Join(*out, name)
			deadline := time.Now().Add(20 * time.Second)
			for {
				time.Sleep(100 * time.Millisecond)
				if err := eventloop.InvokeWait(context.Background(), func() error { return shot.Take(path) }); err != nil {
					fail(err)
				}
				img, err := crop(path, 560, 220) // the window's default size
				if err != nil {
					fail(err)
				}
				err = want(img)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					fail(fmt.Errorf("%s: %v", name, err))
				}
			}
			fmt.Println("screenshot:", path)
		}
		go func() {
			defer a.Quit()
			defer stop()
			if err := os.MkdirAll(*out, 0o755); err != nil {
				fail(err)
			}
			take("reload-before.png", shows(red, false))
			save(py, strings.Replace(swatch, `"#e01b24")  # red`, `"#3584e4")  # blue`, 1),
				func(bool, string) bool { return pyReloads.Load() > 0 })
			take("reload-python.png", shows(blue, false))
			save(file, strings.Replace(form, `handler="on_greet"`, `handler="on_wave"`, 1),
				func(banner bool, _ string) bool { return banner })
			take("reload-broken.png", shows(blue, true))
			save(file, strings.Replace(form, "Hello, world", "Hello, reloaded world", 1),
				func(banner bool, text string) bool { return !banner && text == "Hello, reloaded world" })
			take("reload-after.png", shows(blue, false))
		}()
		return b.Err()
	})
	os.RemoveAll(work)
	os.Exit(code)
}

// shows checks that a picture has the bar in colour bar (a full row of it:
// no other bar colour) and has the banner or not.
func shows(bar color.RGBA, withBanner bool) func(image.Image) error {
	return func(img image.Image) error {
		var bars, others, banners int
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
				switch {
				case c == bar:
					bars++
				case c == red || c == blue:
					others++
				case banner(c):
					banners++
				}
			}
		}
		switch {
		case bars < 300 || others > 0:
			return fmt.Errorf("the bar is not %v (%d pixels of it, %d of the other colour)", bar, bars, others)
		case withBanner && banners < 300:
			return fmt.Errorf("no banner")
		case !withBanner && banners > 0:
			return fmt.Errorf("a banner")
		}
		return nil
	}
}

// crop keeps the top left w×h of the PNG at path, and returns it: the
// window (Xvfb has no window manager: it is at 0,0).
func crop(path string, w, h int) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return img, nil
	}
	img = sub.SubImage(image.Rect(0, 0, w, h).Intersect(img.Bounds()))
	o, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := png.Encode(o, img); err != nil {
		o.Close()
		return nil, err
	}
	return img, o.Close()
}
