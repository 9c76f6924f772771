package pygi

import (
	"syscall"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// # Signals
//
// The process's signals belong to the Go program that embeds Python.
// Starting Python changes no process-wide signal state: no disposition, no
// signal.Notify of the program's own, nothing a child process inherits
// (SIGPIPE stays as Go has it). Python code sees python3's table
// (signal.getsignal: default_int_handler for SIGINT, SIGPIPE and SIGXFSZ
// ignored) and gets the signals it asks for:
//
//   - A handler set with signal.signal runs on Python's main thread at its
//     next check, as under python3 (a blocking sleep or select there is
//     interrupted); duet subscribes to that signal alone, beside any
//     signal.Notify of the program's.
//   - signal.SIG_IGN set by Python code: the signal no longer ends the
//     process.
//   - SIG_DFL, and default_int_handler on SIGINT, are Python's defaults:
//     the signal does what it does in the Go program (SIGINT, SIGTERM and
//     SIGHUP end it; os/signal subscribers get it).
//
// So outside the event loop Ctrl+C ends a Go program as it always did, or
// reaches its own handler; Python code that wants KeyboardInterrupt there
// installs a handler that raises it. The loop (eventloop.Run, app.Run)
// owns SIGINT and SIGTERM while it runs: see package eventloop.
//
// faulthandler works as documented (faulthandler.enable, -X faulthandler,
// PYTHONFAULTHANDLER): a native crash writes Python's tracebacks to its
// file, and a fault in Go code stays Go's (a nil dereference in a Go
// callback is a recoverable panic). After Finalize, nothing of Python's is
// left in the process's signal handling.

func init() {
	capi.SetSignalKindHandler(func(n, kind int) {
		lifetime.PythonSignal(syscall.Signal(n), lifetime.SignalKind(kind))
	})
}
