// Command bench measures, side by side and in one run, what mixing Go and
// Python costs: duet against pure PyGObject (the system /usr/bin/python3
// running bench.py) and against gotk4 alone. Each comparison runs both
// sides interleaved for several rounds and reports medians and the ratio,
// as a markdown table on stdout and in -out. It needs a display (make bench
// runs it under Xvfb).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	coreglib "github.com/diamondburned/gotk4/pkg/core/glib"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

var (
	rounds  = flag.Int("rounds", 5, "rounds of each comparison (interleaved)")
	outFile = flag.String("out", "", "also write the markdown table to this file")
	python  = flag.String("python", "/usr/bin/python3", "the system Python with PyGObject, for the reference side")
	scale   = flag.Float64("scale", 1, "multiply every operation count (for quick runs)")
	idleFor = flag.Duration("idle", 10*time.Second, "how long each idle program is watched for wakeups")
	readme  = flag.String("readme", "", "also put the table into this README, between its make bench markers")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func count(n int) int { return max(1, int(float64(n)**scale)) }

func run() error {
	if err := pygi.Init(pygi.Options{}); err != nil {
		return err
	}
	if err := pygi.RequireVersion("Gtk", "4.0"); err != nil {
		return err
	}
	Gtk, err := pygi.Import("gi.repository.Gtk") // initialises GTK on this (main) thread
	if err != nil {
		return err
	}
	here, err := sourceDir()
	if err != nil {
		return err
	}
	script := filepath.Join(here, "bench.py")
	tmp, err := os.MkdirTemp("", "duet-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	progs := map[string]string{}
	for p, dir := range map[string]string{"duet": "startup/duet", "gotk4": "startup/gotk4", "latency": "latency",
		"scroll-duet": "scroll/duet", "scroll-gotk4": "scroll/gotk4"} {
		bin := filepath.Join(tmp, p)
		fmt.Fprintf(os.Stderr, "building the %s program...\n", p)
		if out, err := exec.Command("go", "build", "-o", bin, "./"+filepath.Join(rel(here), dir)).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", p, err, out)
		}
		progs[p] = bin
	}

	t := newTable()
	py := func(args ...string) (float64, error) {
		out, err := exec.Command(*python, append([]string{script}, args...)...).Output()
		if err != nil {
			return 0, fmt.Errorf("%s %v: %w", script, args, err)
		}
		return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	}
	// measure adds a measurement of fn to a side of a row.
	measure := func(c *comparison, side int, fn func() (float64, error)) func() error {
		return func() error {
			v, err := fn()
			c.add(c.sides[side], v)
			return err
		}
	}
	pyMode := func(mode string, n int) func() (float64, error) {
		return func() (float64, error) { return py(mode, fmt.Sprint(count(n))) }
	}
	for r := range *rounds {
		fmt.Fprintf(os.Stderr, "round %d/%d\n", r+1, *rounds)
		steps := []func() error{
			measure(t.emitC, 0, func() (float64, error) { return emitC("func", count(100000)) }),
			measure(t.emitC, 1, func() (float64, error) { return emitC("lambda", count(100000)) }),
			measure(t.emitC, 2, func() (float64, error) { return emitC("gotk4", count(100000)) }),
			measure(t.emitCObj, 0, func() (float64, error) { return emitC("object", count(100000)) }),
			func() error { t.emitCObj.add(t.emitCObj.sides[1], last(t.emitC, 1)); return nil }, // the same lambda
			measure(t.emitCObj, 2, func() (float64, error) { return emitC("typed", count(100000)) }),
			measure(t.emitCFloor, 0, func() (float64, error) { return emitC("c", count(100000)) }),
			measure(t.emitCFloor, 1, func() (float64, error) { return emitC("none", count(100000)) }),
			measure(t.emit, 0, func() (float64, error) { return emitDuet(Gtk, count(100000)) }),
			measure(t.emit, 1, pyMode("emit", 100000)),
			measure(t.emitUse, 0, func() (float64, error) {
				return emitDuetTo(Gtk, count(100000), func(b *pygi.Object) {
					if r, err := b.CallMethod("get_label"); err == nil {
						r.Close()
					}
				})
			}),
			measure(t.emitUse, 1, pyMode("emituse", 100000)),
			measure(t.emitBare, 0, func() (float64, error) { return emitDuetTo(Gtk, count(100000), func() {}) }),
			func() error { t.emitBare.add(t.emitBare.sides[1], last(t.emit, 1)); return nil }, // the same lambda
			measure(t.emitFloor, 0, func() (float64, error) { return emitFloorDuet(Gtk, count(100000)) }),
			measure(t.emitFloor, 1, pyMode("emit0", 100000)),
			func() error {
				for i, side := range t.emitHandler.sides {
					t.emitHandler.add(side, last(t.emit, i)-last(t.emitFloor, i))
				}
				t.emitGotk4.add(t.emitGotk4.sides[0], last(t.emit, 0))
				return nil
			},
			measure(t.emitGotk4, 1, func() (float64, error) { return emitGotk4(count(100000)), nil }),
			measure(t.call, 0, func() (float64, error) { return callDuet(count(1000000)) }),
			measure(t.call, 1, pyMode("call", 1000000)),
			measure(t.callBatch, 0, func() (float64, error) { return callBatchDuet(count(1000000)) }),
			func() error { t.callBatch.add(t.callBatch.sides[1], last(t.call, 1)); return nil }, // the same Python → Python call
			measure(t.call3, 0, func() (float64, error) { return call3Duet(count(1000000)) }),
			measure(t.call3, 1, pyMode("call3", 1000000)),
			measure(t.back, 0, func() (float64, error) { return backDuet(count(1000000)) }),
			func() error { t.back.add(t.back.sides[1], last(t.call, 1)); return nil }, // the same Python → Python call
			measure(t.backObj, 0, func() (float64, error) { return backObjDuet(count(1000000)) }),
			measure(t.backObj, 1, pyMode("call1", 1000000)),
			measure(t.createFree, 0, func() (float64, error) { return createFreeDuet(count(100000)) }),
			measure(t.create, 0, func() (float64, error) { return createDuet(Gtk, count(100000)) }),
			measure(t.create, 1, pyMode("create", 100000)),
			measure(t.ring, 0, withRing(true, func() (float64, error) { return callDuet(count(1000000)) })),
			measure(t.ring, 1, withRing(false, func() (float64, error) { return callDuet(count(1000000)) })),
			measure(t.provenance, 0, withProvenance(true, func() (float64, error) { return createFreeDuet(count(100000)) })),
			measure(t.provenance, 1, withProvenance(false, func() (float64, error) { return createFreeDuet(count(100000)) })),
			measure(t.await, 0, func() (float64, error) { return awaitDuet("go_async", count(10000)) }),
			measure(t.await, 1, func() (float64, error) { return awaitDuet("sleep0", count(10000)) }),
			func() error { return startup(progs["duet"], nil, t.start, t.rss, 0) },
			func() error { return startup(*python, []string{script, "startup"}, t.start, t.rss, 1) },
			func() error { return startup(progs["gotk4"], nil, t.start, t.rss, 2) },
			func() error { return latency(progs["latency"], t) },
			func() error { return idleWakeups(progs["duet"], []string{"idle"}, t.idle, 0) },
			func() error { return idleWakeups(*python, []string{script, "idle"}, t.idle, 1) },
			func() error { return idleWakeups(progs["gotk4"], []string{"idle"}, t.idle, 2) },
			func() error { return scroll(progs["scroll-duet"], nil, t, 0) },
			func() error { return scroll(*python, []string{script, "scroll"}, t, 1) },
			func() error { return scroll(progs["scroll-gotk4"], nil, t, 2) },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
			runtime.GC()
		}
	}
	table := render(t.rows())
	fmt.Print(table)
	if *readme != "" {
		if err := updateReadme(*readme, table); err != nil {
			return err
		}
	}
	if *outFile != "" {
		if err := os.MkdirAll(filepath.Dir(*outFile), 0o755); err != nil {
			return err
		}
		return os.WriteFile(*outFile, []byte(table), 0o644)
	}
	return nil
}

// pyLoop times a plain Python for loop of n runs of body (the loop shape
// bench.py uses), with vars as globals, in ns per run.
func pyLoop(body string, n int, vars pygi.Kw) (float64, error) {
	var b pygi.Block
	g := b.Globals(vars)
	b.Exec("import time\ndef bench(n):\n    t = time.perf_counter_ns()\n    for _ in range(n):\n        "+body+
		"\n    return (time.perf_counter_ns() - t) / n\n", g)
	return pygi.BlockAs[float64](&b, b.CallMethod(b.Item(g, "bench"), "", n)), b.Err()
}

// emitDuet: a Python loop emits the signal; the handler is a Go callback.
func emitDuet(Gtk *pygi.Object, n int) (float64, error) {
	return emitDuetTo(Gtk, n, func(*pygi.Object) {})
}

// emitDuetTo: the same loop to the Go handler fn.
func emitDuetTo(Gtk *pygi.Object, n int, fn any) (float64, error) {
	b, err := Gtk.CallMethod("Button", pygi.Kw{"label": "x"})
	if err != nil {
		return 0, err
	}
	if _, err := callbacks.Connect(b, "clicked", fn); err != nil {
		return 0, err
	}
	return pyLoop("b.emit('clicked')", n, pygi.Kw{"b": b})
}

// emitC: a C loop emits clicked on a gotk4-made button, the way GTK emits
// from its own code, to one handler: a duet Go func taking nothing
// ("func") or the emitter ("object"), a Python lambda connected through
// PyGObject ("lambda"), gotk4's own Go handler ("gotk4"), a Go func taking
// the emitter typed through gotk4's reflective Connect ("typed"), a C
// function doing nothing ("c": the floor under any handler), or none.
func emitC(handler string, n int) (float64, error) {
	b := gtk.NewButtonWithLabel("x")
	py, err := widgets.ToPython(b)
	if err != nil {
		return 0, err
	}
	defer py.Close()
	switch handler {
	case "func":
		_, err = callbacks.Connect(py, "clicked", func() {})
	case "object":
		_, err = callbacks.Connect(py, "clicked", func(*pygi.Object) {})
	case "lambda":
		var f *pygi.Object
		if f, err = pygi.Eval("lambda button: None", nil); err == nil {
			_, err = py.CallMethod("connect", "clicked", f)
		}
	case "gotk4":
		b.ConnectClicked(func() {})
	case "typed":
		coreglib.InternObject(b).Connect("clicked", func(*gtk.Button) {})
	case "c":
		err = capi.ConnectNoop(coreglib.InternObject(b).Native(), "clicked")
	}
	if err != nil {
		return 0, err
	}
	ns, err := capi.EmitN(coreglib.InternObject(b).Native(), "clicked", n)
	runtime.KeepAlive(b)
	return ns, err
}

// emitFloorDuet: the same loop with no handler connected.
func emitFloorDuet(Gtk *pygi.Object, n int) (float64, error) {
	b, err := Gtk.CallMethod("Button", pygi.Kw{"label": "x"})
	if err != nil {
		return 0, err
	}
	return pyLoop("b.emit('clicked')", n, pygi.Kw{"b": b})
}

// emitGotk4: a Go loop emits through gotk4; the handler is a gotk4 Go closure.
func emitGotk4(n int) float64 {
	b := gtk.NewButtonWithLabel("x")
	b.ConnectClicked(func() {})
	t := time.Now()
	for range n {
		b.Emit("clicked")
	}
	return float64(time.Since(t).Nanoseconds()) / float64(n)
}

func callDuet(n int) (float64, error) {
	f, err := pygi.Eval("lambda: None", nil)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	for range n {
		if _, err := f.Call(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t).Nanoseconds()) / float64(n), nil
}

// callBatchDuet: the loop of callDuet inside one attachment.
func callBatchDuet(n int) (float64, error) {
	var ns float64
	err := pygi.WithGIL(func() error {
		var err error
		ns, err = callDuet(n)
		return err
	})
	return ns, err
}

// call3Duet: a Go loop calls a Python function with three arguments and a
// keyword.
func call3Duet(n int) (float64, error) {
	f, err := pygi.Eval("lambda a, b, c, k=False: None", nil)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	for range n {
		if _, err := f.Call(1, "two", 3.0, pygi.Kw{"k": true}); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t).Nanoseconds()) / float64(n), nil
}

