package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// A comparison is one row of the table (or one row per reference side):
// the duet side first. Its aim stays on the row it was set for (the
// design's table of numbers we aim at).
type comparison struct {
	title, unit, aim string
	sides            []string
	vals             map[string][]float64
	text             func() string // rows shown as text (latency percentiles); nil for the rest
}

func (c *comparison) add(side string, v float64) {
	if c.vals == nil {
		c.vals = map[string][]float64{}
	}
	c.vals[side] = append(c.vals[side], v)
}

// last is a side's latest value (a row that reuses another's measurement).
func last(c *comparison, side int) float64 {
	v := c.vals[c.sides[side]]
	if len(v) == 0 {
		return 0
	}
	return v[len(v)-1]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchTable is every row make bench prints, in order.
type benchTable struct {
	emitC, emitCObj, emitCFloor, emit, emitUse, emitBare, emitFloor, emitHandler, emitGotk4, call, call3, back, backObj, createFree, create, start, rss, invoke, invokeFloor, flood, idle, callBatch *comparison
	ring, provenance                                                                                                                                                                                 *comparison // forensics' costs
	await                                                                                                                                                                                            *comparison
	load                                                                                                                                                                                             []*comparison // 0, 1, 2, 4 busy goroutines

	// scrolling a long list (see stress/bench/scroll)
	scrollP50, scrollP99, scrollOver, scrollTotal, scrollCPU50, scrollCPU99, scrollOverCPU, scrollHandlers *comparison
}

var busyCounts = []int{0, 1, 2, 4}

func newTable() *benchTable {
	t := &benchTable{
		emitC: &comparison{title: "a signal as GTK emits it: a C loop emits `clicked` on a Gtk.Button (100 000 times), to a Go handler taking nothing", unit: "ns/emission",
			aim: "≤ 0.5× the lambda", sides: []string{"duet: Go func()", "PyGObject: Python lambda", "gotk4: its Go handler"}},
		emitCObj: &comparison{title: "the same to a Go handler taking the emitter: as *pygi.Object through duet, typed through gotk4's Connect (coreglib.Object.Connect, what a handler of a gotk4 widget wanting its emitter typed is)", unit: "ns/emission",
			sides: []string{"duet: Go func(*pygi.Object)", "PyGObject: Python lambda", "gotk4: Go func(*gtk.Button)"}},
		emitCFloor: &comparison{title: "the floor under any handler: the same C loop to a C function doing nothing (GLib's own cost of one handler), against no handler at all", unit: "ns/emission",
			sides: []string{"C handler", "no handler"}},
		emit: &comparison{title: "signal emission (`clicked` on a Gtk.Button, 100 000 times, by a Python loop) to a handler that takes the emitter and does nothing with it: a Go func(*pygi.Object) (it runs without the GIL until it uses Python), lambda button: None", unit: "ns/emission",
			aim: "≤ 1.0× the lambda", sides: []string{"duet: Go handler", "PyGObject: Python lambda"}},
		emitUse: &comparison{title: "the same Python loop to a handler that uses its emitter, reading its label (Go: a func(*pygi.Object) calling get_label through pygi; Python: lambda b: b.get_label())", unit: "ns/emission",
			sides: []string{"duet: Go handler", "PyGObject: Python lambda"}},
		emitBare: &comparison{title: "the same Python loop to a Go handler taking nothing (it runs without the GIL, as gotk4's do), against the same lambda", unit: "ns/emission",
			sides: []string{"duet: Go func()", "PyGObject: Python lambda"}},
		emitFloor: &comparison{title: "the same emission with no handler connected: what GLib and PyGObject's emit cost by themselves", unit: "ns/emission",
			sides: []string{"duet: embedded Python", "python3"}},
		emitHandler: &comparison{title: "the handler's share: emission minus the no-handler floor", unit: "ns/emission",
			sides: []string{"duet: Go handler", "PyGObject: Python lambda"}},
		emitGotk4: &comparison{title: "the same, all Go: a Go loop emits with gotk4's coreglib.Object.Emit (a signal lookup and GValue allocations per call) to a gotk4 Go handler", unit: "ns/emission",
			sides: []string{"duet: Go handler, Python loop", "gotk4"}},
		call: &comparison{title: "Go → Python call of a trivial function, f() (1 000 000)", unit: "ns/call",
			aim: "≤ 120 ns", sides: []string{"duet: Go → Python", "Python → Python"}},
		callBatch: &comparison{title: "the same call inside one attachment: a Go loop of f() in pygi.WithGIL (1 000 000)", unit: "ns/call",
			aim: "≤ 60 ns", sides: []string{"duet: Go → Python", "Python → Python"}},
		call3: &comparison{title: "Go → Python call with three arguments and a keyword, f(1, 'two', 3.0, k=True) (1 000 000)", unit: "ns/call",
			sides: []string{"duet: Go → Python", "Python → Python"}},
		back: &comparison{title: "Python → Go callback, no arguments (1 000 000)", unit: "ns/call",
			aim: "≤ 250 ns", sides: []string{"duet: Python → Go", "Python → Python"}},
		backObj: &comparison{title: "Python → Go callback with one argument, received as *pygi.Object (1 000 000)", unit: "ns/call",
			sides: []string{"duet: Python → Go", "Python → Python"}},
		createFree: &comparison{title: "callback create + free, a Go loop (100 000)", unit: "ns/cycle",
			aim: "≤ 1 µs", sides: []string{"duet: Go callback"}},
		create: &comparison{title: "callback create + connect + disconnect + free, a Go loop vs a Python loop (100 000)", unit: "ns/cycle",
			aim: "≤ 1.0× the lambda", sides: []string{"duet: Go callback", "PyGObject: Python lambda"}},
		ring: &comparison{title: "crash reports' ring of boundary crossings: the Go → Python call f() with the ring on vs off (1 000 000)", unit: "ns/call",
			sides: []string{"duet: ring on", "ring off"}},
		provenance: &comparison{title: "callback provenance: create + free with the creation site recorded vs not (100 000)", unit: "ns/cycle",
			sides: []string{"duet: provenance on", "provenance off"}},
		await: &comparison{title: "an await from a Python coroutine on the duet loop: a trivial Go async func (callbacks.Async) vs asyncio.sleep(0) (10 000)", unit: "ns/await",
			aim: "≤ 3× asyncio.sleep(0)", sides: []string{"duet: Go async func", "asyncio.sleep(0)"}},
		start: &comparison{title: "start-up to the first frame (window + button, whole process)", unit: "ms",
			aim: "≤ 1.0× PyGObject", sides: []string{"duet app", "PyGObject script", "gotk4 program"}},
		rss: &comparison{title: "peak RSS of the start-up programs", unit: "MB",
			aim: "≤ 1.05× PyGObject", sides: []string{"duet app", "PyGObject script", "gotk4 program"}},
		invoke: &comparison{title: "Invoke round trip from a goroutine, a trivial Go func on the UI thread, idle app (2 000)", unit: "µs",
			aim: "≤ 20 µs median", sides: []string{"duet: median", "p99"}},
		invokeFloor: &comparison{title: "the floor under that round trip: a goroutine wakes a thread of its own that waits in poll() on an eventfd (as the UI thread waits in GLib's poll), and that thread answers on a channel; no GLib, no duet (2 000)", unit: "µs",
			sides: []string{"floor: median", "p99"}},
		flood: &comparison{title: "a busy loop: 8 goroutines each send 20 000 Invokes (a small Python call each) as fast as they can, while a 1 ms timer runs on the UI thread and a goroutine times InvokeWait round trips", unit: "ms",
			aim: "timer gap ≤ 20 ms; round trip p99 < 10 ms", sides: []string{"gap", "p50", "p99", "runs", "time"}},
		idle: &comparison{title: "wakeups of an idle app (window shown, nothing happening): voluntary context switches of all threads", unit: "per second",
			aim: "≤ 1/s", sides: []string{"duet app", "PyGObject script", "gotk4 program"}},
	}
	scrollSides := []string{"duet: Go factory", "PyGObject: Python factory", "gotk4: Go factory"}
	scrollRow := func(title, unit, aim string) *comparison {
		return &comparison{title: title, unit: unit, aim: aim, sides: scrollSides}
	}
	t.scrollP50 = scrollRow("scrolling a long list: a Gtk.ListView over 100 000 strings in a 400×600 window, moved 5 pages a frame by a tick callback from top to bottom, "+
		"its factory's setup/bind/unbind Go funcs through duet (setting the label through pygi), Python functions, gotk4 funcs; each side its own process: "+
		"frame time p50 (the frame clock's before-paint to after-paint)", "ms", "")
	t.scrollP99 = scrollRow("the same scroll: frame time p99", "ms", "≤ 0.8× the Python factory")
	t.scrollOver = scrollRow("the same scroll: frames over 16 ms", "frames", "none the Python factory does not also have")
	t.scrollTotal = scrollRow("the same scroll: total time, first frame to last (the frame clock paces frames at 60 Hz)", "ms", "")
	t.scrollCPU50 = scrollRow("the same scroll: the UI thread's CPU time per frame, p50 (the same span without waits and preemption: what the frame cost this process)", "ms", "")
	t.scrollCPU99 = scrollRow("the same scroll: the UI thread's CPU time per frame, p99", "ms", "")
	t.scrollOverCPU = scrollRow("the same scroll: frames whose UI-thread CPU time alone was over 16 ms (the rest of the frames over 16 ms waited: for the CPU, shared here, or for the renderer)", "frames", "")
	t.scrollHandlers = scrollRow("the same scroll: time inside the factory's handlers per row bound (setup + bind + unbind, by the handler's own clock: not the crossing into it)", "ns/row", "")
	for _, n := range busyCounts {
		c := &comparison{title: fmt.Sprintf("Invoke round trip running a Python call on the UI thread, %d goroutines busy in Python (plain loops / loops with gc.collect(); 300)", n),
			unit: "ms", sides: []string{"p50", "p99", "gc p50", "gc p99"}}
		if n == 2 {
			c.aim = "p99 ≤ 10 ms"
		}
		c.text = func() string {
			v := func(s string) string { return num(median(c.vals[s])/1000) + " ms" }
			return fmt.Sprintf("p50 %s, p99 %s / p50 %s, p99 %s", v("p50"), v("p99"), v("gc p50"), v("gc p99"))
		}
		t.load = append(t.load, c)
	}
	f := t.flood
	f.text = func() string {
		v := func(s string) float64 { return median(f.vals[s]) }
		return fmt.Sprintf("longest timer gap %s ms (%.0f runs in %s ms); round trip p50 %s ms, p99 %s ms",
			num(v("gap")), v("runs"), num(v("time")), num(v("p50")), num(v("p99")))
	}
	return t
}

func (t *benchTable) rows() []*comparison {
	return append([]*comparison{t.emitC, t.emitCObj, t.emitCFloor, t.emit, t.emitUse, t.emitBare, t.emitFloor, t.emitHandler, t.emitGotk4, t.call, t.callBatch, t.call3, t.back, t.backObj, t.createFree, t.create,
		t.ring, t.provenance, t.await, t.start, t.rss, t.invoke, t.invokeFloor}, append(t.load, t.flood, t.idle,
		t.scrollP50, t.scrollP99, t.scrollOver, t.scrollTotal, t.scrollCPU50, t.scrollCPU99, t.scrollOverCPU, t.scrollHandlers)...)
}

// render writes the table. Rows with one side show its median; rows with
// several show the duet side against each reference, with the ratio.
func render(cs []*comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s (%d cores), %s; medians of %d interleaved rounds.\n\n",
		time.Now().Format("2006-01-02"), cpuModel(), runtime.NumCPU(), goVersion(), *rounds)
	b.WriteString("| comparison | duet | reference | ratio | aim |\n|---|---|---|---|---|\n")
	for _, c := range cs {
		d := median(c.vals[c.sides[0]])
		switch {
		case c.text != nil:
			fmt.Fprintf(&b, "| %s | %s |  |  | %s |\n", c.title, c.text(), c.aim)
		case len(c.sides) == 1:
			fmt.Fprintf(&b, "| %s | %s: %s %s |  |  | %s |\n", c.title, c.sides[0], num(d), c.unit, c.aim)
		case c.unit == "µs": // percentiles of one measurement, not a comparison
			fmt.Fprintf(&b, "| %s | %s %s %s, %s %s %s |  |  | %s |\n", c.title, c.sides[0], num(d), c.unit, c.sides[1], num(median(c.vals[c.sides[1]])), c.unit, c.aim)
		default:
			for _, ref := range c.sides[1:] {
				r := median(c.vals[ref])
				ratio := "-"
				if r > 0 {
					ratio = fmt.Sprintf("%.2f×", d/r)
				}
				fmt.Fprintf(&b, "| %s | %s: %s %s | %s: %s %s | %s | %s |\n", c.title, c.sides[0], num(d), c.unit, ref, num(r), c.unit, ratio, c.aim)
			}
		}
	}
	return b.String()
}

// README.md carries the table between these markers; make bench rewrites
// it there, and a test checks the rows against the table's definition.
const (
	beginMark = "<!-- make bench: begin (generated; do not edit) -->"
	endMark   = "<!-- make bench: end -->"
)

func replaceBlock(readme, table string) (string, error) {
	i, j := strings.Index(readme, beginMark), strings.Index(readme, endMark)
	if i < 0 || j < i {
		return "", errors.New("README has no make bench markers")
	}
	return readme[:i+len(beginMark)] + "\n" + table + readme[j:], nil
}

func updateReadme(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s, err := replaceBlock(string(b), table)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
