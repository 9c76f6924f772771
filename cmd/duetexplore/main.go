package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/explore"
)

// Exit statuses.
const (
	exitClean    = 0
	exitReplay   = 1 // -replay: the trace could not be replayed
	exitUsage    = 2
	exitFound    = 3
	exitExplorer = 4               // the explorer failed: nothing found, nothing cleared
	exitNoStart  = 5               // the program did not start (or did not start the explorer)
	exitBadFile  = 6               // -replay: the file is not a whole replay file
	childStopGap = 2 * time.Second // between SIGQUIT and SIGKILL
	// childWaitDelay bounds how long a child's output is still copied
	// (with -v) once it exited: what it wrote is in the pipe by then;
	// only a process it started could keep the pipe open.
	childWaitDelay = time.Second
)

func main() {
	// The command owns its process: SIGINT, SIGTERM and SIGHUP (its
	// terminal gone) end the run (the children, their process groups,
	// the X server, the temporary directories), then the driver, with 128
	// plus the signal as a shell reports it. A second one ends the driver
	// at once (the signal's default): the programs go with it
	// (Pdeathsig), though not what they started, the X server too,
	// cleanly (SIGTERM). SIGQUIT keeps Go's meaning: a goroutine dump. A
	// signal the driver was started ignoring stays ignored (nohup's
	// SIGHUP, a background job's SIGINT): Notify would take that back.
	sigs := make(chan os.Signal, 1)
	var caughtSigs []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			caughtSigs = append(caughtSigs, s)
		}
	}
	signal.Notify(sigs, caughtSigs...)
	ctx, cancel := context.WithCancel(context.Background())
	caught := make(chan os.Signal, 1)
	go func() {
		sig := <-sigs
		signal.Reset(caughtSigs...)
		caught <- sig
		cancel()
	}()
	status := exitUsage
	x, err := ensureDisplay(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "duetexplore:", err)
	} else {
		if x != nil {
			fmt.Fprintf(os.Stderr, "duetexplore: X server %s (Xvfb, pid %d)\n", x.display, x.cmd.Process.Pid)
		}
		status = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		if x != nil {
			x.stop()
		}
	}
	select {
	case sig := <-caught:
		if s, ok := sig.(syscall.Signal); ok {
			status = 128 + int(s)
		}
	default:
	}
	cancel()
	os.Exit(status)
}