// backDuet: a Python loop calls a Go no-op.
func backDuet(n int) (float64, error) { return pyLoop("f()", n, pygi.Kw{"f": func() {}}) }

// backObjDuet: a Python loop calls a Go func taking one argument as a
// *pygi.Object.
func backObjDuet(n int) (float64, error) {
	return pyLoop("f(x)", n, pygi.Kw{"f": func(*pygi.Object) {}, "x": []int{1}})
}

// awaitDuet runs the loop (asyncio runs on it only then) while a
// goroutine awaits a Python coroutine that times n awaits of its kind.
func awaitDuet(kind string, n int) (float64, error) {
	var ns float64
	var err error
	go func() {
		defer eventloop.Quit()
		for !eventloop.Running() {
			time.Sleep(time.Millisecond)
		}
		var fn *pygi.Object
		err = eventloop.InvokeWait(context.Background(), func() error {
			one, err := callbacks.Async(func(ctx context.Context) int { return 1 })
			if err != nil {
				return err
			}
			var b pygi.Block
			g := b.Globals(pygi.Kw{"one": one})
			b.Exec(`
import asyncio, time
async def go_async(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        await one()
    return (time.perf_counter_ns() - t) / n
async def sleep0(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        await asyncio.sleep(0)
    return (time.perf_counter_ns() - t) / n
`, g)
			fn = b.Item(g, kind)
			return b.Err()
		})
		if err != nil {
			return
		}
		var r *pygi.Object
		if r, err = eventloop.Await(context.Background(), fn, n); err == nil {
			ns, err = pygi.As[float64](r)
		}
	}()
	if rerr := eventloop.Run(context.Background()); rerr != nil {
		return 0, rerr
	}
	return ns, err
}

