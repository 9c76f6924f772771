package explore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

//go:embed *.py
var pyFiles embed.FS

var explorerPy = pysrc.Embed("explore", pyFiles).Module("duet_explore", "explore.py", pysrc.UIThread())

// Options configure a run. The zero value explores for 30 s with seed 0.
type Options struct {
	// Seed makes the run's choices: the same seed on the same program
	// takes the same actions.
	Seed uint64
	// Duration bounds the run (default 30 s); Run's context may end it
	// sooner.
	Duration time.Duration
	// Actions bounds the number of actions; 0 for no bound.
	Actions int
	// Pace is the pause between two actions (default 5 ms), in which the
	// loop runs whatever the action queued.
	Pace time.Duration
	// GC is how often both collectors are forced (eventloop.Collect)
	// between actions (default 50 ms); negative for never.
	GC time.Duration
	// Stall is how long an action's handlers may keep the UI thread
	// before it is a finding (default 1 s).
	Stall time.Duration
	// LeakEvery is the number of actions between two censuses (default
	// 20), LeakRounds how many growths in a row make a leak (default 5);
	// LeakRounds negative turns the leak check off.
	LeakEvery, LeakRounds int
	// KeepGoing goes on after a finding, to the end of the run; by
	// default the run stops at its first finding.
	KeepGoing bool
	// App is the application whose actions are activated (app.<name>);
	// nil for Gio.Application.get_default().
	App *pygi.Object
}

func (o Options) withDefaults() Options {
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	if o.Pace <= 0 {
		o.Pace = 5 * time.Millisecond
	}
	if o.GC == 0 {
		o.GC = 50 * time.Millisecond
	}
	if o.Stall <= 0 {
		o.Stall = time.Second
	}
	if o.LeakEvery <= 0 {
		o.LeakEvery = 20
	}
	if o.LeakRounds == 0 {
		o.LeakRounds = 5
	}
	return o
}

// ParseOptions reads options written as DUET_EXPLORE takes them: a comma
// separated list of seed=N, duration=D, actions=N, pace=D, gc=D (or
// gc=off), stall=D, leak-every=N, leak-rounds=N (or leak=off) and
// keep-going, with D in time.ParseDuration's form. Without seed=, the seed
// comes from the clock (the report says which it was).
func ParseOptions(s string) (Options, error) {
	o := Options{Seed: uint64(time.Now().UnixNano())}
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		key, val, _ := strings.Cut(field, "=")
		var err error
		switch key {
		case "seed":
			o.Seed, err = strconv.ParseUint(val, 10, 64)
		case "duration":
			o.Duration, err = time.ParseDuration(val)
		case "actions":
			o.Actions, err = strconv.Atoi(val)
		case "pace":
			o.Pace, err = time.ParseDuration(val)
		case "gc":
			if val == "off" {
				o.GC = -1
			} else {
				o.GC, err = time.ParseDuration(val)
			}
		case "stall":
			o.Stall, err = time.ParseDuration(val)
		case "leak-every":
			o.LeakEvery, err = strconv.Atoi(val)
		case "leak-rounds":
			o.LeakRounds, err = strconv.Atoi(val)
		case "leak":
			if val != "off" {
				err = errors.New("only leak=off")
			}
			o.LeakRounds = -1
		case "keep-going":
			o.KeepGoing = val == "" || val == "1" || val == "true"
		default:
			return Options{}, fmt.Errorf("explore: unknown option %q (want seed, duration, actions, pace, gc, stall, leak-every, leak-rounds, leak, keep-going)", key)
		}
		if err != nil {
			return Options{}, fmt.Errorf("explore: option %q: %w", field, err)
		}
	}
	return o, nil
}

