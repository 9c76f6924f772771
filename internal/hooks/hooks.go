// Package hooks is what duet's packages call in each other without a
// public API or an import cycle: each hook is set, in its init, by the
// package that implements it, and is nil until that package is linked.
package hooks

var (
	// InstallConnectHook wraps PyGObject's connect methods so that every
	// connection of a Go handler is recorded (callbacks sets it; widgets
	// calls it when it starts GTK).
	InstallConnectHook func() error

	// Reap looks for gotk4-tracked objects gotk4 has let go of and
	// schedules their release (widgets sets it; app and the stress
	// harness call it once the loop has ended, before iterating the main
	// context). UI thread only.
	Reap func() (int, error)

	// CloseCensus closes the census window if it is open (widgets/kit sets it;
	// app calls it at shutdown). UI thread only.
	CloseCensus func() error
)
