package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
)

// Options configure a parent run.
type Options struct {
	Duration    time.Duration
	GCInterval  time.Duration
	Ownership   string  // "capsule" or "go"
	MaxRSSSlope float64 // MB per minute, over the second half of the run
	// MinRSSGrowth (MB) is how much the fitted growth over the second half
	// must also reach for a steep slope to fail the run: over a short run a
	// few hundred kB of noise make a steep slope.
	MinRSSGrowth float64
	Watchdog     time.Duration
	Exe          string   // the binary to run children from (default: this one)
	ChildArgs    []string // extra arguments for the child (before the harness flags)
	Progress     io.Writer
	ProgressLive bool // rewrite one line (a terminal) instead of printing lines
	// CrashDir keeps the crash report of a child that died (default: the
	// temporary directory). Children write crash reports (package
	// forensics) unless DUET_CRASH_REPORT is set in the environment.
	CrashDir string
}

// Crash describes a child that died.
type Crash struct {
	Signal    string   `json:"signal"`
	ExitCode  int      `json:"exit_code"`
	Iteration int64    `json:"iteration"`
	AtSeconds float64  `json:"at_seconds"`
	LastOps   []string `json:"last_ops"`
	// Diagnosis is duet's use-after-free line (DUET_DEBUG=callbacks):
	// which callback, made where, freed by whom, called by what.
	Diagnosis string `json:"diagnosis,omitempty"`
	// ReportFile is the child's whole crash report (Go stacks, the ring of
	// boundary crossings, Python tracebacks).
	ReportFile string `json:"report_file,omitempty"`
	// LastCrossings are the newest boundary crossings from the report's ring.
	LastCrossings []string `json:"last_crossings,omitempty"`
	// Python is the tracebacks of the Python threads at the crash.
	Python string `json:"python_tracebacks,omitempty"`
	Stderr string `json:"stderr"` // from the first fatal line, at most 16 kB
}

// CensusSpan is what lived when a scenario started and ended (after it
// settled), and what grew in between.
type CensusSpan struct {
	Start *forensics.Census  `json:"start,omitempty"`
	End   *forensics.Census  `json:"end,omitempty"`
	Grew  []forensics.Change `json:"grew,omitempty"`
}

// RSS summarises memory over the run.
type RSS struct {
	Start, Peak, End int64
	// SlopeMBPerMin is the least-squares slope of RSS over the second half
	// of the run (the first half is warm-up).
	SlopeMBPerMin float64 `json:"slope_mb_per_min"`
}

// Report is the outcome of one scenario.
type Report struct {
	Scenario    string     `json:"scenario"`
	Ownership   string     `json:"ownership"`
	Seconds     float64    `json:"duration_seconds"`
	GCInterval  string     `json:"gc_interval"`
	Iterations  int64      `json:"iterations"`
	GoGC        int64      `json:"go_gc_cycles"`
	PyGC        int64      `json:"python_gc_collections"`
	ForcedGC    int64      `json:"forced_gc_rounds"`
	CbCreated   int64      `json:"callbacks_created"`
	CbFreed     int64      `json:"callbacks_freed"`
	CbFreedByGo int64      `json:"callbacks_freed_by_go_gc"`
	CbLiveEnd   int64      `json:"callbacks_live_end"`
	CbBaseline  int64      `json:"callbacks_live_baseline"`
	PyGCObjects int64      `json:"python_gc_tracked_objects"`
	Cycles      []string   `json:"cycles_through_go,omitempty"` // callbacks.Cycles at the end
	Census      CensusSpan `json:"census"`
	RSS         RSS        `json:"rss"`
	Crash       *Crash     `json:"crash,omitempty"`
	Verdict     string     `json:"verdict"`
	OK          bool       `json:"ok"`
	Reproduced  bool       `json:"crash_reproduced,omitempty"` // broken mode: the expected crash happened
	Samples     []Sample   `json:"samples"`
	// Twin is the same workload in pure PyGObject, run beside it.
	Twin *TwinRun `json:"pure_pygobject_twin,omitempty"`
}

