// sigprobe: a program linking duet, built by TestSignalsInANonPIEBuild with
// C code that is not position-independent. Go's own signal handling must
// work in it as in any Go program.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/pygi"
)

func caught() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "SigCgt:") {
			return l
		}
	}
	return "?"
}

func main() {
	fmt.Println("before Python:", caught())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	if err := pygi.Exec("import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n", nil); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("after Python:", caught())
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case <-ch:
		fmt.Println("host got SIGUSR1")
	case <-time.After(5 * time.Second):
		fmt.Println("host never got SIGUSR1")
		os.Exit(1)
	}
	func() {
		defer func() { fmt.Println("recovered:", recover()) }()
		var p *int
		_ = *p
	}()
}