// withRing runs fn with the ring of crossings (crash reports) on or off.
func withRing(on bool, fn func() (float64, error)) func() (float64, error) {
	return func() (float64, error) {
		forensics.SetRing(on)
		defer forensics.SetRing(false)
		return fn()
	}
}

// withProvenance runs fn with callback provenance on or off.
func withProvenance(on bool, fn func() (float64, error)) func() (float64, error) {
	return func() (float64, error) {
		forensics.SetProvenance(on)
		defer forensics.SetProvenance(false)
		return fn()
	}
}

// createFreeDuet: a Go loop makes a callback and lets it go.
func createFreeDuet(n int) (float64, error) {
	fn := func(*pygi.Object) {}
	t := time.Now()
	for range n {
		cb, err := callbacks.New(fn)
		if err != nil {
			return 0, err
		}
		cb.Close()
	}
	return float64(time.Since(t).Nanoseconds()) / float64(n), nil
}

// createDuet: a Go loop connects a Go func (made into its callback and
// connected in one crossing) and disconnects it, which frees it.
func createDuet(Gtk *pygi.Object, n int) (float64, error) {
	b, err := Gtk.CallMethod("Button", pygi.Kw{"label": "x"})
	if err != nil {
		return 0, err
	}
	fn := func(*pygi.Object) {}
	t := time.Now()
	for range n {
		id, err := callbacks.Connect(b, "clicked", fn)
		if err != nil {
			return 0, err
		}
		if err := callbacks.Disconnect(b, id); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t).Nanoseconds()) / float64(n), nil
}

