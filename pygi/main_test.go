package pygi

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/duet-gtk/duet/internal/capi"
)

// onMain runs functions on the main OS thread for tests that need it.
var onMain = make(chan func())

func runOnMainThread(fn func()) {
	done := make(chan struct{})
	onMain <- func() { fn(); close(done) }
	<-done
}

func TestMain(m *testing.M) {
	if os.Getenv("PYGI_CHILD") != "" {
		os.Exit(childMain(os.Getenv("PYGI_CHILD")))
	}
	// pygi's init locked this goroutine to the main thread.
	if err := Init(Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := make(chan int)
	go func() { code <- m.Run() }()
	for {
		select {
		case fn := <-onMain:
			fn()
		case c := <-code:
			if n := capi.LeakedExceptions(); n > 0 {
				fmt.Fprintf(os.Stderr, "%d entries left a Python exception set\n", n)
				c = 1
			}
			if err := Finalize(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, "Finalize:", err)
				c = 1
			}
			os.Exit(c)
		}
	}
}
