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

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

var (
	rounds  = flag.Int("rounds", 5, "rounds of each comparison (interleaved)")
	outFile = flag.String("out", "", "also write the markdown table to this file")
	python  = flag.String("python", "/usr/bin/python3", "the system Python with PyGObject, for the reference side")
	scale   = flag.Float64("scale", 1, "multiply every operation count (for quick runs)")
	idleFor = flag.Duration("idle", 10*time.Second, "how long each idle program is watched for wakeups")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// A comparison holds the per-round results of each side.
type comparison struct {
	title, unit, aim string
	sides            []string
	vals             map[string][]float64
}

func (c *comparison) add(side string, v float64) {
	if c.vals == nil {
		c.vals = map[string][]float64{}
	}
	c.vals[side] = append(c.vals[side], v)
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

func count(n int) int { return max(1, int(float64(n)**scale)) }

func run() error {
	if err := pygi.Init(); err != nil {
		return err
	}
	if err := pygi.RequireVersion("Gtk", "4.0"); err != nil {
		return err
	}
	Gtk, err := pygi.Repository("Gtk") // initialises GTK on this (main) thread
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
	for _, p := range []string{"duet", "gotk4"} {
		bin := filepath.Join(tmp, p)
		fmt.Fprintf(os.Stderr, "building the %s start-up program...\n", p)
		if out, err := exec.Command("go", "build", "-o", bin, "./"+filepath.Join(rel(here), "startup", p)).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", p, err, out)
		}
		progs[p] = bin
	}

	emit := &comparison{title: "signal emission (`clicked` on a Gtk.Button, 100 000 times)", unit: "ns/emission",
		aim: "Go handler ≤ 1.0× the Python lambda", sides: []string{"duet: Go callback", "PyGObject: Python lambda", "gotk4: Go handler"}}
	call := &comparison{title: "Go → Python call of a trivial function (1 000 000)", unit: "ns/call",
		aim: "≤ 150 ns", sides: []string{"duet: Go → Python", "Python → Python"}}
	back := &comparison{title: "Python → Go callback, no arguments (1 000 000)", unit: "ns/call",
		aim: "≤ 250 ns", sides: []string{"duet: Python → Go", "Python → Python"}}
	create := &comparison{title: "callback create + connect + disconnect + free (100 000)", unit: "ns/cycle",
		aim: "≤ 1 µs", sides: []string{"duet: Go callback", "PyGObject: Python lambda"}}
	start := &comparison{title: "start-up to the first frame (window + button, whole process)", unit: "ms",
		aim: "duet ≤ 1.2× PyGObject", sides: []string{"duet app", "PyGObject script", "gotk4 program"}}
	rss := &comparison{title: "peak RSS of the start-up programs", unit: "MB",
		sides: []string{"duet app", "PyGObject script", "gotk4 program"}}
	idle := &comparison{title: "wakeups of an idle app (window shown, nothing happening): voluntary context switches of all threads", unit: "per second",
		aim: "duet ≤ 1/s", sides: []string{"duet app", "PyGObject script", "gotk4 program"}}

	py := func(args ...string) (float64, error) {
		out, err := exec.Command(*python, append([]string{script}, args...)...).Output()
		if err != nil {
			return 0, fmt.Errorf("%s %v: %w", script, args, err)
		}
		return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	}
	for r := range *rounds {
		fmt.Fprintf(os.Stderr, "round %d/%d\n", r+1, *rounds)
		steps := []func() error{
			func() error { v, err := emitDuet(Gtk, count(100000)); emit.add(emit.sides[0], v); return err },
			func() error { v, err := py("emit", fmt.Sprint(count(100000))); emit.add(emit.sides[1], v); return err },
			func() error { emit.add(emit.sides[2], emitGotk4(count(100000))); return nil },
			func() error { v, err := callDuet(count(1000000)); call.add(call.sides[0], v); return err },
			func() error {
				v, err := py("call", fmt.Sprint(count(1000000)))
				call.add(call.sides[1], v)
				back.add(back.sides[1], v)
				return err
			},
			func() error { v, err := backDuet(count(1000000)); back.add(back.sides[0], v); return err },
			func() error { v, err := createDuet(Gtk, count(100000)); create.add(create.sides[0], v); return err },
			func() error {
				v, err := py("create", fmt.Sprint(count(100000)))
				create.add(create.sides[1], v)
				return err
			},
			func() error { return startup(progs["duet"], nil, start, rss, 0) },
			func() error { return startup(*python, []string{script, "startup"}, start, rss, 1) },
			func() error { return startup(progs["gotk4"], nil, start, rss, 2) },
			func() error { return idleWakeups(progs["duet"], []string{"idle"}, idle, 0) },
			func() error { return idleWakeups(*python, []string{script, "idle"}, idle, 1) },
			func() error { return idleWakeups(progs["gotk4"], []string{"idle"}, idle, 2) },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
			runtime.GC()
		}
	}
	table := render([]*comparison{emit, call, back, create, start, rss, idle})
	fmt.Print(table)
	if *outFile != "" {
		if err := os.MkdirAll(filepath.Dir(*outFile), 0o755); err != nil {
			return err
		}
		return os.WriteFile(*outFile, []byte(table), 0o644)
	}
	return nil
}

// emitDuet: a Python loop emits the signal; the handler is a Go callback.
func emitDuet(Gtk *pygi.Object, n int) (float64, error) {
	g, err := pygi.NewGlobals()
	if err != nil {
		return 0, err
	}
	defer g.Close()
	b, err := Gtk.CallMethod("Button", pygi.Kw{"label": "x"})
	if err != nil {
		return 0, err
	}
	if _, err := b.CallMethod("connect", "clicked", func(*pygi.Object) {}); err != nil {
		return 0, err
	}
	g.SetItem("b", b)
	g.SetItem("n", n)
	r, err := pygi.Eval("(lambda t: ([b.emit('clicked') for _ in range(n)], __import__('time').perf_counter_ns() - t)[1])(__import__('time').perf_counter_ns())", g)
	if err != nil {
		return 0, err
	}
	ns, err := r.Int()
	return float64(ns) / float64(n), err
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

// backDuet: a Python loop calls a Go no-op.
func backDuet(n int) (float64, error) {
	g, err := pygi.NewGlobals()
	if err != nil {
		return 0, err
	}
	defer g.Close()
	g.SetItem("f", func() {})
	g.SetItem("n", n)
	r, err := pygi.Eval("(lambda t: ([f() for _ in range(n)], __import__('time').perf_counter_ns() - t)[1])(__import__('time').perf_counter_ns())", g)
	if err != nil {
		return 0, err
	}
	ns, err := r.Int()
	return float64(ns) / float64(n), err
}

// createDuet: a Go loop makes a callback, connects it, disconnects it and
// lets it go.
func createDuet(Gtk *pygi.Object, n int) (float64, error) {
	b, err := Gtk.CallMethod("Button", pygi.Kw{"label": "x"})
	if err != nil {
		return 0, err
	}
	fn := func(*pygi.Object) {}
	t := time.Now()
	for range n {
		cb, err := callbacks.New(fn)
		if err != nil {
			return 0, err
		}
		id, err := b.CallMethod("connect", "clicked", cb)
		if err != nil {
			return 0, err
		}
		if _, err := b.CallMethod("disconnect", id); err != nil {
			return 0, err
		}
		cb.Close()
		id.Close()
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

func render(cs []*comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s (%d cores), %s; medians of %d interleaved rounds.\n\n",
		time.Now().Format("2006-01-02"), cpuModel(), runtime.NumCPU(), goVersion(), *rounds)
	b.WriteString("| comparison | duet | reference | ratio | aim |\n|---|---|---|---|---|\n")
	for _, c := range cs {
		d := median(c.vals[c.sides[0]])
		for _, ref := range c.sides[1:] {
			r := median(c.vals[ref])
			ratio := "-"
			if r > 0 {
				ratio = fmt.Sprintf("%.2f×", d/r)
			}
			fmt.Fprintf(&b, "| %s | %s: %s %s | %s: %s %s | %s | %s |\n", c.title, c.sides[0], num(d), c.unit, ref, num(r), c.unit, ratio, c.aim)
		}
	}
	return b.String()
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
	v, _ := pygi.Version()
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
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