type driver struct {
	exe        string
	appArgs    []string
	tmp        string
	out        io.Writer
	log        io.Writer
	verbose    bool
	seed       uint64
	duration   time.Duration
	pace, gc   time.Duration
	stall      time.Duration
	hang       time.Duration
	grace      time.Duration
	actions    int
	leak       string
	leakEvery  int
	leakRounds int
	keepGoing  bool
	ignoreLog  string // -ignore-log: checked by regexp.Compile in run
	children   int
	keepTmp    bool
	shrinkTime time.Duration
	maxReplays int
	testDir    string // -test: where the regression test goes ("": none)
	plot       string // -plot: where the run's SVG plot goes ("": none)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("duetexplore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: duetexplore [flags] ./path/to/app [app arguments]\n       duetexplore [flags] -exe PROGRAM [app arguments]")
		fs.PrintDefaults()
	}
	d := &driver{out: stdout, log: stderr}
	seed := fs.Uint64("seed", 0, "the run's seed (default: from the clock; the report says which)")
	fs.DurationVar(&d.duration, "duration", 30*time.Second, "how long to explore")
	fs.DurationVar(&d.pace, "pace", 5*time.Millisecond, "pause between two actions")
	gc := fs.String("gc", "50ms", "how often both collectors are forced between actions, or off")
	fs.DurationVar(&d.stall, "stall", time.Second, "how long a handler may keep the UI thread before it is a stall")
	fs.DurationVar(&d.hang, "hang", 10*time.Second, "how long the UI thread may stay away before it is a hang")
	fs.DurationVar(&d.grace, "grace", 30*time.Second, "how long the program may still run after its run's time (and -hang) before it is a hang: then SIGQUIT (the goroutine dump), then SIGKILL")
	fs.IntVar(&d.actions, "actions", 0, "bound on the number of actions (0: none)")
	noLeak := fs.Bool("no-leak", false, "turn the leak check off")
	fs.IntVar(&d.leakEvery, "leak-every", 0, "actions between two censuses of the leak check (0: the explorer's default, 20)")
	fs.IntVar(&d.leakRounds, "leak-rounds", 0, "censuses in a row a row must grow at to be a leak (0: the explorer's default, 5)")
	fs.StringVar(&d.ignoreLog, "ignore-log", "", "GLib and GTK messages matching this regular expression (\"Gtk-WARNING: Trying to snapshot\", domain and level first) are no findings: for the toolkit's own warnings a program cannot help")
	fs.BoolVar(&d.keepGoing, "keep-going", false, "go on after a finding to the end of the run (a fresh child with the next seed after a crash or a hang), then confirm, shrink and write each distinct finding")
	fs.DurationVar(&d.shrinkTime, "shrink-time", 2*time.Minute, "time bound on shrinking a finding's trace")
	fs.IntVar(&d.maxReplays, "max-replays", 200, "bound on the replays shrinking runs")
	outFile := fs.String("o", "", "where the shrunk trace goes, as a replay file (default: a new duetexplore-KIND-*.jsonl in the temporary directory)")
	fs.StringVar(&d.plot, "plot", "", "draw the exploring run (or -replay's) as SVG into this file: actions, live callbacks, RSS and findings on one timeline")
	replay := fs.String("replay", "", "replay this file (JSON lines from -o or DUET_EXPLORE_OUT) once and report")
	var test testFlag
	fs.Var(&test, "test", "once a finding is confirmed and shrunk, write its trace to testdata/duetexplore-KIND-HASH.jsonl and a Go test that replays it, duetexplore_KIND_HASH_test.go, into the explored package's directory (-test=DIR: into DIR)")
	exe := fs.String("exe", "", "explore this program, already built, instead of building a package")
	fs.BoolVar(&d.verbose, "v", false, "copy the program's stderr to ours")
	fs.BoolVar(&d.keepTmp, "keep", false, "keep the temporary directory (the builds, each child's stderr, traces)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitClean
		}
		return exitUsage
	}
	rest := fs.Args()
	if *exe == "" && len(rest) == 0 {
		fs.Usage()
		return exitUsage
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	d.seed = *seed
	if !seedSet {
		d.seed = uint64(time.Now().UnixNano())
	}
	switch {
	case *gc == "off":
		d.gc = -1
	default:
		v, err := time.ParseDuration(*gc)
		if err != nil || v <= 0 {
			fmt.Fprintf(stderr, "duetexplore: -gc %q: want a positive duration or off\n", *gc)
			return exitUsage
		}
		d.gc = v
	}
	if *noLeak {
		d.leak = "leak=off"
	}
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"duration", d.duration}, {"pace", d.pace}, {"stall", d.stall}, {"hang", d.hang}, {"grace", d.grace}, {"shrink-time", d.shrinkTime}} {
		if v.d <= 0 {
			fmt.Fprintf(stderr, "duetexplore: -%s %v: must be positive\n", v.name, v.d)
			return exitUsage
		}
	}
	// Counts: 0 is each one's "no bound" or "the default"; below it is a
	// mistake, not a bound (a negative -max-replays would skip shrinking
	// silently, a negative -actions explore without a bound).
	for _, c := range []struct {
		name string
		n    int
	}{{"actions", d.actions}, {"leak-every", d.leakEvery}, {"leak-rounds", d.leakRounds}, {"max-replays", d.maxReplays}} {
		if c.n < 0 {
			fmt.Fprintf(stderr, "duetexplore: -%s %d: must not be negative\n", c.name, c.n)
			return exitUsage
		}
	}
	if _, err := regexp.Compile(d.ignoreLog); err != nil {
		fmt.Fprintf(stderr, "duetexplore: -ignore-log: %v\n", err)
		return exitUsage
	}
	var rec *explore.Report
	if *replay != "" {
		// Before the build: a file that will not replay fails fast.
		var err error
		if rec, err = readReplayFile(*replay); err != nil {
			fmt.Fprintln(stderr, "duetexplore: -replay:", err)
			return exitBadFile
		}
	}
	tmp, err := os.MkdirTemp("", "duetexplore-")
	if err != nil {
		fmt.Fprintln(stderr, "duetexplore:", err)
		return exitUsage
	}
	d.tmp = tmp
	defer func() {
		if d.keepTmp {
			fmt.Fprintln(stderr, "duetexplore: kept", tmp)
			return
		}
		os.RemoveAll(tmp)
	}()
	if test.set {
		pkg := ""
		if *exe == "" {
			pkg = rest[0]
		}
		dir, err := testDir(ctx, &test, pkg)
		if err != nil {
			fmt.Fprintln(stderr, "duetexplore: -test:", err)
			return exitUsage
		}
		if _, err := packageName(dir); err != nil {
			fmt.Fprintln(stderr, "duetexplore: -test:", err)
			return exitUsage
		}
		d.testDir = dir
	}
	if *exe != "" {
		d.exe, d.appArgs = *exe, rest
	} else {
		d.appArgs = rest[1:]
		d.exe = filepath.Join(tmp, "app")
		fmt.Fprintf(stderr, "duetexplore: building %s\n", rest[0])
		build := exec.CommandContext(ctx, "go", "build", "-o", d.exe, rest[0])
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(stderr, "duetexplore: go build %s: %v\n", rest[0], err)
			return exitUsage
		}
	}
	if *replay != "" {
		return d.replayOnce(ctx, *replay, rec)
	}
	if d.keepGoing {
		return d.exploreAll(ctx, *outFile)
	}
	return d.explore(ctx, *outFile)
}

