// Command duetvet reports Go handlers that capture the object they are
// connected to, a reference loop through Python and Go that neither
// garbage collector can see (see "Handlers that do not leak" in package
// widgets). Run it as go vet runs its checks:
//
//	go run ./cmd/duetvet ./...
//
// It exits non-zero when it reports something.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/duet-gtk/duet/cmd/duetvet/capture"
)

func main() { singlechecker.Main(capture.Analyzer) }
