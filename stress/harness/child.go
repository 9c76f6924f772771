package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// Scenario is one workload. Run executes in a child process on the main OS
// thread; it must keep working until env.Ctx is done, then clean up what it
// made (windows, timers) and return. Everything the harness measures at the
// end (live callbacks back to the baseline) is measured after Run returns.
type Scenario struct {
	Name        string
	Description string
	// NeedsDisplay runs the child under Xvfb when there is no display.
	NeedsDisplay bool
	// CanCrashBroken: Python keeps Go callbacks past Go's GC in this
	// scenario, so the broken ownership mode must crash it.
	CanCrashBroken bool
	Run            func(env *Env) error
	// Twin, when set, is the same workload in pure PyGObject (a python3
	// script, run with TwinArgs and the GC interval in seconds) that the
	// harness runs beside the scenario: see twin.go.
	Twin     string
	TwinArgs []string
}

// Env is what a scenario works with.
type Env struct {
	Ctx context.Context
	// Broken says the workload's own callbacks are made with the
	// deliberately broken ownership (-ownership go), which reproduces the
	// classic crash: make them with Callback and Async. The harness and
	// the app's infrastructure always use the correct one.
	Broken     bool
	GCInterval time.Duration
	// Exe is the stress binary, for scenarios that start processes.
	Exe string

	iter     atomic.Int64
	mu       sync.Mutex
	ops      [16]string
	opsN     int
	box      *blackBox // nil when the parent gave none
	baseline atomic.Int64
	baseSet  atomic.Bool
	census   func()
}

// Iter counts n more iterations of the workload.
func (e *Env) Iter(n int64) {
	e.iter.Add(n)
	if e.box != nil {
		e.box.addIter(n)
	}
}

// Iterations returns the count so far.
func (e *Env) Iterations() int64 { return e.iter.Load() }

// Op records what the workload is doing, for the crash report (the last 16
// are kept).
func (e *Env) Op(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	e.mu.Lock()
	e.ops[e.opsN%len(e.ops)] = s
	e.opsN++
	if e.box != nil {
		e.box.op(s)
	}
	e.mu.Unlock()
}

func (e *Env) lastOps() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for i := max(0, e.opsN-len(e.ops)); i < e.opsN; i++ {
		out = append(out, e.ops[i%len(e.ops)])
	}
	return out
}

// Baseline records the live callback count the run must return to; call it
// once the scenario's permanent set-up is done. Without it, the count when
// the workload started is used.
func (e *Env) Baseline() {
	e.baseline.Store(forensics.ReadStats().Callbacks.Live)
	e.baseSet.Store(true)
	if e.census != nil {
		e.census() // the start census, too: set-up is not growth
	}
}

// Sample is one progress record from the child (a JSON line on its stdout).
type Sample struct {
	T           float64  `json:"t"` // seconds since the start
	Iterations  int64    `json:"iter"`
	GoGC        int64    `json:"go_gc"`
	PyGC        int64    `json:"py_gc"`
	ForcedGC    int64    `json:"forced_gc"`
	CbCreated   int64    `json:"cb_created"`
	CbFreed     int64    `json:"cb_freed"`
	CbFreedByGo int64    `json:"cb_freed_by_go"`
	CbLive      int64    `json:"cb_live"`
	PyLive      int64    `json:"py_live"`
	RSS         int64    `json:"rss"`
	LastOps     []string `json:"last_ops,omitempty"`
	// Set on the final record.
	Final       bool  `json:"final,omitempty"`
	Baseline    int64 `json:"baseline_live,omitempty"`
	PyGCObjects int64 `json:"py_gc_objects,omitempty"`
	// Cycles names, at the end, Go callbacks that hold the GObject they are
	// connected to (callbacks.Cycles): leaks neither collector can see.
	Cycles []string `json:"cycles,omitempty"`
	Err    string   `json:"error,omitempty"`
	// Census is sent alone when the scenario starts, and on the final
	// record after the run settled.
	Census *forensics.Census `json:"census,omitempty"`
}