var (
	signalRe  = regexp.MustCompile(`(SIG[A-Z]+)`)
	fatalRe   = regexp.MustCompile(`(?m)^(SIG[A-Z]+:|fatal error:|panic:|Fatal Python error|duet: use after free:|=== duet crash report)`)
	sigLineRe = regexp.MustCompile(`(?m)^(SIG[A-Z]+): `)
	uafRe     = regexp.MustCompile(`(?m)^duet: use after free: (.*)$`)
)

const crashTextMax = 16 << 10

// crashText keeps the crash report: from its first fatal line on.
func crashText(s string) string {
	if loc := fatalRe.FindStringIndex(s); loc != nil {
		s = s[loc[0]:]
	} else if len(s) > crashTextMax {
		s = s[len(s)-crashTextMax:]
	}
	if len(s) > crashTextMax {
		s = s[:crashTextMax]
	}
	return s
}

// readDuetPart picks duet's part of a crash report (see package
// forensics) out of the child's stderr.
func readDuetPart(c *Crash, stderr string) {
	if m := uafRe.FindStringSubmatch(stderr); m != nil {
		c.Diagnosis = m[1]
	}
	i := strings.Index(stderr, "=== duet crash report")
	if i < 0 {
		return
	}
	part := stderr[i:]
	if j := strings.Index(part, "=== end of duet's part"); j >= 0 {
		part = part[:j]
	}
	lines := strings.Split(part, "\n")
	inRing, inPy := false, false
	var py []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "last boundary crossings"):
			inRing, inPy = true, false
		case strings.HasPrefix(l, "Python threads"):
			inRing, inPy = false, true
		case strings.HasPrefix(l, "the whole report is in "):
			inRing, inPy = false, false
		case inRing && strings.HasPrefix(l, "  #"):
			c.LastCrossings = append(c.LastCrossings, strings.TrimSpace(l))
		case inPy:
			py = append(py, l)
		}
	}
	if n := len(c.LastCrossings); n > 16 {
		c.LastCrossings = c.LastCrossings[n-16:]
	}
	c.Python = strings.TrimSpace(strings.Join(py, "\n"))
}

// RunScenario runs one scenario in a child process and judges it.
func RunScenario(sc Scenario, o Options) *Report {
	exe := o.Exe
	if exe == "" {
		exe, _ = os.Executable()
	}
	args := append(append([]string{}, o.ChildArgs...),
		"-child", sc.Name, "-ownership", o.Ownership, "-gc-interval", o.GCInterval.String())
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none")
	crashFile := ""
	if _, set := os.LookupEnv("DUET_CRASH_REPORT"); !set {
		dir, err := o.CrashDir, error(nil)
		if dir == "" {
			dir, err = diag.PrivateDir("stress") // never the shared /tmp
		}
		if f, cerr := os.CreateTemp(dir, "crash-"+sc.Name+"-*.txt"); err == nil && cerr == nil {
			crashFile = f.Name()
			f.Close()
			cmd.Env = append(cmd.Env, "DUET_CRASH_REPORT="+crashFile)
		}
	}
	box, err := newBlackBoxFile()
	if err == nil {
		defer os.Remove(box)
		cmd.Env = append(cmd.Env, boxEnv+"="+box)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr tailBuffer
	cmd.Stderr = &stderr
	rep := &Report{Scenario: sc.Name, Ownership: o.Ownership, GCInterval: o.GCInterval.String()}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		rep.Verdict = "fail: cannot start the child: " + err.Error()
		return rep
	}

	var twinDone <-chan *TwinRun
	stopTwin := func() {}
	if sc.Twin != "" && o.Ownership != "go" {
		twinDone, stopTwin = startTwin(sc, o)
	}
	samples := make(chan Sample, 64)
	go func() {
		defer close(samples)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var s Sample
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				samples <- s
			}
		}
	}()
	stopAt := time.After(o.Duration)
	stopped := false
	var final *Sample
	lastSample := time.Now()
	watchdog := time.NewTicker(time.Second)
	defer watchdog.Stop()
