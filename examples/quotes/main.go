// Command quotes shows asyncio and goroutines on the one loop: a Python
// widget (feed.py) fetches quotes with asyncio from a TCP server this
// program runs on the loopback, and awaits a Go func (callbacks.Async) to
// score each; Go awaits the widget's coroutine (eventloop.Await).
//
//	go run ./examples/quotes            # press Fetch; close the window to quit
//	go run ./examples/quotes -script    # fetch once from Go, print, exit 0
//	DUET_RELOAD=1 go run ./examples/quotes  # edit feed.py while it runs: the next Fetch runs the new code
package main

import (
	"bufio"
	"context"
	"embed"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/examples/internal/shot"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

//go:embed feed.py
var src embed.FS

var (
	script     = flag.Bool("script", false, "fetch 5 quotes from Go, print them, exit (for headless runs)")
	screenshot = flag.String("screenshot", "", "with -script: save a screenshot to this PNG before quitting")
)

var quotes = []string{
	"Simple is better than complex.",
	"Don't communicate by sharing memory; share memory by communicating.",
	"Errors are values.",
	"Readability counts.",
	"A little copying is better than a little dependency.",
	"Now is better than never.",
}

// serve answers "n\n" with n quotes, one every 20 ms, then closes.
func serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(line))
			for i := range n {
				time.Sleep(20 * time.Millisecond)
				fmt.Fprintln(c, quotes[i%len(quotes)])
			}
		}()
	}
}

// score is the Go side of the widget's work: it runs on a goroutine while
// the loop goes on, and stops if the awaiting task is cancelled.
func score(ctx context.Context, quote string) (int, error) {
	select {
	case <-time.After(5 * time.Millisecond): // pretend to think
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return len(strings.Fields(quote)), nil
}

func main() {
	flag.Parse()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "quotes:", err)
		os.Exit(1)
	}
	go serve(l)
	port := l.Addr().(*net.TCPAddr).Port
	os.Exit(app.Main(app.Options{ID: "org.duet.Quotes", NonUnique: *script}, func(a *app.App) error {
		mod, err := widgets.LoadFS(src, "feed.py")
		if err != nil {
			return err
		}
		scoreFn, err := callbacks.Async(score)
		if err != nil {
			return err
		}
		feed, err := mod.New("QuoteFeed", pygi.Kw{"host": "127.0.0.1", "port": port, "score": scoreFn})
		if err != nil {
			return err
		}
		win := gtk.NewApplicationWindow(a.Gtk())
		win.SetTitle("quotes: asyncio and goroutines on one loop")
		win.SetDefaultSize(560, 320)
		if _, err := widgets.CallMethod(win, "set_child", feed.Object); err != nil {
			return err
		}
		win.Present()
		// A handler runs on the UI thread and must never block it: the
		// send gives up when nobody reads (only -script does).
		fetched := make(chan int, 4)
		if _, err := feed.Connect("fetched", func(_ *pygi.Object, n int) {
			select {
			case fetched <- n:
			default:
			}
		}); err != nil {
			return err
		}
		if *script {
			var b pygi.Block
			fetch, button := b.Attr(feed.Object, "fetch"), b.CallMethod(feed.Object, "get_first_child")
			if err := b.Err(); err != nil {
				return err
			}
			go scripted(a, fetch, button, fetched)
		}
		return nil
	}))
}

// scripted is Go awaiting the widget's coroutine, from a goroutine, then
// a click on the widget's button, which starts the same as a task.
func scripted(a *app.App, fetch, button *pygi.Object, fetched <-chan int) {
	defer a.Quit()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := eventloop.Await(ctx, fetch, 5)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quotes: fetch:", err)
		os.Exit(1)
	}
	lines, err := pygi.As[[]string](r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quotes:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Printf("fetched %d quotes\n", len(lines))
	<-fetched // the widget's own signal for the same fetch
	eventloop.Invoke(func() { widgets.Wrap(button).Emit("clicked") })
	select {
	case n := <-fetched:
		fmt.Printf("the button fetched %d quotes\n", n)
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "quotes: the button's fetch did not end")
		os.Exit(1)
	}
	if *screenshot != "" {
		time.Sleep(300 * time.Millisecond) // a frame or two
		eventloop.InvokeWait(ctx, func() error { return shot.Take(*screenshot) })
		fmt.Println("screenshot:", *screenshot)
	}
}
