package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// progressPoll is how often the driver looks at a child's
	// DUET_EXPLORE_TRACE.
	progressPoll = 200 * time.Millisecond
	// progressMargin is added to -hang before a child that streams
	// nothing (no action, no heartbeat: package app beats once a second)
	// is said to make no progress.
	progressMargin = 3 * time.Second
)

// traceWatch follows a child's DUET_EXPLORE_TRACE as it grows: when it
// last did, whether it beats, and its end line ({"end": "done"} or
// {"end": "hang"}).
type traceWatch struct {
	path    string
	f       *os.File
	last    time.Time // when a line last came; zero before the first
	beats   bool      // a heartbeat came: silence means no progress
	lines   bool      // a line came: package app's explorer was set up
	end     string    // the end line's: done, hang, error, not started
	endErr  string    // the end line's error, with "error"
	read    int64     // bytes read so far
	partial []byte
}

func (w *traceWatch) poll() {
	if w.f == nil {
		f, err := os.Open(w.path)
		if err != nil {
			return // not yet
		}
		w.f = f
	}
	buf, _ := io.ReadAll(w.f) // from where the last poll stopped
	if len(buf) == 0 {
		return
	}
	w.last = time.Now()
	w.read += int64(len(buf))
	data := append(w.partial, buf...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		w.lines = true
		w.beats = w.beats || bytes.HasPrefix(line, []byte(`{"beat":`))
		if bytes.HasPrefix(line, []byte(`{"end":`)) {
			var e struct{ End, Error string }
			if json.Unmarshal(line, &e) == nil {
				w.end, w.endErr = e.End, e.Error
			}
		}
	}
	w.partial = append([]byte(nil), data...)
}

func (w *traceWatch) close() {
	if w.f != nil {
		w.f.Close()
	}
}

// end ends a child that does not end by itself: SIGQUIT, for the Go
// runtime's goroutine dump on its stderr, then, childStopGap later,
// SIGKILL. A stopped process (SIGSTOP) would only keep a SIGQUIT pending:
// it gets SIGCONT first. (SIGQUIT first, then SIGCONT, was measured to
// lose the SIGQUIT now and then with crash reports on: the process went
// on as if nothing had been sent.) p leads its process group (see
// driver.child), which the SIGKILL ends. It says whether it was stopped.
func end(p *os.Process, exited <-chan error) (stopped bool) {
	stopped = processStopped(p.Pid)
	if stopped {
		p.Signal(syscall.SIGCONT)
	}
	p.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(childStopGap):
		syscall.Kill(-p.Pid, syscall.SIGKILL) // its group: what it started too
		<-exited
	}
	return stopped
}

// processStopped says whether the process is stopped (state T, or t when
// traced), from /proc.
func processStopped(pid int) bool {
	st := processState(pid)
	return st == "T" || st == "t"
}

// processExited says whether the process has exited: a zombie not yet
// reaped, or gone (reaped: Wait has returned, or is returning).
func processExited(pid int) bool {
	st := processState(pid)
	return st == "" || st == "Z" || st == "X"
}

// processState is the process's state letter from /proc ("" when there is
// no such process).
func processState(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// "pid (comm) S ...": the command may have spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}
