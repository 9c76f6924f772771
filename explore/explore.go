package explore

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// Stall is how long an action's handlers, or the work they queued,
	// may keep the UI thread before it is a finding (default 1 s).
	Stall time.Duration
	// Hang is how long the UI thread may stay away before the run gives
	// up on it with a KindHang finding (default 10 s).
	Hang time.Duration
	// LeakEvery is the number of actions between two censuses (default
	// 20), LeakRounds how many growths in a row make a leak (default 5);
	// LeakRounds negative turns the leak check off.
	LeakEvery, LeakRounds int
	// KeepGoing goes on after a finding, to the end of the run; by
	// default the run stops at its first finding.
	KeepGoing bool
	// Replay, when not nil, is a recorded trace to take again instead of
	// random choices: each action is done on the candidate whose address
	// and verb are the recorded ones (or, when none has that address, the
	// one candidate with its structural key and verb: see
	// Action.Address), with its recorded Input, at the same pace and with
	// the same forced collections; the run ends after the last one. An
	// address not found (within Options.ReplayWait) ends the run with
	// Report.ReplayError, which is not a finding. Nothing is drawn at
	// random.
	Replay []Action
	// ReplayStrict makes a replay take each recorded address as it is:
	// no fallback to the structural key, which, after the UI changed,
	// may name another widget (a button put before the recorded one): a
	// regression test's replay would then act elsewhere and pass while
	// the bug is still there. A recorded address not found is then a
	// ReplayError.
	ReplayStrict bool
	// Expect is the finding a replay should meet again (Report.Reproduced
	// says whether it did, see Finding.Same); nil for none.
	Expect *Finding
	// ReplayWait is how long a replay waits for a recorded address to
	// appear (a window the previous action opens, say; default 1 s).
	ReplayWait time.Duration
	// OnAction, when not nil, is called on the UI thread with the n-th
	// action of the trace (from 0) twice: before it is done (its Input
	// already chosen, its Value what is known before: the text to type,
	// the item to pick; a toggle's is not) and once done. Package app
	// streams them to DUET_EXPLORE_TRACE, so that what a crashed process
	// did, and was doing, is known, and replays.
	OnAction func(n int, a Action)
	// OnFinding, when not nil, is called with each finding when it is
	// first made (not its repeats), on whatever thread saw it, with the
	// number of actions of the trace that led to it (those OnAction has
	// seen; f.Trace is empty: the report fills it in when the run ends).
	// Package app streams them to DUET_EXPLORE_TRACE, so that what a
	// process found before it crashed is known.
	OnFinding func(f Finding, actions int)
	// App is the application whose actions are activated (app.<name>);
	// nil for Gio.Application.get_default().
	App *pygi.Object
	// IgnoreLog, when not nil, says which GLib and GTK messages are no
	// findings: those whose finding's message ("Gtk-WARNING: Trying to
	// snapshot GtkGizmo 0x33d9640 without a current allocation", domain
	// and level first) it matches. They print on stderr, as they would
	// without the explorer. For the toolkit's own warnings that a
	// program cannot help: GTK 4.8 says that one, now and then, of the
	// trough of a scrolled window's scrollbar while a text view in it
	// grows (the showcase's log).
	IgnoreLog *regexp.Regexp
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
	if o.Hang <= 0 {
		o.Hang = 10 * time.Second
	}
	if o.LeakEvery <= 0 {
		o.LeakEvery = 20
	}
	if o.LeakRounds == 0 {
		o.LeakRounds = 5
	}
	if o.ReplayWait <= 0 {
		o.ReplayWait = time.Second
	}
	return o
}

