// Command builder builds its window from a GtkBuilder .ui file
// (builder.ui, embedded) whose signal handlers are Go funcs, bound by name
// with widgets.LoadUIFS: a name the file uses with no Go func, or a Go func
// the file never names, is an error when it loads. A handler that needs
// another widget names it in the file (<signal object="...">) and receives
// it as an argument, so it captures nothing.
//
//	go run ./examples/builder            # type a name; Close quits
//	go run ./examples/builder -script    # type and close by program, exit 0
//	DUET_RELOAD=1 go run ./examples/builder  # edit builder.ui: saved, it is in the window
package main

import (
	"embed"
	"flag"
	"fmt"
	"os"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

//go:embed builder.ui
var files embed.FS

var script = flag.Bool("script", false, "type a name and press Close by program, then exit")

func main() {
	flag.Parse()
	os.Exit(app.Main(app.Options{ID: "org.duet.Builder", NonUnique: *script}, func(a *app.App) error {
		ui, err := widgets.LoadUIFS(files, "builder.ui", map[string]any{
			// object="greeting" in the file: GtkBuilder swaps the
			// arguments, so the label comes first and the entry last.
			"on_name_changed": func(b *pygi.Block, greeting, entry *pygi.Object) {
				b.CallMethod(greeting, "set_label", fmt.Sprintf("Hello, %s!", pygi.BlockAs[string](b, b.CallMethod(entry, "get_text"))))
			},
			"on_close_clicked": func(window, _ *pygi.Object) error {
				fmt.Println("closed by on_close_clicked")
				_, err := window.CallMethod("close")
				return err
			},
		})
		if err != nil {
			return err
		}
		var b pygi.Block
		object := func(id string) *pygi.Object { return b.CallMethod(ui.Builder, "get_object", id) }
		win := object("window")
		b.CallMethod(win, "set_application", a.Python())
		b.CallMethod(win, "present")
		if *script {
			b.CallMethod(object("name"), "set_text", "Go") // runs on_name_changed
			fmt.Println(pygi.BlockAs[string](&b, b.CallMethod(object("greeting"), "get_label")))
			b.CallMethod(object("close"), "emit", "clicked") // runs on_close_clicked: the app ends with its window
		}
		return b.Err()
	}))
}
