package pygi

import (
	"syscall"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// The signal rules are in the package doc (Signals); internal/lifetime
// implements them, internal/capi/signals.c keeps CPython to them.

func init() {
	capi.SetSignalKindHandler(func(n, kind int) {
		lifetime.PythonSignal(syscall.Signal(n), lifetime.SignalKind(kind))
	})
	capi.SetSignalRanHandler(func(n int) { lifetime.PythonSignalRan(syscall.Signal(n)) })
}
