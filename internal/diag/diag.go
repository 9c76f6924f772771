// Package diag holds the switches that duet's diagnostics share across
// packages: whether callbacks record where they were made (provenance),
// and the DUET_DEBUG modes. Package forensics sets them; callbacks reads
// them. Tests reset them with the setters.
package diag

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Start is when this process's diagnostics clock began (package init:
// about the process's start); reports give times relative to it.
var Start = time.Now()

var (
	provenance     atomic.Bool
	debugCallbacks atomic.Bool
)

func init() {
	for _, m := range strings.Split(os.Getenv("DUET_DEBUG"), ",") {
		if strings.TrimSpace(m) == "callbacks" {
			debugCallbacks.Store(true)
			provenance.Store(true)
		}
	}
}

// Provenance reports whether new callbacks record their creation site.
func Provenance() bool { return provenance.Load() }

// SetProvenance turns the recording of creation sites on or off.
func SetProvenance(on bool) { provenance.Store(on) }

// DebugCallbacks reports whether DUET_DEBUG=callbacks is on: freed
// callbacks are quarantined and a call into one is diagnosed.
func DebugCallbacks() bool { return debugCallbacks.Load() }

// SetDebugCallbacks changes it (tests, and forensics.SetDebugCallbacks).
func SetDebugCallbacks(on bool) { debugCallbacks.Store(on) }

// ResidentBytes is this process's resident set size, from /proc/self/statm
// (its second field, in pages); 0 when it cannot be read. The stress
// harness and the explorer sample it.
func ResidentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