// startup runs a start-up program and records the time to its first frame
// and its peak RSS.
func startup(bin string, args []string, start, rss *comparison, side int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	t := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	elapsed := time.Since(t)
	if err := cmd.Wait(); err != nil || strings.TrimSpace(line) != "frame" {
		return fmt.Errorf("%s: no first frame (%v, %q)", bin, err, line)
	}
	start.add(start.sides[side], float64(elapsed.Microseconds())/1000)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss.add(rss.sides[side], float64(ru.Maxrss)/1024)
	}
	return nil
}

// latency runs the latency program (see stress/bench/latency) and adds its
// figures to the Invoke rows.
func latency(bin string, t *benchTable) error {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w", bin, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "idle":
			p50, _ := strconv.ParseFloat(f[1], 64)
			p99, _ := strconv.ParseFloat(f[2], 64)
			t.invoke.add(t.invoke.sides[0], p50)
			t.invoke.add(t.invoke.sides[1], p99)
		case len(f) == 3 && f[0] == "floor":
			p50, _ := strconv.ParseFloat(f[1], 64)
			p99, _ := strconv.ParseFloat(f[2], 64)
			t.invokeFloor.add(t.invokeFloor.sides[0], p50)
			t.invokeFloor.add(t.invokeFloor.sides[1], p99)
		case len(f) == 7 && f[0] == "flood":
			// flood <timer runs> <longest gap ms> <invokes> <p50 µs> <p99 µs> <seconds>
			num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v }
			t.flood.add("runs", num(1))
			t.flood.add("gap", num(2))
			t.flood.add("p50", num(4)/1000)
			t.flood.add("p99", num(5)/1000)
			t.flood.add("time", num(6)*1000)
		case len(f) == 5 && f[0] == "busy":
			n, _ := strconv.Atoi(f[1])
			p50, _ := strconv.ParseFloat(f[3], 64)
			p99, _ := strconv.ParseFloat(f[4], 64)
			i := slices.Index(busyCounts, n)
			if i < 0 {
				continue
			}
			c, prefix := t.load[i], ""
			if f[2] == "1" {
				prefix = "gc "
			}
			c.add(prefix+"p50", p50)
			c.add(prefix+"p99", p99)
		}
	}
	return nil
}