// An outcome is what one child did: its trace and its findings.
type outcome struct {
	rep      *explore.Report // the explorer's JSON lines; nil when it wrote none
	trace    []explore.Action
	finding  *explore.Finding   // the first: a crash, a hang, or the explorer's
	findings []*explore.Finding // all: the explorer's (its report's, or as it streamed them), then a crash or a hang
	cut      bool               // the process crashed or was killed: the run did not go to its end
	stderr   string             // the file that has the child's stderr
	// failed is the explorer's error (explore.Run's: package app's end
	// line says it), notStarted why the program did not start, or did
	// not start the explorer: neither is a finding, nor a clean run.
	failed, notStarted string
}

// notExplored reports a child that did not explore (o.failed or
// o.notStarted, with the end of its stderr) and returns the status for it.
func (d *driver) notExplored(o *outcome) int {
	status := exitExplorer
	if o.failed != "" {
		fmt.Fprintln(d.out, "duetexplore: the explorer failed (not a finding: nothing was explored to the end):", o.failed)
	} else {
		status = exitNoStart
		fmt.Fprintln(d.out, "duetexplore: the program did not start:", o.notStarted)
	}
	fmt.Fprintf(d.out, "duetexplore: its stderr ends:\n%s", stderrTail(o.stderr))
	return status
}

// stderrTail is the end of a child's stderr, its last lines, indented.
func stderrTail(path string) string {
	const lines, bytesMax = 20, 4 << 10
	data, _ := os.ReadFile(path)
	if len(data) > bytesMax {
		data = data[len(data)-bytesMax:]
	}
	ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	if len(ls) == 1 && ls[0] == "" {
		return "  (nothing)\n"
	}
	return "  " + strings.Join(ls, "\n  ") + "\n"
}

// met is the finding of o that is the same trouble as want (Finding.Same),
// or nil.
func (o *outcome) met(want *explore.Finding) *explore.Finding {
	for _, f := range o.findings {
		if want.Same(f) {
			return f
		}
	}
	return nil
}

func (d *driver) options() string {
	opts := []string{"pace=" + d.pace.String(), "stall=" + d.stall.String(), "hang=" + d.hang.String()}
	if d.gc < 0 {
		opts = append(opts, "gc=off")
	} else {
		opts = append(opts, "gc="+d.gc.String())
	}
	if d.leak != "" {
		opts = append(opts, d.leak)
	} else {
		if d.leakEvery > 0 {
			opts = append(opts, fmt.Sprintf("leak-every=%d", d.leakEvery))
		}
		if d.leakRounds > 0 {
			opts = append(opts, fmt.Sprintf("leak-rounds=%d", d.leakRounds))
		}
	}
	if d.ignoreLog != "" {
		opts = append(opts, "ignore-log="+strconv.Quote(d.ignoreLog))
	}
	if d.keepGoing {
		// Replays too: a finding met after another is met again only if
		// the replay goes on past the first.
		opts = append(opts, "keep-going")
	}
	return strings.Join(opts, ",")
}