// ParseOptions reads options written as DUET_EXPLORE takes them: a comma
// separated list of seed=N, duration=D, actions=N, pace=D, gc=D (or
// gc=off), stall=D, hang=D, leak-every=N, leak-rounds=N (or leak=off),
// keep-going (or keep-going=true|false), strict (or strict=true|false:
// Options.ReplayStrict), ignore-log=REGEXP (Options.IgnoreLog, in
// regexp's syntax; quote it as below when it has a comma) and replay=FILE (the JSON lines
// Report.WriteJSON wrote, read with ReadReport: its trace becomes
// Options.Replay, its first finding Options.Expect), with D a positive duration in
// time.ParseDuration's form and N a positive number. A value may be
// written as a Go string literal ("..."), in which a comma does not end
// it: replay="/tmp/a,b/trace.jsonl". Without seed=, the
// seed comes from the clock (the report says which it was). Anything else,
// a value out of range included, is an error.
func ParseOptions(s string) (Options, error) {
	o := Options{Seed: uint64(time.Now().UnixNano())}
	if strings.TrimSpace(s) == "" {
		return Options{}, errors.New("explore: no options (at least seed=N, say)")
	}
	positive := func(d time.Duration, err error) (time.Duration, error) {
		if err == nil && d <= 0 {
			err = errors.New("must be positive")
		}
		return d, err
	}
	count := func(n int, err error) (int, error) {
		if err == nil && n <= 0 {
			err = errors.New("must be positive")
		}
		return n, err
	}
	for _, field := range optionFields(s) {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		key, val, _ := strings.Cut(field, "=")
		if strings.HasPrefix(val, `"`) {
			uq, err := strconv.Unquote(val)
			if err != nil {
				return Options{}, fmt.Errorf("explore: option %q: a quoted value is a Go string literal: %w", field, err)
			}
			val = uq
		}
		var err error
		switch key {
		case "seed":
			o.Seed, err = strconv.ParseUint(val, 10, 64)
		case "duration":
			o.Duration, err = positive(time.ParseDuration(val))
		case "actions":
			o.Actions, err = count(strconv.Atoi(val))
		case "pace":
			o.Pace, err = positive(time.ParseDuration(val))
		case "gc":
			if val == "off" {
				o.GC = -1
			} else {
				o.GC, err = positive(time.ParseDuration(val))
			}
		case "stall":
			o.Stall, err = positive(time.ParseDuration(val))
		case "hang":
			o.Hang, err = positive(time.ParseDuration(val))
		case "leak-every":
			o.LeakEvery, err = count(strconv.Atoi(val))
		case "leak-rounds":
			o.LeakRounds, err = count(strconv.Atoi(val))
		case "leak":
			if val != "off" {
				err = errors.New("only leak=off")
			}
			o.LeakRounds = -1
		case "replay":
			var rep *Report
			if rep, err = readReportFile(val); err == nil {
				o.Replay = rep.Trace
				if o.Replay == nil {
					o.Replay = []Action{}
				}
				if len(rep.Findings) > 0 {
					o.Expect = rep.Findings[0]
				}
			}
		case "keep-going":
			switch val {
			case "", "1", "true":
				o.KeepGoing = true
			case "0", "false":
				o.KeepGoing = false
			default:
				err = errors.New("want keep-going, keep-going=true or keep-going=false")
			}
		case "ignore-log":
			o.IgnoreLog, err = regexp.Compile(val)
		case "strict":
			switch val {
			case "", "1", "true":
				o.ReplayStrict = true
			case "0", "false":
				o.ReplayStrict = false
			default:
				err = errors.New("want strict, strict=true or strict=false")
			}
		default:
			return Options{}, fmt.Errorf("explore: unknown option %q (want seed, duration, actions, pace, gc, stall, hang, leak-every, leak-rounds, leak, keep-going, strict, ignore-log, replay)", key)
		}
		if err != nil {
			return Options{}, fmt.Errorf("explore: option %q: %w", field, err)
		}
	}
	return o, nil
}

