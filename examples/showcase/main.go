// Command showcase is what `make run` starts: a window built in Go (gotk4)
// holding widgets written in Python, mixing both sides on purpose:
//
//   - a live line chart (duet's Python LineChart, drawn with cairo) fed from
//     a Go goroutine;
//   - the awaker toggle: a PyGObject ToggleButton whose "clicked" handler is
//     a Go callback Go does not keep, while both garbage collectors are
//     forced every 100 ms;
//   - a panel of live counts (Go labels): callbacks, Python objects held by
//     Go, GObjects under duet's lifetime management;
//   - a log (duet's Python LogView) written to from Go.
//
// With -screenshot PATH (or DUET_SCREENSHOT=PATH) it saves a screenshot once
// the window has drawn, prints the path and quits; -script clicks the toggle
// by program first.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/examples/internal/shot"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

var (
	script     = flag.Bool("script", false, "click the toggle by program, then quit (with -screenshot, after the screenshot)")
	screenshot = flag.String("screenshot", os.Getenv("DUET_SCREENSHOT"), "save a screenshot to this PNG once the window has drawn, then quit")
	census     = flag.Bool("census", false, "open the census window at start (it is also on Ctrl+Shift+C and the Census button)")
)

func main() {
	flag.Parse()
	headless := *script || *screenshot != ""
	// Census: the live census window on Ctrl+Shift+C (see package forensics).
	os.Exit(app.Main(app.Options{ID: "org.duet.Showcase", NonUnique: headless, Census: true}, build))
}

func build(a *app.App) error {
	win := gtk.NewApplicationWindow(a.Gtk())
	win.SetTitle("duet showcase")
	win.SetDefaultSize(900, 560)

	title := gtk.NewLabel("")
	title.SetMarkup("<big><b>duet</b></big>  a Go window (gotk4) holding Python widgets (PyGObject)")
	title.SetXAlign(0)

	chart, err := kit.NewLineChart("Python chart, fed by a Go goroutine", "", 240)
	if err != nil {
		return err
	}
	logv, err := kit.NewLogView(200)
	if err != nil {
		return err
	}
	if err := errors.Join(chart.SetProp("hexpand", true), chart.SetProp("vexpand", true), logv.SetProp("vexpand", true)); err != nil {
		return err
	}

	toggle, gcRounds, err := awakerToggle(logv)
	if err != nil {
		return err
	}

	// The panel: Go labels showing live counts.
	panel := gtk.NewGrid()
	panel.SetColumnSpacing(12)
	panel.SetRowSpacing(4)
	rows := []string{"callbacks live", "callbacks created", "callbacks freed", "Python objects held by Go",
		"references released by GC", "GObjects managed", "forced GC rounds"}
	values := make([]*gtk.Label, len(rows))
	for i, r := range rows {
		k := gtk.NewLabel(r)
		k.SetXAlign(0)
		values[i] = gtk.NewLabel("-")
		values[i].SetXAlign(1)
		panel.Attach(k, 0, i, 1, 1)
		panel.Attach(values[i], 1, i, 1, 1)
	}
	update := func() {
		st := forensics.ReadStats()
		cs, ps, ws := st.Callbacks, st.Objects, st.GObjects
		for i, v := range []int64{cs.Live, cs.Created, cs.Freed, ps.Live, ps.Drained, int64(ws.Tracked), *gcRounds} {
			values[i].SetText(fmt.Sprint(v))
		}
	}
	update()
	eventloop.Every(250*time.Millisecond, update)

	// Layout, built in Go; the Python widgets go in through their Python side.
	side := gtk.NewBox(gtk.OrientationVertical, 12)
	side.Append(panel)
	censusButton := gtk.NewButtonWithLabel("Census (Ctrl+Shift+C)")
	censusButton.SetActionName("app.census")
	side.Append(censusButton)
	top := gtk.NewBox(gtk.OrientationHorizontal, 12)
	vbox := gtk.NewBox(gtk.OrientationVertical, 12)
	for _, m := range []func(int){vbox.SetMarginTop, vbox.SetMarginBottom, vbox.SetMarginStart, vbox.SetMarginEnd} {
		m(16)
	}
	vbox.Append(title)
	vbox.Append(top)
	for _, step := range []struct {
		box   gtk.Widgetter
		child *pygi.Object
	}{{top, chart.Object}, {side, toggle}, {vbox, logv.Object}} {
		r, err := widgets.CallMethod(step.box, "append", step.child)
		if err != nil {
			return err
		}
		r.Close()
	}
	top.Append(side)
	win.SetChild(vbox)
	win.Present()

	// The goroutine feeding the chart.
	go func() {
		t0 := time.Now()
		for range time.Tick(50 * time.Millisecond) {
			s := time.Since(t0).Seconds()
			chart.Push("sine", 50+40*math.Sin(s*2))
			chart.Push("callbacks live", float64(forensics.ReadStats().Callbacks.Live))
		}
	}()
	logv.Printf("window built in Go; chart, toggle and log are Python widgets")
	logv.Printf("Python %s", pyVersion())

	if *census {
		if _, err := a.Python().CallMethod("activate_action", "census", nil); err != nil {
			return err
		}
	}
	if *script {
		go func() {
			for i := range 20 {
				time.Sleep(40 * time.Millisecond)
				eventloop.Invoke(func() {
					if r, err := toggle.CallMethod("emit", "clicked"); err == nil {
						r.Close()
					}
					if i == 19 {
						logv.Printf("scripted: 20 clicks done")
					}
				})
			}
		}()
	}
	if *screenshot != "" || *script {
		eventloop.After(1500*time.Millisecond, func() {
			if *screenshot != "" {
				if err := shot.Take(*screenshot); err != nil {
					fail(err)
				}
				fmt.Println("screenshot:", *screenshot)
			}
			a.Quit()
		})
	}
	return nil
}

// awakerToggle is the seed's toggle: its Go handler is not kept by Go, and
// both collectors are forced every 100 ms.
func awakerToggle(logv *kit.LogView) (*pygi.Object, *int64, error) {
	Gtk, err := pygi.Import("gi.repository.Gtk")
	if err != nil {
		return nil, nil, err
	}
	toggle, err := Gtk.CallMethod("ToggleButton", pygi.Kw{"label": "OFF"})
	if err != nil {
		return nil, nil, err
	}
	on := false
	// The log is in the toggle's own window: the handler holds it weakly,
	// so the toggle (which holds the handler) does not keep it alive.
	if _, err := widgets.Wrap(toggle).Connect("clicked", widgets.Weakly(logv.Widget, func(logv *widgets.Widget, b *pygi.Object) error {
		on = !on
		label := "OFF"
		if on {
			label = "ON"
		}
		var blk pygi.Block
		blk.CallMethod(b, "set_label", label)
		blk.CallMethod(logv.Object, "append", "toggle: "+label+" (a Go callback owned by the signal)")
		return blk.Err()
	})); err != nil {
		return nil, nil, err
	}
	gcp, err := pygi.Import("gc")
	if err != nil {
		return nil, nil, err
	}
	rounds := new(int64)
	eventloop.Every(100*time.Millisecond, func() {
		if r, err := gcp.CallMethod("collect"); err == nil {
			r.Close()
		}
		runtime.GC()
		*rounds++
	})
	return toggle, rounds, nil
}

func pyVersion() string {
	v, err := pygi.Eval("__import__('platform').python_version()", nil)
	if err != nil {
		return "?"
	}
	defer v.Close()
	return v.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "showcase:", err)
	os.Exit(1)
}
