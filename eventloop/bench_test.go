package eventloop_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkInvokeRoundTrip: a goroutine posts a no-op to the loop and waits
// for it. Reports the median and p99 of the round trip.
func BenchmarkInvokeRoundTrip(b *testing.B) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	noop := func() error { return nil }
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := eventloop.InvokeWait(ctx, noop); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Nanoseconds())/1000, "µs-median")
	b.ReportMetric(float64(percentile(lat, 0.99).Nanoseconds())/1000, "µs-p99")
}

// BenchmarkInvokeThroughput: fire-and-forget posts, one barrier at the end.
func BenchmarkInvokeThroughput(b *testing.B) {
	n := 0
	for b.Loop() {
		eventloop.Invoke(func() { n++ })
	}
	if err := eventloop.InvokeWait(context.Background(), func() error { return nil }); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInterval100Hz: the jitter of a 10 ms interval timer, as the
// deviation of each tick's spacing from 10 ms (b.N ticks).
func BenchmarkInterval100Hz(b *testing.B) {
	ticks := make(chan time.Time, 1024)
	tm := eventloop.Every(10*time.Millisecond, func() { ticks <- time.Now() })
	defer tm.Cancel()
	n := min(b.N, 300)
	var dev []time.Duration
	last := <-ticks
	for range n {
		now := <-ticks
		d := now.Sub(last) - 10*time.Millisecond
		if d < 0 {
			d = -d
		}
		dev = append(dev, d)
		last = now
	}
	b.ReportMetric(float64(percentile(dev, 0.5).Nanoseconds())/1000, "µs-jitter-median")
	b.ReportMetric(float64(percentile(dev, 0.99).Nanoseconds())/1000, "µs-jitter-p99")
}

// The round trip of one await, from a Python coroutine on the loop: a
// trivial Go async func (handed to a parked starter goroutine, its result
// an Invoke whose settle resumes the task) next to asyncio.sleep(0) (one
// loop iteration).
func BenchmarkAwaitRoundTrip(b *testing.B) {
	var g *pygi.Object
	err := eventloop.InvokeWait(context.Background(), func() error {
		one, err := callbacks.Async(func(ctx context.Context) int { return 1 })
		if err != nil {
			return err
		}
		// Busy for a while (the loop's spin before poll is tens of µs), or
		// blocked for a millisecond (longer than any spin: what a slow
		// func costs in CPU on top of its own).
		busy, err := callbacks.Async(func(ctx context.Context, us int) int {
			for end := time.Now().Add(time.Duration(us) * time.Microsecond); time.Now().Before(end); {
			}
			return us
		})
		if err != nil {
			return err
		}
		slow, err := callbacks.Async(func(ctx context.Context) int { time.Sleep(time.Millisecond); return 1 })
		if err != nil {
			return err
		}
		var blk pygi.Block
		g = blk.Globals(pygi.Kw{"one": one, "busy": busy, "slow": slow})
		blk.Exec(`
import asyncio
async def go_async(n):
    for _ in range(n):
        await one()
async def sleep0(n):
    for _ in range(n):
        await asyncio.sleep(0)
async def go_busy_20us(n):
    for _ in range(n):
        await busy(20)
async def go_sleep_1ms(n):
    for _ in range(n):
        await slow()
# Awaits 300 µs apart (the loop busy in Python meanwhile): each finds the
# goroutine of the last one asleep. The pause itself is subtracted.
import time
PAUSE = 300e-6
def pause():
    end = time.perf_counter() + PAUSE
    while time.perf_counter() < end:
        pass
async def go_async_apart(n):
    for _ in range(n):
        pause()
        await one()
async def sleep0_apart(n):
    for _ in range(n):
        pause()
        await asyncio.sleep(0)
`, g)
		return blk.Err()
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"go_async", "sleep0", "go_busy_20us", "go_sleep_1ms", "go_async_apart", "sleep0_apart"} {
		b.Run(name, func(b *testing.B) {
			fn, err := g.Item(name)
			if err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuTime()
			b.ResetTimer()
			if _, err := eventloop.Await(context.Background(), fn, b.N); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if strings.HasSuffix(name, "_apart") {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)-300_000, "ns/await-past-pause")
			}
		})
	}
}

// cpuTime is the process's CPU time so far, all threads, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