// ChildMain runs a scenario in this (child) process: it reports samples on
// stdout until stdin closes (the parent's stop), then settles and exits.
func ChildMain(sc Scenario, broken bool, gcInterval time.Duration) int {
	ctx, stop := context.WithCancel(context.Background())
	exe, _ := os.Executable()
	env := &Env{Ctx: ctx, Broken: broken, GCInterval: gcInterval, Exe: exe}
	if path := os.Getenv(boxEnv); path != "" {
		if b, err := openBlackBox(path); err == nil {
			env.box = b
		}
	}
	go func() {
		io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
		stop()
	}()

	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	emit := func(s Sample) {
		outMu.Lock()
		defer outMu.Unlock()
		b, _ := json.Marshal(s)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	start := time.Now()
	var forced atomic.Int64
	sample := func() Sample {
		st := forensics.ReadStats()
		cs, ps := st.Callbacks, st.Objects
		return Sample{
			T: time.Since(start).Seconds(), Iterations: env.iter.Load(),
			GoGC: goGCCycles(), PyGC: pyGCCycles(), ForcedGC: forced.Load(),
			CbCreated: cs.Created, CbFreed: cs.Freed, CbFreedByGo: cs.FreedByGoGC, CbLive: cs.Live,
			PyLive: ps.Live, RSS: diag.ResidentBytes(), LastOps: env.lastOps(),
		}
	}

	// Both collectors forced at the chosen pace, throughout.
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		gcmod, err := pygi.Import("gc")
		if err != nil {
			return
		}
		t := time.NewTicker(gcInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			collect := func() error {
				if r, err := gcmod.CallMethod("collect"); err == nil {
					r.Close()
				}
				runtime.GC()
				return nil
			}
			// On the UI thread while a loop runs: a collection may finalise
			// GTK objects.
			if eventloop.Running() {
				eventloop.InvokeWait(ctx, collect)
			} else {
				collect()
			}
			forced.Add(1)
		}
	}()
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				emit(sample())
			}
		}
	}()

	if !env.baseSet.Load() {
		env.baseline.Store(forensics.ReadStats().Callbacks.Live)
	}
	env.census = func() {
		if c, err := forensics.TakeCensus(); err == nil {
			emit(Sample{T: time.Since(start).Seconds(), Census: c})
		}
	}
	// What the final record runs, once now: objects these make lazily are
	// not the workload's growth.
	sample()
	pyGCObjects()
	callbacks.Cycles()
	eventloop.Collect()
	env.census()
	runErr := sc.Run(env)
	stop()
	<-gcDone
	<-samplerDone

	// Settle: everything the workload made must be released.
	final := sample()
	wctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	st, werr := waitLive(wctx, env.baseline.Load())
	cancel()
	settleGObjects()
	final = sample()
	final.CbLive = st
	final.Final = true
	final.Baseline = env.baseline.Load()
	final.PyGCObjects = pyGCObjects()
	if c, err := forensics.TakeCensus(); err == nil {
		final.Census = c
	}
	if cs, err := callbacks.Cycles(); err == nil {
		for _, c := range cs {
			final.Cycles = append(final.Cycles, c.String())
		}
	}
	switch {
	case runErr != nil:
		final.Err = runErr.Error()
	case werr != nil:
		final.Err = werr.Error()
	}
	emit(final)
	if runErr != nil {
		return 1
	}
	return 0
}

// waitLive runs both garbage collectors until at most max callbacks are
// live, or ctx ends: frees pending on either side have happened by then.
// It returns the number of callbacks live.
func waitLive(ctx context.Context, max int64) (int64, error) {
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		if err := eventloop.Collect(); err != nil {
			return forensics.ReadStats().Callbacks.Live, err
		}
		live := forensics.ReadStats().Callbacks.Live
		if live <= max {
			return live, nil
		}
		select {
		case <-ctx.Done():
			return live, fmt.Errorf("%d callbacks live, want at most %d: %w", live, max, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// settleGObjects lets the GObjects the workload dropped finalise: with the
// loop gone, nothing else releases gotk4's references (widgets' reaper) or
// runs the idles that do. It stops when the count holds still.
func settleGObjects() {
	count := func() int {
		c, err := forensics.TakeCensus()
		if err != nil {
			return -1
		}
		n := 0
		for _, g := range c.GObjects {
			n += g.N
		}
		return n
	}
	last, still := count(), 0
	for round := 0; round < 100 && still < 5; round++ {
		runtime.GC()
		eventloop.Collect()
		hooks.Reap()
		lifetime.FlushContext(1000)
		time.Sleep(5 * time.Millisecond)
		if n := count(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
}

func goGCCycles() int64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return int64(s[0].Value.Uint64())
	}
	return 0
}

// pyGCCycles is the number of collections Python's gc has run (all
// generations, automatic and forced).
func pyGCCycles() int64 {
	return pyInt("sum(s['collections'] for s in __import__('gc').get_stats())")
}

// pyGCObjects is the number of objects Python's gc tracks.
func pyGCObjects() int64 { return pyInt("len(__import__('gc').get_objects())") }

// pyInt evaluates an int expression; -1 when it cannot.
func pyInt(expr string) int64 {
	r, err := pygi.Eval(expr, nil)
	if err != nil {
		return -1
	}
	defer r.Close()
	n, err := pygi.As[int64](r)
	if err != nil {
		return -1
	}
	return n
}

// Callback makes one of the workload's callbacks (callbacks.New, named
// name), with the ownership the run asks for.
func (e *Env) Callback(fn any, name string) (*pygi.Object, error) {
	return pyobj.NewCallback(fn, name, e.Broken, false, 1)
}

// Async makes one of the workload's async callbacks (callbacks.Async,
// named name), with the ownership the run asks for.
func (e *Env) Async(fn any, name string) (*pygi.Object, error) {
	return pyobj.NewCallback(fn, name, e.Broken, true, 1)
}