// optionFields splits s at its commas, except those inside a quoted value
// (a path may have commas: a TMPDIR, a package's directory).
func optionFields(s string) []string {
	var fields []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++ // an escaped character, a quote among them
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == ',':
			fields = append(fields, s[start:i])
			start = i + 1
		}
	}
	return append(fields, s[start:])
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
	hung := false
	defer func() { x.tearDown(hung) }()
	lastGC := time.Now()
	lastCensus := 0
	var missingSince time.Time // a replay's recorded address not found since
	x.sample(true)
	for ctx.Err() == nil && eventloop.Running() {
		x.sample(false)
		if opts.Actions > 0 && len(x.report.Trace) >= opts.Actions {
			break
		}
		if opts.Replay != nil && len(x.report.Trace) >= len(opts.Replay) {
			break
		}
		stepCtx, cancelStep := context.WithTimeout(ctx, opts.Hang)
		err := x.step(stepCtx)
		cancelStep()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				hung = true
				x.found(&Finding{Kind: KindHang, Message: fmt.Sprintf("the UI thread did not come back from the action within %v", opts.Hang)})
				break
			}
			if ctx.Err() != nil || !eventloop.Running() {
				break // the end of the run, not a failure
			}
			return nil, err
		}
		if x.replayErr != "" {
			x.report.ReplayError = x.replayErr
			break
		}
		if x.missing != "" {
			if missingSince.IsZero() {
				missingSince = time.Now()
			} else if time.Since(missingSince) > x.replayWait() {
				x.report.ReplayError = x.missing
				break
			}
		} else {
			missingSince = time.Time{}
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
		// A census every LeakEvery actions taken (not every pass: with
		// nothing to act on, the trace does not grow).
		if n := len(x.report.Trace); opts.LeakRounds > 0 && n > 0 && n-lastCensus >= opts.LeakEvery {
			lastCensus = n
			x.census(ctx)
			if x.stop() {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(opts.Pace):
		}
		// The work the action queued (an idle, a timer, an Invoke) runs
		// in the pace: a round trip to the UI thread now says whether it
		// kept the thread too long.
		began := time.Now()
		beatCtx, cancelBeat := context.WithTimeout(ctx, opts.Hang)
		err = eventloop.InvokeWait(beatCtx, func() error { return nil })
		cancelBeat()
		if took := time.Since(began); err == nil && took > opts.Stall && len(x.report.Trace) > 0 {
			x.found(&Finding{Kind: KindStall, Message: fmt.Sprintf("the UI thread was busy for %.2f s after the action (work it queued; more than %v)", took.Seconds(), opts.Stall)})
			if x.stop() {
				break
			}
		} else if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			hung = true
			x.found(&Finding{Kind: KindHang, Message: fmt.Sprintf("the UI thread did not come back within %v after the action (work it queued)", opts.Hang)})
			break
		}
	}
	last := x.measure()
	x.report.Elapsed = time.Since(x.start)
	if !hung {
		x.coverage() // with the last action's target reached
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ended = true // what still runs on the UI thread leaves the report alone
	x.add(last)    // with an action the UI thread finished since
	for _, f := range x.report.Findings {
		f.Trace = slices.Clone(x.report.Trace[:f.upto])
	}
	if opts.Replay != nil {
		x.report.Replayed = len(x.report.Trace)
		x.report.Recorded = len(opts.Replay)
		if opts.Expect != nil {
			for _, f := range x.report.Findings {
				if f.Same(opts.Expect) {
					x.report.Reproduced = true
				}
			}
		}
	}
	return &x.report, nil
}

// replayWait is how long a replay waits for the recorded address of its
// next action. The first, while there is nothing at all to act on, waits
// for the program to come up, which a loaded machine may take seconds to
// do, up to Hang: a replay that gave up
// sooner would say that a trace does not reproduce, and shrinking would
// keep actions the finding does not need.
func (x *explorer) replayWait() time.Duration {
	if len(x.report.Trace) == 0 && x.bare {
		return max(x.opts.ReplayWait, x.opts.Hang)
	}
	return x.opts.ReplayWait
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
	ended  bool // Run has returned the report
	report Report
	seen   map[string]*Finding // by kind and message: repeats are counted, not listed
	undo   []func()

	// missing says, for a replay, that the last step did not find the
	// recorded address; replayErr that the recorded action could not be
	// done as recorded; bare that the last listing found nothing to act
	// on (all only on Run's goroutine and in its steps).
	missing, replayErr string
	bare               bool
	heldFailed         bool // py_census failed once (said once, on stderr)

	censuses []map[string]int
	marks    []int // len(Trace) at each census

	sampled    bool          // a sample was taken (only on Run's goroutine)
	lastSample time.Duration // when
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
	// GLib's own domains' warnings and criticals reach the log routing as
	// GLib's records, with their domain and level, not as PyGObject's
	// Python warnings that lost both (see watch_logs); undone first, while
	// the routing still takes what comes. The handlers are GLib's, the
	// process's: they come out however setUp ends. When ctx ends while the
	// visit runs, InvokeWait returns at once and the visit goes on. An
	// Invoke of the undo would run after the visit, but only while a loop
	// runs: one that stops first (the app's ctx ended with this one) never
	// runs it. So one compare-and-swap each way says which side takes them
	// out: the visit itself, on the UI thread before the loop can return,
	// when setUp gave up first; setUp, when the visit was done first.
	unwatch := func() {
		if r, err := x.mod.CallMethod("unwatch_logs"); err == nil {
			r.Close()
		}
	}
	const visitDone, gaveUp = 1, 2
	var hand atomic.Int32
	err = eventloop.InvokeWait(ctx, func() error {
		r, err := x.mod.CallMethod("watch_logs")
		r.Close()
		if !hand.CompareAndSwap(0, visitDone) {
			unwatch()
		}
		return err
	})
	if err != nil {
		if !hand.CompareAndSwap(0, gaveUp) {
			unwatch()
		}
		return fmt.Errorf("explore: %w", err)
	}
	x.undo = append(x.undo,
		unwatch,
		eventloop.OnPythonException(x.pythonException),
		eventloop.OnPanic(func(p *pygi.PanicError) { x.found(panicFinding(p)) }))
	stop, err := eventloop.RouteLogs(&logHandler{x: x, next: stderrLogs()})
	if err != nil {
		x.tearDown(false)
		return fmt.Errorf("explore: %w", err)
	}
	x.undo = append(x.undo, stop)
	return nil
}

