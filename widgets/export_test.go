package widgets

import (
	"io"

	"github.com/duet-gtk/duet/internal/lifetime"

	"github.com/duet-gtk/duet/pygi"
)

// SimulateUnknownToggleLayout makes duet behave as on a GLib whose toggle
// record it cannot read, writing the start-up warning to w; restore undoes it.
func SimulateUnknownToggleLayout(w io.Writer) (restore func()) {
	old, was := warnOut, track.layoutUnknown.Load()
	warnOut = w
	checkToggleLayout(false)
	return func() {
		warnOut = old
		track.layoutUnknown.Store(was)
	}
}

// Pointer returns the address of the GObject behind o, for identity checks.
func Pointer(o *pygi.Object) (uintptr, error) {
	p, _, err := pointer(o)
	return uintptr(p), err
}

// ToGo is Cast to *coreglib.Object, as the tests knew it.
func ToGo(o *pygi.Object) (any, error) { return toGo(o) }

// Reap is hooks.Reap, for the tests.
func Reap() (int, error) { return reap() }

// Watchers is how many finalisation watches duet holds, its own included.
func Watchers() int {
	track.mu.Lock()
	defer track.mu.Unlock()
	return len(track.watchers)
}

// Connections is how many connections the one record holds.
func Connections() int { return lifetime.ConnectionCount() }