func (d *driver) explore(ctx context.Context, outFile string) int {
	spec := fmt.Sprintf("seed=%d,duration=%s,%s", d.seed, d.duration, d.options())
	if d.actions > 0 {
		spec += fmt.Sprintf(",actions=%d", d.actions)
	}
	fmt.Fprintf(d.log, "duetexplore: exploring %s with DUET_EXPLORE=%s\n", filepath.Base(d.exe), spec)
	began := time.Now()
	o, err := d.child(ctx, spec, d.duration)
	if err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(d.log, "duetexplore:", err)
		return exitUsage
	}
	if o.failed != "" || o.notStarted != "" {
		return d.notExplored(o)
	}
	if o.rep != nil {
		fmt.Fprint(d.out, o.rep)
	} else {
		fmt.Fprintf(d.out, "explore: seed %d: %d actions before the program ended\n", d.seed, len(o.trace))
	}
	d.writePlot(d.plot, d.seed, o)
	if o.finding == nil {
		fmt.Fprintln(d.out, "duetexplore: nothing found")
		return exitClean
	}
	found := o.finding
	fmt.Fprintf(d.out, "duetexplore: found after %.1f s, %d actions: %s\n", time.Since(began).Seconds(), len(found.Trace), found)
	logDetail(d.out, found)
	d.settle(ctx, found, d.seed, outFile)
	return exitFound
}

// settled is what became of a finding: confirmed or not, shrunk, written.
type settled struct {
	found     *explore.Finding // as the exploration met it
	confirmed bool
	shrunk    *explore.Finding // with the shrunk trace, once confirmed
	file      string           // the replay file written ("" when it could not be)
	test      string           // the regression test written (-test)
}

// settle confirms a finding by a replay of its trace in a fresh process,
// shrinks its trace, writes it as a replay file (to path, or a new
// temporary file) and, with -test, as a regression test; seed is that of
// the run that met it.
func (d *driver) settle(ctx context.Context, found *explore.Finding, seed uint64, path string) *settled {
	s := &settled{found: found}
	if found.Kind == explore.KindCrash || found.Kind == explore.KindHang {
		d.keepTmp = true // the child's stderr (the goroutine dump) is there
		if found.Detail != "" {
			fmt.Fprintln(d.out, "duetexplore:", found.Detail)
		}
	}
	if ctx.Err() != nil {
		// Interrupted (SIGINT): no fresh process to confirm it in; its
		// trace is kept as it was found.
		fmt.Fprintf(d.out, "duetexplore: not confirmed: interrupted before its %d actions were replayed\n", len(found.Trace))
		s.file = d.write(path, found, found.Trace, seed)
		return s
	}
	// Confirm: the same trace again, in a fresh process.
	confirmed, again := d.reproduces(ctx, found.Trace, found)
	if !confirmed {
		fmt.Fprintf(d.out, "duetexplore: not confirmed: a replay of its %d actions did not meet it again (%s)\n", len(found.Trace), again)
		s.file = d.write(path, found, found.Trace, seed)
		return s
	}
	s.confirmed = true
	fmt.Fprintf(d.out, "duetexplore: confirmed by a replay of its %d actions\n", len(found.Trace))
	shrunk, last, replays := d.shrink(ctx, found)
	if last == nil {
		last = found
	}
	f := *last
	f.Trace = shrunk
	s.shrunk = &f
	fmt.Fprintf(d.out, "duetexplore: shrunk from %d to %d actions in %d replays:\n  %s\n", len(found.Trace), len(shrunk), replays, &f)
	s.file = d.write(path, &f, shrunk, seed)
	if d.testDir != "" {
		var err error
		if s.test, err = d.writeTest(d.testDir, &f, shrunk, seed); err != nil {
			fmt.Fprintln(d.log, "duetexplore: writing the regression test:", err)
		}
	}
	return s
}

// write saves trace, and the finding it leads to, as a replay file, and
// returns its name ("" when it could not).
func (d *driver) write(path string, f *explore.Finding, trace []explore.Action, seed uint64) string {
	var file *os.File
	var err error
	if path == "" {
		file, err = os.CreateTemp("", "duetexplore-"+string(f.Kind)+"-*.jsonl")
	} else {
		file, err = os.Create(path)
	}
	if err == nil {
		rep := &explore.Report{Seed: seed, Trace: trace, Findings: []*explore.Finding{f}}
		err = errors.Join(rep.WriteJSON(file), file.Close())
	}
	if err != nil {
		fmt.Fprintln(d.log, "duetexplore: writing the trace:", err)
		return ""
	}
	fmt.Fprintf(d.out, "duetexplore: trace written to %s (duetexplore -replay %s, or DUET_EXPLORE=replay=%s)\n", file.Name(), file.Name(), specValue(file.Name()))
	return file.Name()
}

