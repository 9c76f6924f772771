package eventloop_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-gtk/duet/eventloop"
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