// Run explores the program it runs in until the run's time or actions are
// used up, ctx ends, the loop stops, or (without KeepGoing) the first
// finding, and returns what it did and found. It waits, so it runs on a
// goroutine while the loop runs (the actions themselves run on the UI
// thread); on the UI thread it would wait for itself, and is refused.
// The error is for a run that could not go on (Python gone, the loop
// stopped before the first step); findings are never errors.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if eventloop.IsMain() {
		return nil, errors.New("explore: Run waits for the UI thread, which runs the actions: call it from a goroutine")
	}
	if !eventloop.Running() {
		return nil, eventloop.ErrNotRunning
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	x := &explorer{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), start: time.Now()}
	x.report.Seed = opts.Seed
	if err := x.setUp(ctx); err != nil {
		return nil, err
	}
	defer x.tearDown()
	lastGC := time.Now()
	for ctx.Err() == nil && eventloop.Running() {
		if opts.Actions > 0 && len(x.report.Trace) >= opts.Actions {
			break
		}
		if err := x.step(ctx); err != nil {
			if ctx.Err() != nil || !eventloop.Running() {
				break // the end of the run, not a failure
			}
			return nil, err
		}
		if x.stop() {
			break
		}
		if opts.GC > 0 && time.Since(lastGC) >= opts.GC {
			if err := eventloop.Collect(); err != nil {
				break // Python or the loop went away
			}
			lastGC = time.Now()
		}
		if opts.LeakRounds > 0 && len(x.report.Trace)%opts.LeakEvery == 0 {
			x.census(ctx)
			if x.stop() {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(opts.Pace):
		}
	}
	x.report.Elapsed = time.Since(x.start)
	x.coverage() // with the last action's target reached
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range x.report.Findings {
		f.Trace = slices.Clone(x.report.Trace[:f.upto])
	}
	return &x.report, nil
}

// explorer is one run's state. Its hooks (exceptions, panics, log records)
// run on whatever thread reports them; mu guards what they touch.
type explorer struct {
	opts  Options
	rng   *rand.Rand
	start time.Time
	mod   *pygi.Object
	app   *pygi.Object

	mu     sync.Mutex
	report Report
	seen   map[string]*Finding // by kind and message: repeats are counted, not listed
	undo   []func()

	censuses []map[string]int
	marks    []int // len(Trace) at each census
}

func (x *explorer) setUp(ctx context.Context) error {
	x.seen = map[string]*Finding{}
	err := eventloop.InvokeWait(ctx, func() error {
		m, err := explorerPy.Load()
		if err != nil {
			return err
		}
		x.mod = m
		if x.opts.App != nil {
			x.app, err = x.opts.App.Clone()
		} else {
			x.app, err = pygi.Eval("__import__('gi.repository.Gio', fromlist=['Gio']).Application.get_default()", nil)
		}
		if err != nil {
			return err
		}
		r, err := m.CallMethod("reset")
		r.Close()
		return err
	})
	if err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	x.undo = append(x.undo,
		eventloop.OnPythonException(x.pythonException),
		eventloop.OnPanic(func(p *pygi.PanicError) { x.found(panicFinding(p)) }))
	stop, err := eventloop.RouteLogs(&logHandler{x: x, next: stderrLogs()})
	if err != nil {
		x.tearDown()
		return fmt.Errorf("explore: %w", err)
	}
	x.undo = append(x.undo, stop)
	return nil
}

func (x *explorer) tearDown() {
	for _, f := range x.undo {
		f()
	}
	x.undo = nil
	if x.app != nil {
		x.app.Close()
	}
}

// step lists what can be done now, picks one, does it and times it, all in
// one visit to the UI thread, so that nothing changes between the listing
// and the action.
func (x *explorer) step(ctx context.Context) error {
	return eventloop.InvokeWait(ctx, func() error {
		defer func() {
			if r, err := x.mod.CallMethod("forget"); err == nil {
				r.Close()
			}
		}()
		nObj, err := x.mod.CallMethod("candidates", x.app)
		if err != nil {
			return fmt.Errorf("explore: listing the widgets: %w", err)
		}
		counts, err := pygi.As[[]int](nObj)
		nObj.Close()
		if err != nil || len(counts) != 3 {
			return fmt.Errorf("explore: listing the widgets gave %v: %v", counts, err)
		}
		n := counts[0]
		// Coverage is kept as it goes: a program may end the loop (a
		// window's close button) before the run could ask.
		x.mu.Lock()
		x.report.Seen, x.report.Reached = counts[1], counts[2]
		x.mu.Unlock()
		// Every choice draws the same numbers whatever it needs of them,
		// so that one choice's needs do not shift the next ones.
		i, r, which, frac := 0, x.rng.Uint64()>>1, x.rng.IntN(4), x.rng.Float64()
		if n > 0 {
			i = x.rng.IntN(n)
		}
		if n == 0 {
			return nil // nothing to act on now; the loop may show something later
		}
		f := frac
		switch which {
		case 0:
			f = -1 // the lower extreme
		case 1:
			f = 2 // the upper extreme
		}
		x.mu.Lock()
		idx := len(x.report.Trace)
		x.report.Trace = append(x.report.Trace, Action{At: time.Since(x.start)})
		x.mu.Unlock()
		began := time.Now()
		res, err := x.mod.CallMethod("act", i, r, f)
		took := time.Since(began)
		a, convErr := describe(res)
		res.Close()
		x.mu.Lock()
		a.At = x.report.Trace[idx].At
		x.report.Trace[idx] = a
		x.mu.Unlock()
		if err != nil {
			var pe *pygi.Error
			if !errors.As(err, &pe) {
				return err
			}
			x.found(exceptionFinding(pe, "raised by the action itself"))
		} else if convErr != nil {
			return convErr
		}
		if took > x.opts.Stall {
			x.found(&Finding{Kind: KindStall, Message: fmt.Sprintf("the action kept the UI thread for %.2f s (more than %v)", took.Seconds(), x.opts.Stall)})
		}
		return nil
	})
}

