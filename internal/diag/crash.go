package diag

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/duet-gtk/duet/internal/capi"
)

// Crash reports (see package forensics for the contract). Everything here
// happens once per process; a later call only changes the file.

var crash struct {
	mu   sync.Mutex
	file *os.File
	path string
}

// EnableCrashReports makes path (created, appended to; "" for the
// default, duet-crash-<program>-<pid>.txt in the temporary directory) the
// crash report file, asks the Go runtime to crash rather than exit on a
// fatal error (so that the report's SIGABRT handler runs), turns the ring
// and provenance on, and returns the path.
func EnableCrashReports(path string) (string, error) {
	crash.mu.Lock()
	defer crash.mu.Unlock()
	if path == "" {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("duet-crash-%s-%d.txt", filepath.Base(os.Args[0]), os.Getpid()))
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("forensics: crash report file: %w", err)
	}
	// The Go runtime writes every goroutine's stack there as well as to
	// stderr; "crash" makes it end with SIGABRT, where duet's part follows.
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		f.Close()
		return "", fmt.Errorf("forensics: crash output: %w", err)
	}
	debug.SetTraceback("crash")
	if !capi.InstallCrashHandler(int(f.Fd()), path) {
		f.Close()
		return "", fmt.Errorf("forensics: cannot install the SIGABRT handler")
	}
	if crash.file != nil {
		crash.file.Close()
	}
	crash.file, crash.path = f, path
	capi.EnableRing(true)
	SetProvenance(true)
	return path, nil
}

// CrashReportPath is the report file, or "" when there is none (crash
// reports off, or closed by CloseCrashReports).
func CrashReportPath() string {
	crash.mu.Lock()
	defer crash.mu.Unlock()
	return crash.path
}

// CloseCrashReports is for a clean end of the process: the report file is
// removed if nothing was written to it, and from then on reports go to
// stderr only.
func CloseCrashReports() {
	crash.mu.Lock()
	defer crash.mu.Unlock()
	if crash.file == nil {
		return
	}
	if st, err := crash.file.Stat(); err == nil && st.Size() == 0 {
		capi.InstallCrashHandler(-1, "")
		debug.SetCrashOutput(nil, debug.CrashOptions{})
		crash.file.Close()
		os.Remove(crash.path)
		crash.file, crash.path = nil, ""
	}
}

// CrashReportsFromEnv turns crash reports on when DUET_CRASH_REPORT asks:
// "1" (or "on", "true") for the default file, anything else but "0",
// "off" and "false" names the file.
func CrashReportsFromEnv() {
	v := strings.TrimSpace(os.Getenv("DUET_CRASH_REPORT"))
	switch strings.ToLower(v) {
	case "", "0", "off", "false":
		return
	case "1", "on", "true":
		v = ""
	}
	if _, err := EnableCrashReports(v); err != nil {
		fmt.Fprintln(os.Stderr, "duet:", err)
	}
}
