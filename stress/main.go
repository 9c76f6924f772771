// Command stress forces both garbage collectors while a duet app works, and
// reproduces the classic crash on demand (-ownership go). Each scenario runs
// in a child process, so a crash is observed, not suffered.
//
//	go run ./stress -scenario all -duration 60s -report out/stress
//	go run ./stress -scenario awaker -ownership go    # exits 3: crash reproduced
//
// Exit status: 0 clean, 1 failure, 2 bad flags, 3 the broken mode crashed.
package main

import (
	"os"

	"github.com/duet-gtk/duet/stress/harness"
	"github.com/duet-gtk/duet/stress/scenarios"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-exit-child" {
		os.Exit(scenarios.ExitChild(os.Args[2]))
	}
	os.Exit(harness.Main(os.Args[1:], scenarios.All()))
}
