// Command reloadshot takes the README's pictures of reloading a .ui file,
// headless: an app in development mode (app.Options.Reload) whose window
// comes from a .ui file in a temporary directory; the file is saved broken
// (the window shows the error in its banner), then fixed with new text
// (the new interface is in the window). A screenshot of each state goes to
// the directory -out: reload-before.png, reload-broken.png,
// reload-after.png. make reload-shots runs it under Xvfb.
package main

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/examples/internal/shot"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

const form = `<interface>
  <object class="GtkWindow" id="window">
    <property name="title">Greeter</property>
    <property name="default-width">420</property>
    <property name="default-height">200</property>
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

var out = flag.String("out", "out", "directory for the PNGs")

func main() {
	flag.Parse()
	work, err := os.MkdirTemp("", "duet-reloadshot")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)
	file := filepath.Join(work, "form.ui")
	if err := os.WriteFile(file, []byte(form), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "reloadshot:", err)
		os.Exit(1)
	}
	os.Exit(app.Main(app.Options{ID: "org.duet.ReloadShot", NonUnique: true, Reload: true, ReloadDir: work}, func(a *app.App) error {
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
		// save writes src until ok (the first save may come before the
		// watcher watches the file).
		save := func(src string, ok func(bool, string) bool) {
			deadline := time.Now().Add(20 * time.Second)
			for i := 0; ; i++ {
				if i%40 == 0 {
					tmp := file + ".tmp~"
					if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
						fail(err)
					}
					if err := os.Rename(tmp, file); err != nil {
						fail(err)
					}
				}
				if ok(state()) {
					return
				}
				if time.Now().After(deadline) {
					fail(fmt.Errorf("the reload never showed"))
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		take := func(name string) {
			time.Sleep(300 * time.Millisecond) // a frame or two
			path := filepath.Join(*out, name)
			if err := eventloop.InvokeWait(context.Background(), func() error { return shot.Take(path) }); err != nil {
				fail(err)
			}
			if err := crop(path, 420, 200); err != nil { // the window's default size
				fail(err)
			}
			fmt.Println("screenshot:", path)
		}
		go func() {
			defer a.Quit()
			if err := os.MkdirAll(*out, 0o755); err != nil {
				fail(err)
			}
			take("reload-before.png")
			save(strings.Replace(form, `handler="on_greet"`, `handler="on_wave"`, 1),
				func(banner bool, _ string) bool { return banner })
			take("reload-broken.png")
			save(strings.Replace(form, "Hello, world", "Hello, reloaded world", 1),
				func(banner bool, text string) bool { return !banner && text == "Hello, reloaded world" })
			take("reload-after.png")
		}()
		return b.Err()
	}))
}

// crop keeps the top left w×h of the PNG at path: the window (Xvfb has no
// window manager: it is at 0,0).
func crop(path string, w, h int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return err
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return nil
	}
	o, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(o, sub.SubImage(image.Rect(0, 0, w, h).Intersect(img.Bounds()))); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