// tearDown undoes setUp. Some of it needs Python (the log routing), so
// when the UI thread hung (it may hold the GIL for good) it is left to a
// goroutine that may never finish, rather than keeping Run from returning.
func (x *explorer) tearDown(hung bool) {
	undo, app := x.undo, x.app
	x.undo, x.app = nil, nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, f := range undo {
			f()
		}
		if app != nil {
			app.Close()
		}
	}()
	if !hung {
		<-done
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
		x.setCoverage(counts[1], counts[2])
		x.missing, x.bare = "", n == 0
		var i int
		var input string // the action's input, as JSON: drawn now or recorded
		var want Action
		if x.opts.Replay != nil {
			// A replay draws nothing: it finds the recorded address.
			x.mu.Lock()
			next := len(x.report.Trace)
			x.mu.Unlock()
			want = x.opts.Replay[next]
			iObj, err := x.mod.CallMethod("find", want.Address, want.Verb, want.WindowKey, x.opts.ReplayStrict)
			if err != nil {
				return fmt.Errorf("explore: %w", err)
			}
			i, err = pygi.As[int](iObj)
			iObj.Close()
			if err != nil {
				return fmt.Errorf("explore: %w", err)
			}
			if i < 0 {
				x.missing = fmt.Sprintf("recorded action %d (%s): nothing to %s at %q", next+1, want, want.Verb, want.Address)
				return nil
			}
			input = string(want.Input)
		} else {
			if n == 0 {
				// Nothing to act on now; the loop may show something
				// later. Nothing is drawn: the stream is the actions'
				// alone, so that how many passes found nothing (a window
				// not shown yet: the machine's speed) shifts none of the
				// choices after.
				return nil
			}
			// Every choice draws the same numbers whatever it needs of
			// them, so that one choice's needs do not shift the next ones.
			r, which, frac := x.rng.Uint64()>>1, x.rng.IntN(4), x.rng.Float64()
			i = x.rng.IntN(n)
			f := frac
			switch which {
			case 0:
				f = -1 // the lower extreme
			case 1:
				f = 2 // the upper extreme
			}
			// The input is chosen before the action is done, so that
			// the pending action carries it (a crash's trace replays),
			// and the action is then done from it as a replay does it.
			inObj, err := x.mod.CallMethod("plan", i, r, f)
			if err != nil {
				return x.pythonTrouble(err, "raised while the explorer chose the action's input")
			}
			input, err = pygi.As[string](inObj)
			inObj.Close()
			if err != nil {
				return fmt.Errorf("explore: reading the action's input: %w", err)
			}
		}
		// The action is in the trace before it is done, with its input:
		// one that never returns (a hang), or a crash, is named by it.
		peek, err := x.mod.CallMethod("peek", i, input)
		if err != nil {
			return fmt.Errorf("explore: %w", err)
		}
		pending, err := describe(peek)
		peek.Close()
		if err != nil {
			return err
		}
		pending.At = time.Since(x.start)
		x.mu.Lock()
		if x.ended {
			x.mu.Unlock()
			return nil
		}
		idx := len(x.report.Trace)
		x.report.Trace = append(x.report.Trace, pending)
		x.mu.Unlock()
		if x.opts.OnAction != nil {
			x.opts.OnAction(idx, pending)
		}
		began := time.Now()
		res, err := x.mod.CallMethod("act_as", i, input)
		took := time.Since(began)
		a, convErr := describe(res)
		res.Close()
		if err != nil {
			a = pending // it raised: what it was to be is all there is
		}
		x.mu.Lock()
		if x.ended {
			// Run gave up on this action (a hang) and returned: the
			// report is its caller's now.
			x.mu.Unlock()
			return nil
		}
		a.At = x.report.Trace[idx].At
		x.report.Trace[idx] = a
		x.mu.Unlock()
		if x.opts.OnAction != nil {
			x.opts.OnAction(idx, a)
		}
		if err != nil {
			var pe *pygi.Error
			if !errors.As(err, &pe) {
				return err
			}
			if strings.HasSuffix(pe.Type, "ReplayMismatch") {
				x.replayErr = fmt.Sprintf("recorded action %d (%s) cannot be done as recorded: %s", idx+1, want, firstLine(pe.Message))
				return nil
			}
			x.found(exceptionFinding(pe, "raised by the action itself"))
		} else if convErr != nil {
			return convErr
		}
		if cov, err := x.mod.CallMethod("coverage"); err == nil {
			if v, err := pygi.As[[]int](cov); err == nil && len(v) == 2 {
				x.setCoverage(v[0], v[1])
			}
			cov.Close()
		}
		if took > x.opts.Stall {
			x.found(&Finding{Kind: KindStall, Message: fmt.Sprintf("the action kept the UI thread for %.2f s (more than %v)", took.Seconds(), x.opts.Stall)})
		}
		return nil
	})
}

