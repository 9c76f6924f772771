// Command gotk4 is the all-Go side of make bench's scrolling rows (see
// package scroll): the list view's factory handlers are gotk4 Go funcs
// (ConnectSetup, ConnectBind, ConnectUnbind), and so is everything else.
// Its argument is the number of items; it prints one line and exits.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/diamondburned/gotk4/pkg/gdk/v4"
	"github.com/diamondburned/gotk4/pkg/gio/v2"
	"github.com/diamondburned/gotk4/pkg/glib/v2"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/stress/bench/scroll"
)

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	var r scroll.Recorder
	app := gtk.NewApplication("org.duet.bench.Gotk4Scroll", gio.ApplicationNonUnique)
	//duet:cycle-ok the application and its window live until the program exits
	app.ConnectActivate(func() {
		win := gtk.NewApplicationWindow(app)
		win.SetTitle("scroll")
		win.SetDefaultSize(scroll.Width, scroll.Height)
		win.SetResizable(false)
		items := make([]string, n)
		for i := range items {
			items[i] = "item " + strconv.Itoa(i)
		}
		factory := gtk.NewSignalListItemFactory()
		factory.ConnectSetup(func(item *gtk.ListItem) {
			defer r.Handler(time.Now(), false, true)
			item.SetChild(gtk.NewLabel(""))
		})
		factory.ConnectBind(func(item *gtk.ListItem) {
			defer r.Handler(time.Now(), true, false)
			item.Child().(*gtk.Label).SetLabel(item.Item().Cast().(*gtk.StringObject).String())
		})
		factory.ConnectUnbind(func(item *gtk.ListItem) {
			defer r.Handler(time.Now(), false, false)
			item.Child().(*gtk.Label).SetLabel("")
		})
		lv := gtk.NewListView(gtk.NewNoSelection(gtk.NewStringList(items)), &factory.ListItemFactory)
		sw := gtk.NewScrolledWindow()
		sw.SetChild(lv)
		win.SetChild(sw)
		adj := lv.VAdjustment()
		lv.AddTickCallback(func(gtk.Widgetter, gdk.FrameClocker) bool {
			if v, ok := r.Tick(adj.Value(), adj.Upper(), adj.PageSize()); ok {
				adj.SetValue(v)
			}
			return true
		})
		//duet:cycle-ok
		win.ConnectMap(func() {
			clock := gdk.BaseFrameClock(win.FrameClock())
			clock.ConnectBeforePaint(r.BeforePaint)
			clock.ConnectAfterPaint(func() {
				if r.AfterPaint() {
					fmt.Println(r.Line())
					os.Exit(0)
				}
			})
			glib.TimeoutAdd(uint(scroll.Settle.Milliseconds()), func() bool { r.Arm(); return false })
		})
		win.Present()
	})
	os.Exit(app.Run(os.Args[:1]))
}
