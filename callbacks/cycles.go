package callbacks

import (
	"fmt"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// A Cycle is a Go callback that a GObject's signal holds and that holds,
// in Go, a reference to that same GObject: a loop through Python and Go
// that neither garbage collector can see, so both stay for good (see
// "Handlers that do not leak" in package widgets).
type Cycle struct {
	Callback string  // the callback's name
	Created  string  // where its Go function was written (file:line; a func literal's func keyword)
	Object   string  // the GObject's type name
	Address  uintptr // the GObject's address
}

func (c Cycle) String() string {
	return fmt.Sprintf("callback %s (%s) holds the %s %#x it is connected to", c.Callback, c.Created, c.Object, c.Address)
}

// Cycles reports the cycles through Go closures it can see now: for each
// callback connected to a GObject's signal (any connect path, once package
// widgets is in use), whether a Go reference to that GObject was used by
// the callback while it ran and is still held. A callback that has never
// run is not seen. Safe from any goroutine.
func Cycles() ([]Cycle, error) {
	if err := lifetime.Enter(); err != nil {
		return nil, err
	}
	defer lifetime.Exit()
	seen := map[[2]uintptr]bool{}
	var out []Cycle
	for _, u := range capi.UsedGObjects() {
		h, p := u.Handle, u.Addr
		if seen[[2]uintptr{h, p}] || !lifetime.Connected(p, h) {
			continue
		}
		seen[[2]uintptr{h, p}] = true
		e := registry.handles.get(h)
		if e == nil {
			continue
		}
		out = append(out, Cycle{Callback: e.name, Created: e.created(), Object: u.Type, Address: p})
	}
	return out, nil
}