// describe reads peek's or act_as's result: (verb, address, label,
// window, value, input, window key).
func describe(res *pygi.Object) (Action, error) {
	if res == nil {
		return Action{}, nil
	}
	v, err := pygi.As[[]string](res)
	if err != nil || len(v) != 7 {
		return Action{}, fmt.Errorf("explore: the action's description was %v: %v", res, err)
	}
	a := Action{Verb: v[0], Address: v[1], Label: v[2], Window: v[3], Value: v[4], WindowKey: v[6]}
	if v[5] != "" {
		a.Input = json.RawMessage(v[5])
	}
	return a, nil
}

// found records f with the trace so far, or counts it as a repeat.
// seenKey is what makes two findings of a run the same trouble.
func (f *Finding) seenKey() string {
	if f.key != "" {
		return f.key
	}
	return string(f.Kind) + "\x00" + stable(f.Message) + "\x00" + f.Where
}

// seenBefore says whether the run has made f's finding already (found
// would count it as a repeat).
func (x *explorer) seenBefore(f *Finding) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.seen[f.seenKey()]
	return ok
}

func (x *explorer) found(f *Finding) {
	x.mu.Lock()
	if x.ended {
		x.mu.Unlock()
		return
	}
	key := f.seenKey()
	if old, ok := x.seen[key]; ok {
		old.Repeats++
		x.mu.Unlock()
		return
	}
	// The trace is cut when the run ends: the action under way is
	// described only once it returns.
	f.upto = len(x.report.Trace)
	f.At = time.Since(x.start)
	x.seen[key] = f
	x.report.Findings = append(x.report.Findings, f)
	told := *f
	told.Trace = nil
	x.mu.Unlock()
	if x.opts.OnFinding != nil {
		x.opts.OnFinding(told, told.upto)
	}
}

