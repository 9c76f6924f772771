// Command goroutines shows background goroutines driving the UI: a clock
// ticks from one goroutine, a worker reports progress from another, and the
// Cancel button stops the worker through its context. Every widget update
// goes through eventloop.Invoke, because GTK belongs to the main thread.
// The window is built in Go (gotk4); the worker's "work" runs in Python, from
// its goroutine, while the UI stays live.
//
//	go run ./examples/goroutines
//	go run ./examples/goroutines -script    # cancel half-way by program, exit 0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

var script = flag.Bool("script", false, "press Cancel by program half-way through, check the result, exit")

func main() {
	flag.Parse()
	os.Exit(app.Main(app.Options{ID: "org.duet.Goroutines", NonUnique: *script}, build))
}

func build(a *app.App) error {
	win := gtk.NewApplicationWindow(a.Gtk())
	win.SetTitle("Goroutines")
	win.SetDefaultSize(360, 160)
	clock := gtk.NewLabel("")
	progress := gtk.NewProgressBar()
	progress.SetShowText(true)
	status := gtk.NewLabel("working…")
	cancelBtn := gtk.NewButtonWithLabel("Cancel")
	box := gtk.NewBox(gtk.OrientationVertical, 8)
	for _, w := range []gtk.Widgetter{clock, progress, status, cancelBtn} {
		box.Append(w)
	}
	win.SetChild(box)
	// The goroutines below end with the window.
	ctx, stop := context.WithCancel(context.Background())
	win.ConnectDestroy(stop)
	win.Present()

	// The clock: a goroutine that posts each tick to the loop.
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			now := time.Now().Format("15:04:05")
			eventloop.Invoke(func() { clock.SetText("It is " + now) })
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()

	// The worker: 100 steps of Python work, cancellable.
	workCtx, cancel := context.WithCancel(ctx)
	cancelBtn.ConnectClicked(func() { cancel() })
	var steps atomic.Int64
	done := make(chan error, 1)
	go func() { done <- work(workCtx, &steps, progress) }()
	go func() {
		err := <-done
		eventloop.Invoke(func() {
			if err != nil {
				status.SetText(fmt.Sprintf("stopped after %d steps: %v", steps.Load(), err))
			} else {
				status.SetText("finished")
			}
			cancelBtn.SetSensitive(false)
		})
		if *script {
			if err == nil || steps.Load() >= 100 {
				fail(fmt.Errorf("the worker was not cancelled (steps %d, err %v)", steps.Load(), err))
			}
			fmt.Printf("cancelled after %d steps\n", steps.Load())
			eventloop.After(200*time.Millisecond, a.Quit)
		}
	}()
	if *script {
		// Press Cancel once the worker is past 30 %.
		go func() {
			for steps.Load() < 30 {
				time.Sleep(5 * time.Millisecond)
			}
			eventloop.Invoke(func() { cancelBtn.Activate() })
		}()
	}
	return nil
}

func work(ctx context.Context, steps *atomic.Int64, bar *gtk.ProgressBar) error {
	f, err := pygi.Eval("lambda n: sum(i * i for i in range(n))", nil)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := 1; i <= 100; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := f.Call(20000)
		if err != nil {
			return err
		}
		r.Close()
		time.Sleep(10 * time.Millisecond)
		steps.Store(int64(i))
		frac := float64(i) / 100
		eventloop.Invoke(func() { bar.SetFraction(frac) })
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goroutines:", err)
	os.Exit(1)
}
