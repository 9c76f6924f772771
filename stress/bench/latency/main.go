// Command latency measures, for make bench, how long a goroutine waits for
// the UI thread: Invoke round trips (InvokeWait) from a goroutine while the
// loop idles, and the floor under them (the same wake-up of a thread
// waiting in poll(), without GLib or duet), then running a trivial Python call on the UI thread while 0,
// 1, 2 and 4 other goroutines keep Python busy (tight loops, and loops that
// also run gc.collect()). It prints one line per measurement:
//
//	idle <p50 µs> <p99 µs>
//	floor <p50 µs> <p99 µs>
//	busy <goroutines> <gc 0|1> <p50 µs> <p99 µs>
//	flood <timer runs> <longest timer gap ms> <invokes> <p50 µs> <p99 µs> <seconds>
//
// The flood line is a busy program as a user writes one: 8 goroutines each
// send 20 000 Invokes (each a small Python call) as fast as they can while a 1 ms timer runs on the UI
// thread and a ninth goroutine times InvokeWait round trips; it says how
// often the timer ran and its longest gap between two runs (the loop's
// responsiveness), and the round trips' median and 99th percentile.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

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
		p50, p99, err := floorRounds(2000)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("floor %.1f %.1f\n", p50, p99)
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
		flood(f)
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
	return percentiles(d)
}

// percentiles returns the median and the 99th percentile of d in
// microseconds; d is sorted.
func percentiles(d []time.Duration) (p50, p99 float64) {
	slices.Sort(d)
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1000 }
	return us(d[len(d)/2]), us(d[len(d)*99/100])
}

// floorRounds times n round trips of the wake-up under every Invoke round
// trip, without GLib or duet: a goroutine writes an eventfd that a thread
// of its own waits on in poll() (as the UI thread waits in GLib's poll),
// and that thread answers on a channel; a millisecond apart, as rounds.
func floorRounds(n int) (p50, p99 float64, err error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return 0, 0, fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(efd)
	answer, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	go func() {
		runtime.LockOSThread() // a thread of its own, as the UI thread is
		defer runtime.UnlockOSThread()
		buf := make([]byte, 8)
		for {
			fds := []unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return
			}
			if _, err := unix.Read(efd, buf); err != nil {
				continue
			}
			select {
			case answer <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	d := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if _, err := unix.Write(efd, one); err != nil {
			return 0, 0, fmt.Errorf("eventfd write: %w", err)
		}
		<-answer
		d = append(d, time.Since(t))
		time.Sleep(time.Millisecond)
	}
	p50, p99 = percentiles(d)
	return p50, p99, nil
}

// flood measures the loop while goroutines flood it with Invokes (see the
// package doc).
func flood(f *pygi.Object) {
	const senders, each = 8, 20000
	var (
		mu      sync.Mutex
		last    time.Time
		maxGap  time.Duration
		runs    int
		started atomic.Bool // the flood began: runs and gaps count from here
		stopped atomic.Bool
	)
	timer := eventloop.Every(time.Millisecond, func() {
		now := time.Now()
		mu.Lock()
		if !last.IsZero() && started.Load() && !stopped.Load() {
			maxGap = max(maxGap, now.Sub(last))
			runs++
		}
		last = now
		mu.Unlock()
	})
	time.Sleep(50 * time.Millisecond) // the timer's pace set before the flood
	var ran atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	started.Store(true)
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				eventloop.Invoke(func() {
					if r, err := f.Call(); err == nil {
						r.Close()
					}
					ran.Add(1)
				})
			}
		}()
	}
	var trips []time.Duration
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		for ran.Load() < senders*each {
			t := time.Now()
			eventloop.InvokeWait(context.Background(), func() error { return nil })
			trips = append(trips, time.Since(t))
			time.Sleep(200 * time.Microsecond)
		}
	}()
	wg.Wait()
	<-probeDone
	took := time.Since(began)
	stopped.Store(true)
	timer.Cancel()
	if len(trips) == 0 {
		trips = append(trips, 0)
	}
	slices.Sort(trips)
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1000 }
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("flood %d %.1f %d %.1f %.1f %.3f\n", runs, float64(maxGap.Microseconds())/1000, ran.Load(),
		us(trips[len(trips)/2]), us(trips[len(trips)*99/100]), took.Seconds())
}
