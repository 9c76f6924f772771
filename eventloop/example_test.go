package eventloop_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

func ExampleInvokeWait() {
	err := eventloop.InvokeWait(context.Background(), func() error {
		fmt.Println("on the UI thread:", eventloop.IsMain())
		return nil
	})
	fmt.Println(err)
	// Output:
	// on the UI thread: true
	// <nil>
}

func ExampleEvery() {
	ticks := make(chan int, 8)
	n := 0 // touched on the loop only
	t := eventloop.Every(5*time.Millisecond, func() {
		n++
		select {
		case ticks <- n:
		default:
		}
	})
	for range 3 {
		fmt.Println("tick", <-ticks)
	}
	t.Cancel() // from any goroutine; no run starts after it returns
	// Output:
	// tick 1
	// tick 2
	// tick 3
}

// Go and Python coroutines awaiting each other on the one loop: Python
// awaits a Go func (callbacks.Async), Go awaits the Python coroutine
// (Await).
func ExampleAwait() {
	var fetch *pygi.Object
	eventloop.InvokeWait(context.Background(), func() error {
		// A Go func Python awaits: it runs on a goroutine of its own.
		square, err := callbacks.Async(func(ctx context.Context, n int) (int, error) {
			select {
			case <-time.After(time.Millisecond): // some slow Go work
			case <-ctx.Done(): // the awaiting task was cancelled
				return 0, ctx.Err()
			}
			return n * n, nil
		})
		if err != nil {
			return err
		}
		var b pygi.Block
		g := b.Globals(pygi.Kw{"square": square})
		b.Exec(`
import asyncio
async def fetch(n):
    results = await asyncio.gather(*(square(i) for i in range(n)))
    return sum(results)
`, g)
		fetch = b.Item(g, "fetch")
		return b.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := eventloop.Await(ctx, fetch, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r)
	// Output: 14
}