loop:
	for {
		select {
		case s, ok := <-samples:
			if !ok {
				break loop // the child closed its output: it has exited
			}
			lastSample = time.Now()
			switch {
			case s.Final:
				final = &s
			case s.Census != nil:
				rep.Census.Start = s.Census
			default:
				rep.Samples = append(rep.Samples, s)
				progress(o, sc.Name, s)
			}
		case <-stopAt:
			stopped = true
			stdin.Close() // ask the child to stop, settle and report
			stopTwin()
		case <-watchdog.C:
			limit := o.Watchdog
			if stopped {
				limit += 30 * time.Second // settling takes a while
			}
			if time.Since(lastSample) > limit && rep.Verdict == "" {
				cmd.Process.Kill()
				rep.Verdict = fmt.Sprintf("fail: watchdog: no progress for %v", limit)
			}
		}
	}
	waitErr := cmd.Wait()
	stopTwin()
	if twinDone != nil {
		rep.Twin = twinWait(twinDone)
	}
	defer func() {
		if crashFile != "" {
			os.Remove(crashFile) // nothing to keep
		}
	}()
	rep.Seconds = time.Since(start).Seconds()
	if o.ProgressLive && o.Progress != nil {
		fmt.Fprintln(o.Progress)
	}
	summarize(rep, final)

	var ee *exec.ExitError
	if waitErr != nil && errors.As(waitErr, &ee) && (final == nil || ee.ExitCode() != 1) {
		c := &Crash{ExitCode: ee.ExitCode(), Stderr: crashText(stderr.String())}
		// The first fatal signal Go reports (a SIGSEGV that ends in the
		// SIGABRT of crash reports is a SIGSEGV), else the one that ended it.
		if m := sigLineRe.FindStringSubmatch(stderr.String()); m != nil {
			c.Signal = m[1]
		} else if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			c.Signal = ws.Signal().String()
		} else if m := signalRe.FindString(stderr.String()); m != "" {
			c.Signal = m
		} else if strings.Contains(stderr.String(), "panic:") || strings.Contains(stderr.String(), "fatal error") {
			c.Signal = "Go runtime abort"
		}
		if n := len(rep.Samples); n > 0 {
			last := rep.Samples[n-1]
			c.Iteration, c.LastOps = last.Iterations, last.LastOps
		}
		c.AtSeconds = time.Since(start).Seconds()
		readDuetPart(c, stderr.String())
		if st, err := os.Stat(crashFile); crashFile != "" && err == nil && st.Size() > 0 {
			c.ReportFile, crashFile = crashFile, ""
		}
		// The black box holds the state at the moment of death.
		if it, ops := readBlackBox(box); len(ops) > 0 || it > 0 {
			c.Iteration, c.LastOps = it, ops
			rep.Iterations = max(rep.Iterations, it)
		}
		rep.Crash = c
	}
	judge(rep, sc, o, final)
	return rep
}

func summarize(rep *Report, final *Sample) {
	all := rep.Samples
	if final != nil {
		all = append(all[:len(all):len(all)], *final)
	}
	if len(all) == 0 {
		return
	}
	last := all[len(all)-1]
	rep.Iterations, rep.GoGC, rep.PyGC, rep.ForcedGC = last.Iterations, last.GoGC, last.PyGC, last.ForcedGC
	rep.CbCreated, rep.CbFreed, rep.CbFreedByGo, rep.CbLiveEnd = last.CbCreated, last.CbFreed, last.CbFreedByGo, last.CbLive
	rep.RSS.Start, rep.RSS.End = all[0].RSS, last.RSS
	for _, s := range all {
		rep.RSS.Peak = max(rep.RSS.Peak, s.RSS)
	}
	rep.RSS.SlopeMBPerMin = slope(rep.Samples)
	if final != nil {
		rep.CbBaseline, rep.PyGCObjects = final.Baseline, final.PyGCObjects
		rep.Cycles = final.Cycles
		rep.Census.End = final.Census
		if rep.Census.Start != nil && rep.Census.End != nil {
			rep.Census.Grew = rep.Census.End.Grew(rep.Census.Start)
		}
	}
}

// secondHalf is the duration (seconds) the slope is fitted over.
func secondHalf(s []Sample) float64 {
	if len(s) < 2 {
		return 0
	}
	return s[len(s)-1].T - s[len(s)/2].T
}