// scroll runs a scrolling program (see stress/bench/scroll) over
// count(100000) items and adds its line of figures to a side of the
// scrolling rows.
func scroll(bin string, args []string, t *benchTable, side int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, fmt.Sprint(count(100000)))...)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %v: %w", bin, args, err)
	}
	// frames, total ms, p50 ms, p99 ms, over 16 ms, CPU p50 ms, CPU p99
	// ms, CPU over 16 ms, interval p50, p99, longest ms, binds, setups,
	// handler ns/bind (scroll.Recorder.Line)
	f := strings.Fields(string(out))
	if len(f) != 14 {
		return fmt.Errorf("%s %v: want 14 figures, got %q", bin, args, out)
	}
	num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v }
	for c, i := range map[*comparison]int{t.scrollP50: 2, t.scrollP99: 3, t.scrollOver: 4, t.scrollTotal: 1,
		t.scrollCPU50: 5, t.scrollCPU99: 6, t.scrollOverCPU: 7, t.scrollHandlers: 13} {
		c.add(c.sides[side], num(i))
	}
	return nil
}

// idleWakeups starts a program in its idle mode, lets it settle for two
// seconds after its first frame, then counts the voluntary context switches
// of all its threads (each one a thread that slept and was woken) over
// -idle, and kills it.
func idleWakeups(bin string, args []string, c *comparison, side int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+*idleFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "frame" {
		return fmt.Errorf("%s: no first frame (%q)", bin, line)
	}
	go io.Copy(io.Discard, out)
	time.Sleep(2 * time.Second)
	before, err := switches(cmd.Process.Pid)
	if err != nil {
		return err
	}
	time.Sleep(*idleFor)
	after, err := switches(cmd.Process.Pid)
	if err != nil {
		return err
	}
	c.add(c.sides[side], float64(after-before)/idleFor.Seconds())
	return nil
}

// switches sums voluntary_ctxt_switches over the threads of a process.
// Threads that ended in between take their counts with them, which can
// only lower the figure; the idle programs start no threads while idle.
func switches(pid int) (int64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no threads for process %d: %v", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum, nil
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.Index(l, ":"); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return "unknown CPU"
}

func goVersion() string {
	v := "?"
	if o, err := pygi.Eval("__import__('platform').python_version()", nil); err == nil {
		v = o.String()
		o.Close()
	}
	return runtime.Version() + ", CPython " + v
}

// sourceDir finds this command's directory (bench.py lives next to it).
func sourceDir() (string, error) {
	for _, d := range []string{"stress/bench", "."} {
		if _, err := os.Stat(filepath.Join(d, "bench.py")); err == nil {
			return filepath.Abs(d)
		}
	}
	return "", fmt.Errorf("bench.py not found: run from the repository root (make bench)")
}

func rel(dir string) string {
	wd, _ := os.Getwd()
	r, err := filepath.Rel(wd, dir)
	if err != nil {
		return dir
	}
	return r
}
