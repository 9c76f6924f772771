package kit

import (
	"fmt"
	"sync"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// The typed methods of the ready-made widgets are generated from their
// Python classes; push and append are written here instead (batched, safe
// from any goroutine).
//
//go:generate go run ../../cmd/duetgen -file duet_widgets.py -class LineChart -no-struct -no-constructor -skip push
//go:generate go run ../../cmd/duetgen -file duet_widgets.py -class LogView -no-struct -no-constructor -skip append

// Library returns the ready-made widgets' Python module (duet_widgets,
// embedded in the Go binary), loading it on first use. The module is the
// same for every caller: closing it does nothing. UI thread only.
func Library() (*widgets.Module, error) {
	if err := eventloop.RequireMain("kit.Library"); err != nil {
		return nil, err
	}
	return library.Get()
}

// batcher collects values from any goroutine and hands them to the loop in
// one call per loop turn.
type batcher[T any] struct {
	mu        sync.Mutex
	pending   []T
	scheduled bool
	flush     func([]T) // on the loop
}

func (b *batcher[T]) add(v T) {
	b.mu.Lock()
	b.pending = append(b.pending, v)
	schedule := !b.scheduled
	b.scheduled = true
	b.mu.Unlock()
	if schedule {
		eventloop.Invoke(func() {
			b.mu.Lock()
			batch := b.pending
			b.pending = nil
			b.scheduled = false
			b.mu.Unlock()
			b.flush(batch)
		})
	}
}

// LineChart is a live line chart (duet_widgets.LineChart, a Python widget
// drawn with cairo). Push may be called from any goroutine.
type LineChart struct {
	*widgets.Widget
	points batcher[point]
}

type point struct {
	series string
	v      float64
}

// NewLineChart makes a chart keeping the last capacity values per series.
// UI thread only.
func NewLineChart(title, unit string, capacity int) (*LineChart, error) {
	if err := eventloop.RequireMain("kit.NewLineChart"); err != nil {
		return nil, err
	}
	lib, err := Library()
	if err != nil {
		return nil, err
	}
	w, err := lib.New("LineChart", pygi.Kw{"title": title, "unit": unit, "capacity": capacity})
	if err != nil {
		return nil, err
	}
	if err := lineChartGenerated.Check(w); err != nil {
		return nil, err
	}
	c := &LineChart{Widget: w}
	c.points.flush = func(ps []point) {
		batch := map[string][]float64{}
		for _, p := range ps {
			batch[p.series] = append(batch[p.series], p.v)
		}
		c.PushMany(batch) // on the loop; a chart that is gone has nothing to show
	}
	return c, nil
}

// Push appends a value to a series (made on first use). Safe from any
// goroutine: values are batched into one Python call per loop turn.
func (c *LineChart) Push(series string, v float64) { c.points.add(point{series, v}) }

// LogView is a scrolling log (duet_widgets.LogView). Printf and Log may be
// called from any goroutine.
type LogView struct {
	*widgets.Widget
	lines batcher[[2]string]
}

// NewLogView makes a log keeping at most maxLines lines. UI thread only.
func NewLogView(maxLines int) (*LogView, error) {
	if err := eventloop.RequireMain("kit.NewLogView"); err != nil {
		return nil, err
	}
	lib, err := Library()
	if err != nil {
		return nil, err
	}
	w, err := lib.New("LogView", pygi.Kw{"max_lines": maxLines})
	if err != nil {
		return nil, err
	}
	if err := logViewGenerated.Check(w); err != nil {
		return nil, err
	}
	l := &LogView{Widget: w}
	l.lines.flush = func(entries [][2]string) {
		list := make([][]string, len(entries))
		for i, e := range entries {
			list[i] = []string{e[0], e[1]}
		}
		l.AppendMany(list) // on the loop; a log that is gone has nothing to show
	}
	return l, nil
}

// Log appends a line at a level ("info", "warn" or "error").
func (l *LogView) Log(level, text string) { l.lines.add([2]string{text, level}) }

// Printf appends a formatted info line.
func (l *LogView) Printf(format string, args ...any) { l.Log("info", fmt.Sprintf(format, args...)) }