// slope fits RSS against time over the second half of the samples.
func slope(s []Sample) float64 {
	s = s[len(s)/2:]
	if len(s) < 3 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, p := range s {
		x, y := p.T/60, float64(p.RSS)/(1<<20)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(s))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func judge(rep *Report, sc Scenario, o Options, final *Sample) {
	broken := o.Ownership == "go"
	switch {
	case rep.Verdict != "":
		// the watchdog already failed it
	case broken && rep.Crash != nil:
		rep.Reproduced, rep.OK = true, true
		rep.Verdict = fmt.Sprintf("crash reproduced (as expected of the broken ownership mode): %s after %d iterations, %.2f s",
			orDefault(rep.Crash.Signal, fmt.Sprintf("exit %d", rep.Crash.ExitCode)), rep.Crash.Iteration, rep.Crash.AtSeconds)
		if rep.Crash.Diagnosis != "" {
			rep.Verdict += ": " + rep.Crash.Diagnosis
		}
	case broken && !sc.CanCrashBroken:
		rep.OK = true
		rep.Verdict = "ok (Python holds no Go callback past Go's GC here: nothing for the broken mode to break)"
	case broken:
		rep.Verdict = "fail: the broken ownership mode did not crash"
	case rep.Crash != nil:
		rep.Verdict = fmt.Sprintf("fail: crashed: %s after %d iterations", orDefault(rep.Crash.Signal, fmt.Sprintf("exit %d", rep.Crash.ExitCode)), rep.Crash.Iteration)
		if rep.Crash.Diagnosis != "" {
			rep.Verdict += ": " + rep.Crash.Diagnosis
		}
	case final == nil:
		rep.Verdict = "fail: the child ended without a final report"
	case final.Err != "":
		rep.Verdict = "fail: " + final.Err
	case len(rep.Cycles) > 0:
		rep.Verdict = fmt.Sprintf("fail: %d Go callbacks hold the object they are connected to, e.g. %s", len(rep.Cycles), rep.Cycles[0])
	case rep.CbLiveEnd > rep.CbBaseline:
		rep.Verdict = fmt.Sprintf("fail: %d callbacks live at the end, baseline %d", rep.CbLiveEnd, rep.CbBaseline)
	case rep.Iterations == 0:
		rep.Verdict = "fail: the workload made no progress"
	case rep.RSS.SlopeMBPerMin-twinSlope(rep) > o.MaxRSSSlope && (rep.RSS.SlopeMBPerMin-twinSlope(rep))*secondHalf(rep.Samples)/60 > o.MinRSSGrowth:
		rep.Verdict = fmt.Sprintf("fail: RSS grows %.2f MB/min (bound %.2f)%s", rep.RSS.SlopeMBPerMin, o.MaxRSSSlope, twinNote(rep))
	default:
		rep.OK = true
		rep.Verdict = "ok" + twinNote(rep)
	}
}

// twinSlope is what the pure PyGObject twin grew, the part of the RSS
// slope that is not duet's (never negative: a twin that shrinks excuses
// nothing).
func twinSlope(rep *Report) float64 {
	if rep.Twin == nil || rep.Twin.Err != "" || len(rep.Twin.Samples) < 4 {
		return 0
	}
	return max(rep.Twin.RSS.SlopeMBPerMin, 0)
}

func twinNote(rep *Report) string {
	switch {
	case rep.Twin == nil:
		return ""
	case rep.Twin.Err != "":
		return " (the pure PyGObject twin failed: " + clip(rep.Twin.Err, 200) + ")"
	}
	return fmt.Sprintf(" (RSS %.2f MB/min; the same workload in pure PyGObject, run beside it: %.2f MB/min over %d iterations)",
		rep.RSS.SlopeMBPerMin, rep.Twin.RSS.SlopeMBPerMin, rep.Twin.Iterations)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func progress(o Options, name string, s Sample) {
	if o.Progress == nil {
		return
	}
	line := fmt.Sprintf("%-8s %5.1fs  iter %-9d GC go %-6d py %-6d  callbacks live %-5d  RSS %6.1f MB",
		name, s.T, s.Iterations, s.GoGC, s.PyGC, s.CbLive, float64(s.RSS)/(1<<20))
	if o.ProgressLive {
		fmt.Fprintf(o.Progress, "\r%s", line)
		return
	}
	// Plain lines, one per second or so.
	if int(s.T*4)%4 == 0 {
		fmt.Fprintln(o.Progress, line)
	}
}

// tailBuffer keeps everything written, for the crash report's tail.
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.b.Len() > 1<<20 { // keep the newest megabyte
		rest := t.b.Bytes()[t.b.Len()-(1<<19):]
		t.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return t.b.Write(p)
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
