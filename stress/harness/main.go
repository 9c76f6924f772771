package harness

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
)

// Exit statuses of Main.
const (
	ExitOK         = 0 // every scenario ran clean
	ExitFailed     = 1 // a crash, a leak, a watchdog timeout...
	ExitBadFlags   = 2
	ExitReproduced = 3 // -ownership go crashed, as it should
)

const xvfbEnv = "DUET_STRESS_UNDER_XVFB"

// Main is the stress command: it parses flags, runs the chosen scenarios
// (each in a child process of this same binary) and returns the exit
// status. Programs that stress their own app call it with their scenarios:
//
//	func main() { os.Exit(harness.Main(os.Args[1:], myScenarios)) }
func Main(args []string, scenarios []Scenario) int {
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	var names []string
	for _, s := range scenarios {
		names = append(names, s.Name)
	}
	scenario := fs.String("scenario", "all", "scenario to run: "+strings.Join(names, ", ")+", or all")
	duration := fs.Duration("duration", 60*time.Second, "how long each scenario runs")
	gcEvery := fs.Duration("gc-interval", 100*time.Millisecond, "how often gc.collect() and runtime.GC() are forced (1ms to 10s)")
	ownership := fs.String("ownership", "capsule", "callback ownership: capsule (the product) or go (deliberately broken: reproduces the classic crash)")
	report := fs.String("report", "", "write report.json and plot.svg into this directory")
	slope := fs.Float64("max-rss-slope", 8, "fail when RSS grows faster than this many MB per minute (second half of each run)...")
	growth := fs.Float64("min-rss-growth", 2, "...and that growth amounts to more than this many MB (short runs are noisy)")
	wd := fs.Duration("watchdog", 20*time.Second, "fail a scenario that reports no progress for this long")
	child := fs.String("child", "", "(internal) run one scenario's workload in this process")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return ExitBadFlags
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "stress: "+format+"\n", a...)
		fs.Usage()
		return ExitBadFlags
	}
	var broken bool
	switch *ownership {
	case "capsule":
	case "go":
		broken = true
	default:
		return bad("-ownership must be capsule or go, not %q", *ownership)
	}
	if *gcEvery < time.Millisecond || *gcEvery > 10*time.Second {
		return bad("-gc-interval must be between 1ms and 10s")
	}
	if *duration <= 0 {
		return bad("-duration must be positive")
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments: %v", fs.Args())
	}
	byName := map[string]Scenario{}
	for _, s := range scenarios {
		byName[s.Name] = s
	}

	if *child != "" {
		sc, ok := byName[*child]
		if !ok {
			return bad("unknown scenario %q", *child)
		}
		return ChildMain(sc, broken, *gcEvery)
	}

	var run []Scenario
	if *scenario == "all" {
		run = scenarios
	} else {
		for _, n := range strings.Split(*scenario, ",") {
			sc, ok := byName[strings.TrimSpace(n)]
			if !ok {
				return bad("unknown scenario %q (have %s)", n, strings.Join(names, ", "))
			}
			run = append(run, sc)
		}
	}
	if code, ok := reexecUnderXvfb(run); ok {
		return code
	}

	opts := Options{
		Duration: *duration, GCInterval: *gcEvery, Ownership: *ownership,
		MaxRSSSlope: *slope, MinRSSGrowth: *growth, Watchdog: *wd, Progress: os.Stdout, ProgressLive: isTerminal(os.Stdout),
		CrashDir: *report,
	}
	if *report != "" {
		if err := os.MkdirAll(*report, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "stress:", err)
			return ExitFailed
		}
	}
	// This process only watches; a crash report file it opened (with
	// DUET_CRASH_REPORT set) goes when it stays empty.
	defer diag.CloseCrashReports()
	sum := Summary{OK: true}
	reproduced := 0
	for _, sc := range run {
		fmt.Printf("== %s (%s ownership, %v, GC every %v)\n", sc.Name, *ownership, *duration, *gcEvery)
		r := RunScenario(sc, opts)
		sum.Runs = append(sum.Runs, r)
		fmt.Printf("   %s\n", r.Verdict)
		fmt.Printf("   iterations %d, GC %d Go / %d Python (%d forced), callbacks %d made / %d freed / %d live (baseline %d), RSS %.1f -> %.1f MB (peak %.1f, slope %.2f MB/min)\n",
			r.Iterations, r.GoGC, r.PyGC, r.ForcedGC, r.CbCreated, r.CbFreed+r.CbFreedByGo, r.CbLiveEnd, r.CbBaseline,
			mb(r.RSS.Start), mb(r.RSS.End), mb(r.RSS.Peak), r.RSS.SlopeMBPerMin)
		if r.Crash != nil {
			fmt.Printf("   crash: %s (exit %d) at iteration %d, %.2f s; last operations:\n", orDefault(r.Crash.Signal, "?"), r.Crash.ExitCode, r.Crash.Iteration, r.Crash.AtSeconds)
			for _, op := range r.Crash.LastOps {
				fmt.Printf("     %s\n", op)
			}
			if r.Crash.Diagnosis != "" {
				fmt.Printf("   diagnosis: %s\n", r.Crash.Diagnosis)
			}
			if n := len(r.Crash.LastCrossings); n > 0 {
				fmt.Println("   last boundary crossings:")
				for _, l := range r.Crash.LastCrossings[max(0, n-6):] {
					fmt.Printf("     %s\n", l)
				}
			}
			if r.Crash.ReportFile != "" {
				fmt.Printf("   crash report: %s\n", r.Crash.ReportFile)
			}
		}
		if g := r.Census.Grew; len(g) > 0 {
			fmt.Printf("   census, grew since the start: %s\n", growthLine(g, 5))
		}
		if !r.OK {
			sum.OK = false
		}
		if r.Reproduced {
			reproduced++
		}
	}
	switch {
	case !sum.OK:
		sum.Verdict = "fail"
	case *ownership == "go" && reproduced > 0:
		sum.Verdict = fmt.Sprintf("the broken ownership mode crashed in %d of %d scenarios, as expected", reproduced, len(run))
	case *ownership == "go":
		sum.Verdict = "fail: the broken ownership mode crashed nowhere"
		sum.OK = false
	default:
		sum.Verdict = "ok"
	}
	if *report != "" {
		js, svg, err := WriteReport(*report, sum)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stress: writing the report:", err)
			return ExitFailed
		}
		fmt.Printf("report: %s\nplot:   %s\n", js, svg)
	}
	fmt.Println("verdict:", sum.Verdict)
	switch {
	case !sum.OK:
		return ExitFailed
	case *ownership == "go":
		return ExitReproduced
	}
	return ExitOK
}