// replayOnce is -replay: rec, read from path, replayed once.
func (d *driver) replayOnce(ctx context.Context, path string, rec *explore.Report) int {
	var expect *explore.Finding
	if len(rec.Findings) > 0 {
		expect = rec.Findings[0]
	}
	o, err := d.replay(ctx, rec.Trace, expect)
	if err != nil {
		fmt.Fprintln(d.log, "duetexplore:", err)
		return exitUsage
	}
	if o.failed != "" || o.notStarted != "" {
		return d.notExplored(o)
	}
	d.writePlot(d.plot, d.seed, o)
	replayed := len(o.trace)
	if o.rep != nil {
		replayed = o.rep.Replayed
	}
	fmt.Fprintf(d.out, "duetexplore: replayed %d of %d actions from %s\n", replayed, len(rec.Trace), path)
	for i, a := range o.trace {
		fmt.Fprintf(d.out, "  %d. %s\n", i+1, a)
	}
	if o.rep != nil && o.rep.ReplayError != "" {
		fmt.Fprintln(d.out, "duetexplore: replay error:", o.rep.ReplayError)
	}
	if expect != nil {
		if o.met(expect) != nil {
			fmt.Fprintln(d.out, "duetexplore: the recorded finding came back:", expect.Kind, expect.Message, expect.Where)
		} else {
			fmt.Fprintln(d.out, "duetexplore: the recorded finding did not come back:", expect)
		}
	}
	switch {
	case o.finding != nil:
		fmt.Fprintln(d.out, "duetexplore: found:", o.finding)
		return exitFound
	case o.rep != nil && o.rep.ReplayError != "":
		return exitReplay
	}
	fmt.Fprintln(d.out, "duetexplore: nothing found")
	return exitClean
}

// replay runs trace in a fresh child.
// replayLimit bounds a replay: the same pace as recorded, so what the
// recorded trace took (its last action's time), twice, and a margin.
func replayLimit(trace []explore.Action) time.Duration {
	var took time.Duration
	if n := len(trace); n > 0 {
		took = trace[n-1].At
	}
	return 2*took + 10*time.Second
}

func (d *driver) replay(ctx context.Context, trace []explore.Action, expect *explore.Finding) (*outcome, error) {
	file := filepath.Join(d.tmp, fmt.Sprintf("replay-%d.jsonl", d.children+1))
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	rep := &explore.Report{Trace: trace}
	if expect != nil {
		rep.Findings = []*explore.Finding{expect}
	}
	if err := errors.Join(rep.WriteJSON(f), f.Close()); err != nil {
		return nil, err
	}
	limit := replayLimit(trace)
	return d.child(ctx, fmt.Sprintf("replay=%s,duration=%s,%s", specValue(file), limit, d.options()), limit)
}

// specValue is v as a value of DUET_EXPLORE, whose options are comma
// separated: quoted (a Go string literal, which explore.ParseOptions
// reads) when it has a comma or a quote, or spaces at an end, that would
// cut it (a TMPDIR may have them), as it is otherwise.
func specValue(v string) string {
	if strings.ContainsAny(v, `,"`) || strings.TrimSpace(v) != v {
		return strconv.Quote(v)
	}
	return v
}

// reproduces says whether replaying trace meets the same trouble as want,
// and what the replay met instead.
func (d *driver) reproduces(ctx context.Context, trace []explore.Action, want *explore.Finding) (bool, string) {
	o, err := d.replay(ctx, trace, want)
	if err != nil {
		return false, err.Error()
	}
	if f := o.met(want); f != nil {
		return true, f.String()
	}
	switch {
	case o.failed != "":
		return false, "the explorer failed: " + o.failed
	case o.notStarted != "":
		return false, "the program did not start: " + o.notStarted
	case o.finding != nil:
		return false, "met " + o.finding.String()
	case o.rep != nil && o.rep.ReplayError != "":
		return false, "replay error: " + o.rep.ReplayError
	}
	return false, "met nothing"
}