// pythonTrouble makes a Python exception a finding (one the program's code
// raised, from a list model's get_n_items, say) and is nil then; any other
// error is returned as it is.
func (x *explorer) pythonTrouble(err error, how string) error {
	var pe *pygi.Error
	if !errors.As(err, &pe) {
		return err
	}
	x.found(exceptionFinding(pe, how))
	return nil
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

// setCoverage records how many candidates were seen and reached, unless
// Run has returned the report.
func (x *explorer) setCoverage(seen, reached int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ended {
		x.report.Seen, x.report.Reached = seen, reached
	}
}

func (x *explorer) coverage() {
	if !eventloop.Running() {
		return // the program ended (it quit itself): nobody to ask, and no waiting for it
	}
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
			x.setCoverage(v[0], v[1])
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
	var held [][]any // [table, name, count]: what the program's Python holds
	var heldErr error
	err := eventloop.InvokeWait(ctx, func() error {
		var err error
		if c, err = forensics.TakeCensus(); err != nil {
			return err
		}
		// What Python holds is counted apart: its failure leaves the
		// other tables standing.
		r, err := x.mod.CallMethod("py_census")
		if err == nil {
			held, err = pygi.As[[][]any](r)
			r.Close()
		}
		heldErr = err
		return nil
	})
	if err != nil {
		return
	}
	if heldErr != nil && !x.heldFailed {
		x.heldFailed = true
		fmt.Fprintf(os.Stderr, "explore: counting what the program's Python holds failed; the leak check goes on without it: %v\n", heldErr)
	}
	rows := map[string]int{}
	for _, h := range held {
		if len(h) == 3 {
			table, _ := h[0].(string)
			name, _ := h[1].(string)
			n, _ := h[2].(int64)
			rows[table+"\x00"+name+"\x00"] = int(n)
		}
	}
	add := func(table string, counts []forensics.Count) {
		for _, r := range counts {
			rows[table+"\x00"+r.Name+"\x00"+r.Site] = r.N
		}
	}
	add("callbacks", c.Callbacks)
	add("python", c.PyObjects)
	add("gobjects", c.GObjects)
	// What Go holds grows over LeakRounds censuses to be a leak; what the
	// program's Python holds over twice as many: a program keeps bounded
	// histories and caches of its own objects (the last N entries), which
	// grow for a while as a leak does.
	rounds := func(table string) int {
		if table == "pygobjects" || table == "pyinstances" {
			return 2 * x.opts.LeakRounds
		}
		return x.opts.LeakRounds
	}
	x.mu.Lock()
	x.censuses = append(x.censuses, rows)
	x.marks = append(x.marks, len(x.report.Trace))
	if keep := 2*x.opts.LeakRounds + 1; len(x.censuses) > keep {
		x.censuses = x.censuses[1:]
		x.marks = x.marks[1:]
	}
	x.mu.Unlock()
	n := len(x.censuses)
	grew := func(key string) bool {
		table, _, _ := strings.Cut(key, "\x00")
		r := rounds(table)
		if n < r+1 {
			return false
		}
		for i := n - r; i < n; i++ {
			if x.censuses[i][key] <= x.censuses[i-1][key] {
				return false
			}
		}
		return true
	}
	keys := slices.Sorted(maps.Keys(rows))
	watched := map[string]bool{} // GTypes of the gobjects table that grew
	for _, key := range keys {
		if table, rest, _ := strings.Cut(key, "\x00"); table == "gobjects" && grew(key) {
			name, _, _ := strings.Cut(rest, "\x00")
			watched[name] = true
		}
	}
	for _, key := range keys {
		if !grew(key) {
			continue
		}
		last := rows[key]
		table, rest, _ := strings.Cut(key, "\x00")
		name, site, _ := strings.Cut(rest, "\x00")
		if table == "pygobjects" && watched[name] {
			continue // the same GObjects, which duet watches too: one leak
		}
		from := n - rounds(table) - 1
		first := x.censuses[from][key]
		x.found(&Finding{
			Kind:    KindLeak,
			Message: fmt.Sprintf("%s %q"+leakGrew+"%d censuses, %d or more actions apart: %d → %d", tableWords(table), name, rounds(table), x.opts.LeakEvery, first, last),
			Where:   site,
			Detail:  fmt.Sprintf("census table %q, row %q, over actions %d to %d", table, name, x.marks[from], x.marks[n-1]),
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
	case "pygobjects":
		return "GObjects Python holds, of type"
	case "pyinstances":
		return "instances of the Python class"
	}
	return table
}
