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
	ticks := make(chan int, 3)
	n := 0
	var t *eventloop.Timer
	t = eventloop.Every(5*time.Millisecond, func() {
		n++
		ticks <- n
		if n == 3 {
			t.Cancel() // from inside: this run finishes, no more follow
		}
	})
	for range 3 {
		fmt.Println("tick", <-ticks)
	}
	// Output:
	// tick 1
	// tick 2
	// tick 3
}