// describe reads act's result: (verb, address, label, window, value).
func describe(res *pygi.Object) (Action, error) {
	if res == nil {
		return Action{}, nil
	}
	v, err := pygi.As[[]string](res)
	if err != nil || len(v) != 5 {
		return Action{}, fmt.Errorf("explore: act returned %v: %v", res, err)
	}
	return Action{Verb: v[0], Address: v[1], Label: v[2], Window: v[3], Value: v[4]}, nil
}

// found records f with the trace so far, or counts it as a repeat.
func (x *explorer) found(f *Finding) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := f.key
	if key == "" {
		key = string(f.Kind) + "\x00" + f.Message + "\x00" + f.Where
	}
	if old, ok := x.seen[key]; ok {
		old.Repeats++
		return
	}
	// The trace is cut when the run ends: the action under way is
	// described only once it returns.
	f.upto = len(x.report.Trace)
	x.seen[key] = f
	x.report.Findings = append(x.report.Findings, f)
}

func (x *explorer) stop() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return !x.opts.KeepGoing && len(x.report.Findings) > 0
}

func (x *explorer) pythonException(e *pygi.Error) {
	var p *pygi.PanicError
	if errors.As(e, &p) {
		x.found(panicFinding(p))
		return
	}
	x.found(exceptionFinding(e, ""))
}

func (x *explorer) coverage() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	eventloop.InvokeWait(ctx, func() error {
		r, err := x.mod.CallMethod("coverage")
		if err != nil {
			return err
		}
		defer r.Close()
		v, err := pygi.As[[]int](r)
		if err == nil && len(v) == 2 {
			x.mu.Lock()
			x.report.Seen, x.report.Reached = v[0], v[1]
			x.mu.Unlock()
		}
		return err
	})
}

// census takes a census once both collectors have settled and reports the
// rows that grew at each of the last LeakRounds censuses.
func (x *explorer) census(ctx context.Context) {
	for range 2 {
		if eventloop.Collect() != nil {
			return
		}
	}
	var c *forensics.Census
	err := eventloop.InvokeWait(ctx, func() error {
		var err error
		c, err = forensics.TakeCensus()
		return err
	})
	if err != nil {
		return
	}
	rows := map[string]int{}
	add := func(table string, counts []forensics.Count) {
		for _, r := range counts {
			rows[table+"\x00"+r.Name+"\x00"+r.Site] = r.N
		}
	}
	add("callbacks", c.Callbacks)
	add("python", c.PyObjects)
	add("gobjects", c.GObjects)
	x.mu.Lock()
	x.censuses = append(x.censuses, rows)
	x.marks = append(x.marks, len(x.report.Trace))
	need := x.opts.LeakRounds + 1
	if len(x.censuses) > need {
		x.censuses = x.censuses[1:]
		x.marks = x.marks[1:]
	}
	x.mu.Unlock()
	if len(x.censuses) < need {
		return
	}
	keys := slices.Sorted(maps.Keys(rows))
	for _, key := range keys {
		last := rows[key]
		grew := true
		for i := 1; i < need && grew; i++ {
			grew = x.censuses[i][key] > x.censuses[i-1][key]
		}
		if !grew {
			continue
		}
		table, rest, _ := strings.Cut(key, "\x00")
		name, site, _ := strings.Cut(rest, "\x00")
		first := x.censuses[0][key]
		x.found(&Finding{
			Kind:    KindLeak,
			Message: fmt.Sprintf("%s %q grew at each of %d censuses, %d actions apart: %d → %d", tableWords(table), name, x.opts.LeakRounds, x.opts.LeakEvery, first, last),
			Where:   site,
			Detail:  fmt.Sprintf("census table %q, row %q, over actions %d to %d", table, name, x.marks[0], x.marks[len(x.marks)-1]),
			key:     "leak\x00" + key,
		})
	}
}

func tableWords(table string) string {
	switch table {
	case "callbacks":
		return "live Go callback"
	case "python":
		return "Python objects Go holds, of type"
	case "gobjects":
		return "GObjects of type"
	}
	return table
}