// shrink runs ddmin over the finding's trace: chunks of it are removed as
// long as the rest, replayed, still meets the same trouble.
func (d *driver) shrink(ctx context.Context, found *explore.Finding) ([]explore.Action, *explore.Finding, int) {
	deadline := time.Now().Add(d.shrinkTime)
	replays := 0
	var last *explore.Finding
	test := func(c []explore.Action) bool {
		if replays >= d.maxReplays || time.Now().After(deadline) || ctx.Err() != nil || len(c) == 0 {
			return false
		}
		replays++
		o, err := d.replay(ctx, c, found)
		if err != nil {
			return false
		}
		if f := o.met(found); f != nil {
			last = f
			return true
		}
		return false
	}
	return ddmin(suffix(found.Trace, test), test), last, replays
}

// suffix is the shortest of c's last 1, 2, 4, ... elements for which test
// holds, or c: trouble usually needs the last actions of a long trace (a
// leak, the censuses' window; a crash, the action before it), and short
// replays first cost ddmin far fewer long ones (a leak's trace of 2680
// actions was still 1173 long when -shrink-time ran out).
func suffix[T any](c []T, test func([]T) bool) []T {
	for k := 1; k < len(c); k *= 2 {
		if test(c[len(c)-k:]) {
			return c[len(c)-k:]
		}
	}
	return c
}

