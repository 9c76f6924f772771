// Command latency measures, for make bench, how long a goroutine waits for
// the UI thread: Invoke round trips (InvokeWait) from a goroutine while the
// loop idles, then running a trivial Python call on the UI thread while 0,
// 1, 2 and 4 other goroutines keep Python busy (tight loops, and loops that
// also run gc.collect()). It prints one line per measurement:
//
//	idle <p50 µs> <p99 µs>
//	busy <goroutines> <gc 0|1> <p50 µs> <p99 µs>
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

func main() {
	if err := pygi.Init(pygi.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f, err := pygi.Eval("lambda: 1", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		defer eventloop.Quit()
		p50, p99 := rounds(2000, func() error { return nil })
		fmt.Printf("idle %.1f %.1f\n", p50, p99)
		for _, busy := range []int{0, 1, 2, 4} {
			for _, gc := range []int{0, 1} {
				code := "sum(range(100000))"
				if gc == 1 {
					code = "(sum(range(100000)), __import__('gc').collect())"
				}
				var stop atomic.Bool
				var wg sync.WaitGroup
				for range busy {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for !stop.Load() {
							if r, err := pygi.Eval(code, nil); err == nil {
								r.Close()
							}
						}
					}()
				}
				time.Sleep(100 * time.Millisecond)
				p50, p99 := rounds(300, func() error { r, err := f.Call(); r.Close(); return err })
				stop.Store(true)
				wg.Wait()
				fmt.Printf("busy %d %d %.1f %.1f\n", busy, gc, p50, p99)
			}
		}
	}()
	if err := eventloop.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// rounds times n InvokeWait round trips of fn, a millisecond apart, and
// returns the median and the 99th percentile in microseconds.
func rounds(n int, fn func() error) (p50, p99 float64) {
	d := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		eventloop.InvokeWait(context.Background(), fn)
		d = append(d, time.Since(t))
		time.Sleep(time.Millisecond)
	}
	slices.Sort(d)
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1000 }
	return us(d[len(d)/2]), us(d[len(d)*99/100])
}