// growthLine names the first n rows that grew, e.g. "GtkLabel +12".
func growthLine(g []forensics.Change, n int) string {
	var parts []string
	for i, c := range g {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(g)-n))
			break
		}
		name := c.Name
		if c.Site != "" {
			name += " (" + c.Site + ")"
		}
		parts = append(parts, fmt.Sprintf("%s %s %+d", c.Table, name, c.To-c.From))
	}
	return strings.Join(parts, ", ")
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// reexecUnderXvfb reruns the whole command under xvfb-run when a scenario
// needs a display and there is none, so that children inherit DISPLAY (and
// their crashes reach us unfiltered).
func reexecUnderXvfb(run []Scenario) (int, bool) {
	need := false
	for _, s := range run {
		need = need || s.NeedsDisplay
	}
	if !need || os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" || os.Getenv(xvfbEnv) != "" {
		return 0, false
	}
	xvfb, err := exec.LookPath("xvfb-run")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress: no display and no xvfb-run (apt-get install xvfb xauth)")
		return ExitFailed, true
	}
	cmd := exec.Command(xvfb, append([]string{"-a", "-s", "-screen 0 1280x800x24", os.Args[0]}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), xvfbEnv+"=1")
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), true
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		return ExitFailed, true
	}
	return 0, true
}