// ddmin is Zeller's delta debugging: the smallest sublist of c (1-minimal
// as far as the tests went) for which test still holds; test(c) is taken
// to hold.
func ddmin[T any](c []T, test func([]T) bool) []T {
	n := 2
	for len(c) >= 2 {
		chunks := split(c, n)
		reduced := false
		for _, ch := range chunks {
			if test(ch) {
				c, n, reduced = ch, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				var rest []T
				for j, ch := range chunks {
					if j != i {
						rest = append(rest, ch...)
					}
				}
				if test(rest) {
					c, n, reduced = rest, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(c) {
				break
			}
			n = min(2*n, len(c))
		}
	}
	return c
}

// split cuts c into n chunks of nearly equal length.
func split[T any](c []T, n int) [][]T {
	var chunks [][]T
	start := 0
	for i := range n {
		end := start + (len(c)-start)/(n-i)
		chunks = append(chunks, append([]T(nil), c[start:end]...))
		start = end
	}
	return chunks
}

var (
	reportLine = regexp.MustCompile(`(?m)the whole report is in (\S+)`)
	signalLine = regexp.MustCompile(`(?m)^(SIG[A-Z]+: .*|fatal error: .*|panic: .*)$`)
)

// child runs the program once with DUET_EXPLORE=spec, waits for it, and
// reads what it left: the JSON lines, the streamed trace and findings, its
// exit. It is ended (SIGQUIT, for the Go runtime's goroutine dump, then
// SIGKILL) when it makes no progress for -hang plus progressMargin (it
// streams neither an action nor a heartbeat: the process is stopped, or
// its Go runtime is stuck), when the explorer said it hung (the program
// may never end), or when it still runs -hang plus -grace after its run's
// time.
func (d *driver) child(ctx context.Context, spec string, run time.Duration) (*outcome, error) {
	d.children++
	base := filepath.Join(d.tmp, fmt.Sprintf("child-%d", d.children))
	out, trace, errPath := base+".jsonl", base+".trace.jsonl", base+".stderr"
	errFile, err := os.Create(errPath)
	if err != nil {
		return nil, err
	}
	defer errFile.Close()
	cmd := exec.Command(d.exe, d.appArgs...)
	cmd.Env = childEnv(spec, out, trace)
	cmd.Stdout = errFile
	cmd.Stderr = errFile
	if d.verbose {
		cmd.Stdout = io.MultiWriter(errFile, d.log)
		cmd.Stderr = cmd.Stdout
	}
	// Its own process group, so that what it starts (a helper, a
	// subprocess Python ran) is ended with it: the group is killed once
	// it has exited, or when it is ended. Pdeathsig: a driver killed
	// outright takes the program with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// With -v its output goes through a pipe, which a process it started
	// may hold open after it exited: Wait would wait for that one too.
	cmd.WaitDelay = childWaitDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", d.exe, err)
	}
	pgid := cmd.Process.Pid
	// The group outlives its leader while a member lives, and its number
	// is not reused until then: killing it after Wait is safe.
	defer syscall.Kill(-pgid, syscall.SIGKILL)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	limit := run + d.hang + d.grace
	timer := time.NewTimer(limit)
	defer timer.Stop()
	poll := time.NewTicker(progressPoll)
	defer poll.Stop()
	w := &traceWatch{path: trace}
	defer w.close()
	stuck := d.hang + progressMargin
	var killed string   // why the driver ended it
	stopped := false    // it was stopped (SIGSTOP) when it was ended
	var seen int64 = -1 // no progress: how much of the trace came before it
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-ctx.Done():
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
			return nil, ctx.Err()
		case <-timer.C:
			// A driver stopped (Ctrl+Z) past the limit wakes to the timer
			// with the program long gone (its Wait not yet back, or select
			// picking the timer): the exit wins.
			if processExited(pgid) {
				<-exited // Wait is back at once
				break wait
			}
			killed = fmt.Sprintf("the program was still running %v after its run's time", d.hang+d.grace)
			stopped = end(cmd.Process, exited)
			break wait
		case <-poll.C:
			if processExited(pgid) { // as for the timer
				<-exited
				break wait
			}
			w.poll()
			switch {
			case w.end == "hang":
				killed = "the explorer reported a hang and the program did not end"
			case w.end == "" && w.beats && time.Since(w.last) > stuck:
				// Beating, then silent: neither an action nor a
				// heartbeat (once a second) for longer than the
				// explorer itself waits for the UI thread.
				killed = fmt.Sprintf("no progress for %.0f s: no action and no heartbeat on DUET_EXPLORE_TRACE (more than -hang %v and a %v margin)", time.Since(w.last).Seconds(), d.hang, progressMargin)
			default:
				continue
			}
			if w.end == "" {
				seen = w.read
			}
			stopped = end(cmd.Process, exited)
			break wait
		}
	}
	if seen < 0 {
		w.poll() // what it wrote before it ended: its end line
	}
	var streamed []*explore.Finding
	o := &outcome{stderr: errPath}
	o.trace, streamed, err = readTrace(trace, seen)
	if err != nil {
		fmt.Fprintln(d.log, "duetexplore: reading the streamed trace:", err)
	}
	// Without progress, what the process went on to write once continued
	// (SIGCONT, for its goroutine dump) is not this run's: not its report.
	if f, err := os.Open(out); err == nil {
		if seen < 0 {
			o.rep, _ = explore.ReadReport(f)
		}
		f.Close()
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	exitedBadly := ws.Exited() && ws.ExitStatus() != 0 && ws.ExitStatus() != exitFound
	switch {
	case killed != "":
	case w.end == "error":
		o.failed = w.endErr
		return o, nil
	case w.end == "not started":
		o.notStarted = fmt.Sprintf("the explorer never started (the application was never activated; exit status %d)", ws.ExitStatus())
		return o, nil
	case !w.lines && exitedBadly:
		// It ended before package app set up the explorer (before its
		// first heartbeat): its options refused, a flag or a setup
		// that failed, a build of something else. Not a crash to
		// confirm and shrink: there is no action to replay. (Dying of a
		// signal there is a crash still.)
		o.notStarted = fmt.Sprintf("it exited with status %d before the explorer started (no line on DUET_EXPLORE_TRACE)", ws.ExitStatus())
		return o, nil
	case !w.lines && ws.Exited() && o.rep == nil:
		o.notStarted = fmt.Sprintf("it exited with status %d without starting the explorer: no line on DUET_EXPLORE_TRACE, no report (does it run app.Main or App.Run?)", ws.ExitStatus())
		return o, nil
	}
	o.cut = killed != "" || ws.Signaled() || exitedBadly
	if o.rep != nil && len(o.rep.Findings) > 0 {
		// The explorer's report: its findings with their traces (an
		// explorer that reported its hang first, too).
		o.findings = o.rep.Findings
		o.finding = o.findings[0]
		o.trace = o.rep.Trace
		for _, f := range o.findings {
			if killed != "" && f.Kind == explore.KindHang && f.Detail == "" {
				f.Detail = "its stderr (the goroutine dump, the UI thread's stack in it): " + errPath
			}
		}
		return o, nil
	}
	if o.rep == nil {
		o.findings = streamed // what it had found before it died
	}
	stderr, _ := os.ReadFile(errPath)
	var f *explore.Finding
	switch {
	case killed != "":
		how := "killed: SIGQUIT, then SIGKILL"
		if stopped {
			how = "it was stopped (SIGSTOP): SIGCONT and SIGQUIT, then SIGKILL"
		}
		f = &explore.Finding{Kind: explore.KindHang,
			Message: fmt.Sprintf("%s (%s)", killed, how),
			Detail:  "its stderr (the goroutine dump): " + errPath}
	case ws.Signaled() || ws.ExitStatus() != 0 && ws.ExitStatus() != exitFound:
		how := fmt.Sprintf("exited with status %d", ws.ExitStatus())
		if ws.Signaled() {
			how = "died of " + signalName(ws.Signal())
		}
		msg := how
		if m := signalLine.FindSubmatch(stderr); m != nil {
			msg = fmt.Sprintf("%s (the process %s)", m[1], how)
		}
		detail := "its stderr: " + errPath
		if m := reportLine.FindSubmatch(stderr); m != nil {
			detail = "crash report: " + string(m[1]) + "; " + detail
		}
		f = &explore.Finding{Kind: explore.KindCrash, Message: msg, Detail: detail}
	}
	if f != nil {
		f.Trace = o.trace
		o.findings = append(o.findings, f)
	}
	if len(o.findings) > 0 {
		o.finding = o.findings[0]
	}
	return o, nil
}

