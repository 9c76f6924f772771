package widgets

import "io"

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
