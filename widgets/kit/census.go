package kit

import (
	"fmt"
	"time"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// ShowCensus opens the census window, or raises the one already open: the
// tables of forensics.TakeCensus (Go callbacks by name and creation site,
// Python objects Go holds by type, GObjects by GType), each row with its
// count, its change since the window's Mark button was pressed and a graph
// of the last minute, refreshed every second while the window is open.
// parent, if not nil, is the window it belongs to. Apps get it on
// Ctrl+Shift+C with app.Options.Census. UI thread only.
//
// The window holds one Go callback (the census source), which it lets go
// when it is closed; closing it stops its timer.
func ShowCensus(parent *pygi.Object) (*widgets.Widget, error) {
	if err := eventloop.RequireMain("kit.ShowCensus"); err != nil {
		return nil, err
	}
	m, err := censusPy.Get()
	if err != nil {
		return nil, err
	}
	take, err := callbacks.New(censusTable, callbacks.Name("census"))
	if err != nil {
		return nil, err
	}
	defer take.Close() // the window holds its own reference
	var p any
	if parent != nil {
		p = parent
	}
	w, err := m.CallMethod("show", take, p)
	if err != nil {
		return nil, fmt.Errorf("kit: ShowCensus: %w", err)
	}
	return widgets.Wrap(w), nil
}

// closeCensus closes the census window if it is open (app.Run does, when
// the application shuts down: the window is not one of its windows, so
// that it never keeps the app running). UI thread only.
func closeCensus() error {
	if err := lifetime.RequireMain("closing the census window"); err != nil {
		return err
	}
	m, ok := censusPy.Loaded()
	if !ok {
		return nil
	}
	r, err := m.CallMethod("close")
	if err != nil {
		return err
	}
	r.Close()
	return nil
}

// censusTable is a census as census.py reads it: plain lists and numbers.
func censusTable() (map[string]any, error) {
	c, err := forensics.TakeCensus()
	if err != nil {
		return nil, err
	}
	rows := func(t []forensics.Count) [][]any {
		out := make([][]any, len(t))
		for i, r := range t {
			out[i] = []any{r.Name, r.Site, r.N}
		}
		return out
	}
	return map[string]any{
		"callbacks":   rows(c.Callbacks),
		"python":      rows(c.PyObjects),
		"gobjects":    rows(c.GObjects),
		"quarantined": c.Quarantined,
		"at":          float64(c.At) / float64(time.Second),
	}, nil
}