// childEnv is the program's environment: the explorer on, crash reports
// on, and criticals left to be findings (not aborts).
func childEnv(spec, out, trace string) []string {
	var env []string
	crash := false
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "DUET_EXPLORE"):
			continue
		case k == "G_DEBUG":
			var keep []string
			for f := range strings.SplitSeq(v, ",") {
				if f != "fatal-criticals" && f != "fatal-warnings" && f != "" {
					keep = append(keep, f)
				}
			}
			kv = "G_DEBUG=" + strings.Join(keep, ",")
		case k == "DUET_CRASH_REPORT":
			crash = true
		}
		env = append(env, kv)
	}
	if !crash {
		env = append(env, "DUET_CRASH_REPORT=1")
	}
	if os.Getenv("GTK_A11Y") == "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		env = append(env, "GTK_A11Y=none") // no session bus to talk to
	}
	return append(env, "DUET_ALLOW_CRITICALS=1", "DUET_EXPLORE="+spec, "DUET_EXPLORE_OUT="+out, "DUET_EXPLORE_TRACE="+trace)
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS",
		syscall.SIGKILL: "SIGKILL", syscall.SIGILL: "SIGILL", syscall.SIGFPE: "SIGFPE", syscall.SIGTRAP: "SIGTRAP", syscall.SIGQUIT: "SIGQUIT"}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}

// readTrace reads DUET_EXPLORE_TRACE's lines: the last line of each index
// is the action (done, or under way when the process ended); each finding
// line is a finding as the explorer made it, given the trace up to it. The
// heartbeat and the end line are skipped.
// Only its first limit bytes are read, unless limit is negative. The
// error is for a line longer than maxLine: what came before it is
// returned.
func readTrace(path string, limit int64) ([]explore.Action, []*explore.Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil // no trace: the program did not get as far
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	var trace []explore.Action
	type found struct {
		f    *explore.Finding
		upto int
	}
	var founds []found
	br := bufio.NewReader(r)
	var readErr error
	for n := 1; ; n++ {
		raw, err := readLine(br)
		if err != nil {
			if err != io.EOF {
				readErr = fmt.Errorf("%s: line %d: %w", path, n, err)
			}
			break
		}
		var line struct {
			N       int
			Action  *explore.Action
			Finding *explore.Finding
			Upto    int
		}
		if json.Unmarshal(raw, &line) != nil {
			continue // a line cut short by the end of the process
		}
		switch {
		case line.Finding != nil:
			founds = append(founds, found{line.Finding, line.Upto})
		case line.Action == nil || line.N < 0 || line.N > len(trace):
			// a heartbeat, the end, or a line out of order
		case line.N == len(trace):
			trace = append(trace, *line.Action)
		default:
			trace[line.N] = *line.Action
		}
	}
	var findings []*explore.Finding
	for _, fd := range founds {
		fd.f.Trace = slices.Clone(trace[:min(max(fd.upto, 0), len(trace))])
		findings = append(findings, fd.f)
	}
	return trace, findings, readErr
}

// logDetail prints where a GLib/GTK message's widget is, when the explorer
// found it (a panic's or a crash's detail, its stack, is printed where the
// trace is confirmed).
func logDetail(w io.Writer, f *explore.Finding) {
	if f.Kind == explore.KindLog && f.Detail != "" {
		fmt.Fprintln(w, "duetexplore:  ", f.Detail)
	}
}
