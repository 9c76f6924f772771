package pygi

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
)

// # Signals
//
// Go keeps the process's signal handlers; Python keeps its view of them
// (internal/capi/signals.c says how). Every signal Python code wants to
// handle arrives here, on one goroutine, and goes on to Python: while the
// event loop runs, through the loop's policy (lifetime.SignalPolicy: the
// ordered shutdown, or Python's handler on the UI thread); otherwise as
// python3 would: KeyboardInterrupt in Python code running on the main
// thread, a handler Python code registered run at its next check. A signal
// whose Python disposition is the default ends the process (SIGINT and
// SIGTERM: status 130 and 143).

// The signals Python code may take over from Go. Go's own (SIGURG for
// preemption, SIGPROF, SIGSEGV and the other synchronous ones) only change
// in Python's table.
var forwardable = map[syscall.Signal]bool{
	syscall.SIGHUP: true, syscall.SIGINT: true, syscall.SIGQUIT: true, syscall.SIGTERM: true,
	syscall.SIGUSR1: true, syscall.SIGUSR2: true, syscall.SIGALRM: true, syscall.SIGWINCH: true,
	syscall.SIGCHLD: true, syscall.SIGPIPE: true, syscall.SIGXFSZ: true, syscall.SIGVTALRM: true,
}

var signals struct {
	mu    sync.Mutex
	kinds map[syscall.Signal]lifetime.SignalKind
	ch    chan os.Signal
	once  sync.Once
}

func init() { capi.SetSignalKindHandler(signalKind) }

// signalKind runs when Python code (or start-up) sets a signal's handler.
func signalKind(n, kind int) {
	sig := syscall.Signal(n)
	if !forwardable[sig] {
		return
	}
	k := lifetime.SignalKind(kind)
	signals.once.Do(func() {
		signals.kinds = map[syscall.Signal]lifetime.SignalKind{}
		signals.ch = make(chan os.Signal, 16)
		go forwardSignals()
	})
	signals.mu.Lock()
	signals.kinds[sig] = k
	signals.mu.Unlock()
	switch {
	case k == lifetime.SignalIgnored:
		signal.Ignore(sig)
	case k == lifetime.SignalDefault && sig != syscall.SIGINT && sig != syscall.SIGTERM:
		signal.Reset(sig) // Go's default, which is the OS default for these
	default:
		// SIGINT and SIGTERM always come here: with the default disposition
		// they still end the process, but in order while the loop runs.
		signal.Notify(signals.ch, sig)
	}
}

// forwardSignals delivers every signal, one by one: none is dropped.
func forwardSignals() {
	for s := range signals.ch {
		sig := s.(syscall.Signal)
		signals.mu.Lock()
		kind := signals.kinds[sig]
		signals.mu.Unlock()
		if lifetime.Current() != lifetime.Ready {
			exitBySignal(sig, "while Python is not running")
		}
		if policy := lifetime.SignalPolicy(); policy != nil {
			policy(sig, kind)
			continue
		}
		switch kind {
		case lifetime.SignalDefaultInt:
			// KeyboardInterrupt where Python code runs on the main thread;
			// a Go program busy elsewhere ends as Go programs do.
			if !capi.MainInPython() {
				exitBySignal(sig, "")
			}
			capi.SignalInterrupt(int(sig))
		case lifetime.SignalPython:
			capi.SignalInterrupt(int(sig)) // runs at Python's main thread's next check
		default:
			exitBySignal(sig, "")
		}
	}
}

// exitBySignal ends the process as the signal's default action would, with
// the status a shell reports for it (128+n).
func exitBySignal(sig syscall.Signal, why string) {
	if why != "" {
		fmt.Fprintf(os.Stderr, "duet: %v %s: exiting\n", sig, why)
	}
	os.Exit(128 + int(sig))
}
