package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/internal/callsite"
	"github.com/duet-gtk/duet/pygi"
)

// exploreFound is Run's status when the explorer found something, and
// exploreFailed when it failed (explore.Run's error): the package doc
// gives them, as Run's doc gives its other statuses. A failure is not 3:
// a parent would take it for a finding and look for a report there is
// not.
const (
	exploreFound  = 3
	exploreFailed = 1
)

// exploring is a run of the explorer that DUET_EXPLORE asked for.
type exploring struct {
	app    *App
	opts   explore.Options
	out    string   // DUET_EXPLORE_OUT: where the JSON lines go
	plot   string   // DUET_EXPLORE_PLOT: where the SVG plot goes
	trace  *os.File // DUET_EXPLORE_TRACE: each action as it starts
	cancel context.CancelFunc

	traceMu   sync.Mutex // one line at a time on trace
	beats     chan struct{}
	beatOnce  sync.Once
	once      sync.Once
	printOnce sync.Once
	started   bool
	done      chan struct{}
	rep       *explore.Report
	err       error
}

// startExploring arranges for the explorer to start after the first
// activation: its handler is connected last, so the program's own activate
// (app.Main's, or OnActivate before Run) has shown its windows by then.
func (a *App) startExploring(ctx context.Context, spec string) (*exploring, error) {
	opts, err := explore.ParseOptions(spec)
	if err != nil {
		return nil, fmt.Errorf("DUET_EXPLORE: %w", err)
	}
	opts.App = a.py
	x := &exploring{app: a, opts: opts, out: os.Getenv("DUET_EXPLORE_OUT"), plot: os.Getenv("DUET_EXPLORE_PLOT"), done: make(chan struct{})}
	if path := os.Getenv("DUET_EXPLORE_TRACE"); path != "" {
		// One unbuffered write per action before it is done, one after
		// ({"n": index, "action": ...}, the last line of an index wins),
		// one per finding when it is made ({"finding": ..., "upto":
		// actions}): what a crash or a hang was doing, and what the run
		// had found by then, is in the file when the process is gone (a
		// parent such as cmd/duetexplore reads it). A heartbeat, {"beat":
		// n} every second, says the process is alive when there is
		// nothing to act on. The last line is {"end": "done"} once the
		// run is over and its report written, or {"end": "hang"} after
		// a hang the explorer reported (the report is written; the
		// process may never end).
		if x.trace, err = os.Create(path); err != nil {
			return nil, fmt.Errorf("DUET_EXPLORE_TRACE: %w", err)
		}
		x.opts.OnAction = func(n int, act explore.Action) {
			x.traceLine(map[string]any{"n": n, "action": act})
		}
		x.opts.OnFinding = func(f explore.Finding, upto int) {
			x.traceLine(map[string]any{"finding": f, "upto": upto})
		}
		x.beats = make(chan struct{})
		go x.beat()
	}
	ctx, x.cancel = context.WithCancel(ctx)
	err = a.connect("activate", func(*pygi.Object) {
		if a.activateFailed.Load() {
			return // the app is quitting: nothing to explore
		}
		x.once.Do(func() {
			x.started = true
			go func() {
				defer close(x.done)
				x.rep, x.err = explore.Run(ctx, x.opts)
				if x.err == nil && hung(x.rep) {
					// The UI thread may never come back: the loop would
					// not end and finish would never print. Now, then.
					x.print()
					x.stopBeating()
					x.traceLine(map[string]any{"end": "hang"})
				}
				a.Quit()
			}()
		})
	}, callsite.Caller())
	if err != nil {
		x.cancel()
		if x.trace != nil {
			x.stopBeating()
			x.trace.Close()
		}
		return nil, err
	}
	return x, nil
}

// beatEvery is the heartbeat's period on DUET_EXPLORE_TRACE.
const beatEvery = time.Second

// beat writes the heartbeat, from its own goroutine: one line at once,
// then one a second until stopBeating. It needs neither the UI thread nor
// Python, so it goes on while the explorer waits for a UI thread that is
// away (the explorer says that itself, as a hang), and stops only when
// the whole process does (stopped, or its Go runtime stuck): for a
// parent, a process that neither acts nor beats makes no progress.
func (x *exploring) beat() {
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for n := 0; ; n++ {
		x.traceLine(map[string]any{"beat": n})
		select {
		case <-x.beats:
			return
		case <-t.C:
		}
	}
}

func (x *exploring) stopBeating() {
	if x.beats != nil {
		x.beatOnce.Do(func() { close(x.beats) })
	}
}

// traceLine writes v as one line of DUET_EXPLORE_TRACE, unbuffered.
func (x *exploring) traceLine(v any) {
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // as the JSON lines of DUET_EXPLORE_OUT
	if enc.Encode(v) != nil {
		return
	}
	x.traceMu.Lock()
	defer x.traceMu.Unlock()
	x.trace.Write(line.Bytes())
}

// finish waits for the run (the loop has ended), prints what it found on
// stderr, writes the JSON lines, and returns Run's status for it: 0,
// exploreFound when it found something, exploreFailed when the explorer
// failed (Run's error; it could not stop) and so neither found nor
// cleared anything. The last line of DUET_EXPLORE_TRACE says which, for a
// parent: {"end": "done"}, {"end": "error", "error": why}, or {"end":
// "not started"} when the explorer never started.
func (x *exploring) finish() int {
	x.cancel()
	end := map[string]any{"end": "done"}
	if x.trace != nil {
		defer func() {
			// The run is over, its report written: what is left is the
			// program's own end, which a parent gives its own time.
			x.stopBeating()
			x.traceLine(end)
			x.trace.Close()
		}()
	}
	if !x.started {
		end["end"] = "not started"
		if !x.app.activateFailed.Load() { // that failure was said already
			fmt.Fprintln(os.Stderr, "explore: the application was never activated; nothing explored")
		}
		return 0
	}
	select {
	case <-x.done:
	case <-time.After(10 * time.Second):
		const why = "the explorer did not stop within 10 s of the application's end"
		fmt.Fprintln(os.Stderr, "explore:", why)
		end["end"], end["error"] = "error", why
		return exploreFailed
	}
	if x.err != nil {
		fmt.Fprintln(os.Stderr, "explore:", x.err)
		end["end"], end["error"] = "error", x.err.Error()
		return exploreFailed
	}
	x.print()
	if len(x.rep.Findings) > 0 {
		return exploreFound
	}
	return 0
}

func hung(rep *explore.Report) bool {
	for _, f := range rep.Findings {
		if f.Kind == explore.KindHang {
			return true
		}
	}
	return false
}

// print writes the report on stderr, the JSON lines and the plot, once.
func (x *exploring) print() {
	x.printOnce.Do(func() {
		fmt.Fprint(os.Stderr, x.rep)
		if x.out != "" {
			if err := writeFile(x.out, x.rep.WriteJSON); err != nil {
				fmt.Fprintln(os.Stderr, "explore:", err)
			}
		}
		if x.plot != "" {
			if err := writeFile(x.plot, x.rep.WritePlot); err != nil {
				fmt.Fprintln(os.Stderr, "explore: the plot:", err)
			}
		}
	})
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
