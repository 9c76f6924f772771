package main

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/explore"
)

const planted = "github.com/duet-gtk/duet/cmd/duetexplore/testdata/planted"

// plantedExe is the planted-bug app, built once for the tests that do not
// test the build itself.
var plantedExe string

func TestMain(m *testing.M) {
	if os.Getenv(asMainVar) == "1" {
		main() // the test binary as the command: see runAsMain
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		os.Stderr.WriteString("duetexplore's tests need a display (run them under xvfb-run -a)\n")
		os.Exit(0)
	}
	if sanitized {
		// make sanitize's C flags are this binary's. The GTK programs the
		// tests build would compile gotk4 once more with them (about ten
		// minutes on a cold cache, past the tests' deadline); built
		// without, they share the -race pass's build.
		os.Unsetenv("CGO_CFLAGS")
		os.Unsetenv("CGO_LDFLAGS")
	}
	dir, err := os.MkdirTemp("", "duetexplore-test-")
	if err != nil {
		panic(err)
	}
	// What the driver keeps for its user (the temporary directory of a
	// crash or a hang, a trace written without -o, the children's crash
	// reports) lands here and goes with it: each run of these tests left
	// six directories and a trace in /tmp and four crash reports in the
	// user's state directory.
	for _, v := range []string{"TMPDIR", "XDG_STATE_HOME"} {
		sub := filepath.Join(dir, strings.ToLower(v))
		if err := os.Mkdir(sub, 0o700); err != nil {
			panic(err)
		}
		os.Setenv(v, sub)
	}
	plantedExe = filepath.Join(dir, "planted")
	if out, err := exec.Command("go", "build", "-o", plantedExe, planted).CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	status := m.Run()
	os.RemoveAll(dir)
	os.Exit(status)
}

// drive runs duetexplore in this process on the planted app in mode.
func drive(t *testing.T, mode string, args ...string) (status int, stdout string) {
	t.Helper()
	t.Setenv("PLANTED", mode) // not parallel: the children inherit it
	return driveArgs(t, args...)
}

// driveWindows is drive for tests that run in parallel: the planted
// app's windows are its argument (-planted, after args), not PLANTED.
func driveWindows(t *testing.T, windows string, args ...string) (status int, stdout string) {
	t.Helper()
	return driveArgs(t, append(args, "--", "-planted="+windows)...)
}

func driveArgs(t *testing.T, args ...string) (status int, stdout string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	status = run(ctx, args, &out, &errb)
	t.Logf("duetexplore %s (PLANTED=%s): status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), os.Getenv("PLANTED"), status, out.String(), errb.String())
	return status, out.String()
}

// panicLine is where the planted panic is: "main.go:N".
func panicLine(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "planted", "main.go"))
	require.NoError(t, err)
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, `m["b"]++`) {
			return fmt.Sprintf("main.go:%d", i+1)
		}
	}
	t.Fatal("no planted panic in testdata/planted/main.go")
	return ""
}

func readFile(t *testing.T, path string) *explore.Report {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, err := explore.ReadReport(f)
	require.NoError(t, err)
	return rep
}

// The planted panic (B after A) is found, confirmed by a replay and
// shrunk to the two actions that make it; the shrunk file replays to it.
func TestFindsConfirmsAndShrinksAPanic(t *testing.T) {
	out := filepath.Join(t.TempDir(), "panic.jsonl")
	status, stdout := drive(t, "panic", "-seed", "11", "-duration", "10s", "-exe", plantedExe, "-o", out)
	require.Equal(t, exitFound, status)
	assert.Contains(t, stdout, "confirmed by a replay")
	rep := readFile(t, out)
	require.Len(t, rep.Findings, 1)
	f := rep.Findings[0]
	assert.Equal(t, explore.KindPanic, f.Kind)
	assert.Equal(t, panicLine(t), f.Where)
	var words []string
	for _, a := range rep.Trace {
		words = append(words, a.String())
	}
	assert.LessOrEqual(t, len(words), 3, "%q", words)
	require.GreaterOrEqual(t, len(words), 2, "%q", words)
	assert.Equal(t, "click 'A' in 'panic'", words[0])
	assert.Equal(t, "click 'B' in 'panic'", words[len(words)-1])
	assert.Contains(t, stdout, "click 'A' in 'panic', click 'B' in 'panic' → Go panic: assignment to entry in nil map ("+panicLine(t)+")")

	// Replaying the shrunk file twice: the same trace each time, the same
	// finding.
	for range 2 {
		status, stdout = drive(t, "panic", "-exe", plantedExe, "-replay", out)
		assert.Equal(t, exitFound, status)
		assert.Contains(t, stdout, "the recorded finding came back")
		assert.Contains(t, stdout, "replayed 2 of 2 actions")
	}
}

// A replay takes the recorded actions, values included, and nothing else:
// twice the same trace.
func TestReplayIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "clean.jsonl")
	// A recorded run, straight from the hook (DUET_EXPLORE_OUT).
	cmd := exec.Command(plantedExe)
	cmd.Env = append(os.Environ(), "PLANTED=clean", "GTK_A11Y=none", "DUET_EXPLORE=seed=4,actions=60,pace=1ms,gc=20ms", "DUET_EXPLORE_OUT="+rec)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	recorded := readFile(t, rec)
	require.Len(t, recorded.Trace, 60)
	verbs := map[string]bool{}
	for _, a := range recorded.Trace {
		verbs[a.Verb] = true
	}
	assert.True(t, verbs["type"], "the trace types text: %v", verbs)

	d := &driver{tmp: dir, exe: plantedExe, log: os.Stderr, pace: time.Millisecond, gc: 20 * time.Millisecond,
		stall: time.Second, hang: 10 * time.Second, grace: 10 * time.Second}
	t.Setenv("PLANTED", "clean")
	strip := func(trace []explore.Action) []explore.Action {
		var s []explore.Action
		for _, a := range trace {
			a.At = 0
			s = append(s, a)
		}
		return s
	}
	var traces [][]explore.Action
	for range 2 {
		o, err := d.replay(context.Background(), recorded.Trace, nil)
		require.NoError(t, err)
		require.NotNil(t, o.rep)
		assert.Empty(t, o.rep.ReplayError)
		assert.Nil(t, o.finding)
		assert.Equal(t, 60, o.rep.Replayed)
		traces = append(traces, strip(o.rep.Trace))
	}
	assert.Equal(t, strip(recorded.Trace), traces[0], "the replay takes the recorded actions")
	assert.Equal(t, traces[0], traces[1], "two replays, one trace")
}

// A replayed address that is not there is a replay error, not a finding.
func TestReplayErrorIsNoFinding(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "missing.jsonl")
	rep := &explore.Report{Trace: []explore.Action{{Verb: "click", Address: "window 'clean' > GtkBox#0 'group' > GtkButton#9 'gone'", Label: "gone"}}}
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, rep.WriteJSON(f))
	require.NoError(t, f.Close())
	status, stdout := drive(t, "clean", "-exe", plantedExe, "-replay", file)
	assert.Equal(t, exitReplay, status)
	assert.Contains(t, stdout, "replay error: recorded action 1 (click 'gone')")
}

// A write through a null pointer in C: a crash finding that names the
// signal, confirmed and shrunk to the one click.
func TestFindsACrash(t *testing.T) {
	out := filepath.Join(t.TempDir(), "crash.jsonl")
	status, stdout := drive(t, "crash", "-seed", "11", "-duration", "10s", "-exe", plantedExe, "-o", out, "-shrink-time", "20s")
	require.Equal(t, exitFound, status)
	assert.Contains(t, stdout, "crash: SIGSEGV: segmentation violation")
	assert.Contains(t, stdout, "crash report: ")
	rep := readFile(t, out)
	require.Len(t, rep.Findings, 1)
	assert.Equal(t, explore.KindCrash, rep.Findings[0].Kind)
	require.Len(t, rep.Trace, 1)
	assert.Equal(t, "click 'crash' in 'crash'", rep.Trace[0].String())
	assert.Regexp(t, `crash report: /\S+`, stdout, "the crash report's path is printed")
}

// A clean app, built from its package by duetexplore itself: exit 0.
func TestCleanAppBuiltFromItsPackage(t *testing.T) {
	status, stdout := drive(t, "clean", "-duration", "2s", planted)
	assert.Equal(t, exitClean, status)
	assert.Contains(t, stdout, "nothing found")
}

// -test writes the shrunk trace and a Go test that replays it into the
// package's directory (here a copy of the planted app inside the module,
// so that the test can build it): the test fails while the bug is there,
// passes once it is fixed, and says the UI changed when a recorded widget
// is gone.
func TestWritesARegressionTest(t *testing.T) {
	if testing.Short() {
		t.Skip("explores, then runs go test three times")
	}
	dir, err := os.MkdirTemp("testdata", "regress-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	src, err := os.ReadFile(filepath.Join("testdata", "planted", "main.go"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), src, 0o666))
	pkg := "./" + filepath.ToSlash(dir)

	status, stdout := drive(t, "panic", "-seed", "5", "-duration", "10s", "-test", pkg)
	require.Equal(t, exitFound, status)
	tests, _ := filepath.Glob(filepath.Join(dir, "duetexplore_panic_*_test.go"))
	require.Len(t, tests, 1)
	hash := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tests[0]), "duetexplore_panic_"), "_test.go")
	assert.Len(t, hash, 8)
	traceFile := filepath.Join(dir, "testdata", "duetexplore-panic-"+hash+".jsonl")
	abs, err := filepath.Abs(tests[0])
	require.NoError(t, err)
	assert.Contains(t, stdout, "regression test written: "+abs)
	rep := readFile(t, traceFile)
	require.Len(t, rep.Findings, 1)
	assert.Equal(t, panicLine(t), rep.Findings[0].Where)
	assert.Len(t, rep.Trace, 2)
	code, err := os.ReadFile(tests[0])
	require.NoError(t, err)
	formatted, err := format.Source(code)
	require.NoError(t, err)
	assert.Equal(t, string(formatted), string(code), "gofmt'ed")
	assert.Contains(t, string(code), "package main\n")
	assert.Contains(t, string(code), "written by duetexplore")
	assert.NotContains(t, string(code), "testify")

	goTest := func(mode string) (string, error) {
		cmd := exec.Command("go", "test", "-count=1", pkg)
		cmd.Env = append(os.Environ(), "PLANTED="+mode)
		out, err := cmd.CombinedOutput()
		t.Logf("go test %s (PLANTED=%s): %v\n%s", pkg, mode, err, out)
		return string(out), err
	}
	out, err := goTest("panic")
	assert.Error(t, err, "the bug is there: the test fails")
	assert.Contains(t, out, "the bug is still there")
	assert.Contains(t, out, "assignment to entry in nil map "+panicLine(t))
	out, err = goTest("fixed")
	assert.NoError(t, err, "the bug is fixed: the test passes")
	assert.Contains(t, out, "ok  ")
	out, err = goTest("panic,fixed,raisingalways")
	assert.Error(t, err, "the explorer fails on the fixed program: the test cannot pass")
	assert.Contains(t, out, "the explorer failed replaying")
	assert.NotContains(t, out, "the bug is still there")
	out, err = goTest("clean")
	assert.Error(t, err, "no A or B: the trace does not replay")
	assert.Contains(t, out, "the UI changed: recorded action 1 (click 'A' in 'panic') not found")
	assert.Contains(t, out, "record it again")
	// The UI changed, the bug still there: a button comes before A, so
	// that the address recorded for A reads "more 3" and A's structural
	// key names that button. The regression test's replay is strict: it
	// does not click "more 3" for A (and A for B), and pass.
	out, err = goTest("panic,moved")
	assert.Error(t, err, "the UI changed: the test must not pass")
	assert.Contains(t, out, "the UI changed: recorded action 1 (click 'A' in 'panic') not found")
	assert.NotContains(t, out, "ok  ")
}

func TestUsage(t *testing.T) {
	status, _ := drive(t, "clean")
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-gc", "often", "-exe", plantedExe)
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-ignore-log", "(", "-exe", plantedExe)
	assert.Equal(t, exitUsage, status, "a regular expression that does not compile")
	status, _ = drive(t, "clean", "./testdata/no-such-package")
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-test", "-exe", plantedExe) // no package: no directory
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-test=./testdata/no-such-dir", "-exe", plantedExe)
	assert.Equal(t, exitUsage, status)
	// Negative counts and durations are mistakes, not bounds.
	for _, flags := range [][]string{
		{"-leak-every", "-1"}, {"-leak-rounds", "-1"}, {"-actions", "-1"}, {"-max-replays", "-1"},
		{"-duration", "-1s"}, {"-pace", "-1ms"}, {"-stall", "-1s"}, {"-hang", "-1s"}, {"-grace", "-1s"}, {"-shrink-time", "-1s"}, {"-gc", "-1s"},
	} {
		status, _ = drive(t, "clean", append(flags, "-exe", plantedExe)...)
		assert.Equal(t, exitUsage, status, "%v", flags)
	}
}

func TestDdmin(t *testing.T) {
	c := make([]int, 40)
	for i := range c {
		c[i] = i
	}
	// The trouble needs 7, then 31.
	has := func(s []int) bool {
		i7 := -1
		for i, v := range s {
			if v == 7 {
				i7 = i
			}
			if v == 31 && i7 >= 0 {
				return true
			}
		}
		return false
	}
	assert.Equal(t, []int{7, 31}, ddmin(c, has))

	// The shortest suffix first, in replays that double: trouble that
	// needs 31 then 38 is in the last 16, found in 5 tests, and ddmin
	// starts from those 16.
	tests := 0
	late := func(s []int) bool {
		tests++
		return slices.Contains(s, 31) && slices.Contains(s, 38)
	}
	s := suffix(c, late)
	assert.Equal(t, c[24:], s)
	assert.Equal(t, 5, tests)
	assert.Equal(t, []int{31, 38}, ddmin(s, late))
	assert.Equal(t, c, suffix(c, func([]int) bool { return false }), "none holds: all of it")
}

// skipSanitized skips, under make sanitize (-asan), a long test of the
// driver's logic: the -race pass runs it, and the shorter tests still
// drive the planted app there (the sanitizers are for duet's C code).
func skipSanitized(t *testing.T) {
	if sanitized {
		t.Skip("-asan: a long test of the driver's logic; the -race pass runs it")
	}
}

// plantedCopy copies the planted app into a new directory inside the
// module (so that a test written there can build it) and returns it.
func plantedCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("testdata", "regress-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	src, err := os.ReadFile(filepath.Join("testdata", "planted", "main.go"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), src, 0o666))
	return dir
}

// words is a trace in words.
func words(trace []explore.Action) []string {
	var w []string
	for _, a := range trace {
		w = append(w, a.String())
	}
	return w
}

// plantedKinds are the planted bugs of every kind but the panic (which
// TestFindsConfirmsAndShrinksAPanic and TestWritesARegressionTest have):
// the flags that find them fast, a seed whose run meets the bug a few
// actions in (so that shrinking has work, and not much), and the trace
// it must shrink to. The leak needs repetitions: with a census after
// every action (-leak-every 1) and growth at 2 censuses in a row, its
// shortest trace is A, then B twice (the census after A sees none, each
// B one more live callback); the crash is the one click.
var plantedKinds = []struct {
	kind    explore.Kind
	seed    string
	flags   []string
	message string
	shrunk  []string
}{
	{kind: explore.KindException, seed: "5", message: "RuntimeError: planted: B after A",
		shrunk: []string{"click 'A' in 'exception'", "click 'B' in 'exception'"}},
	{kind: explore.KindLog, seed: "5", message: "Gtk-CRITICAL: gtk_box_remove: assertion",
		shrunk: []string{"click 'A' in 'log'", "click 'B' in 'log'"}},
	{kind: explore.KindStall, seed: "5", flags: []string{"-stall", "300ms"}, message: "the action kept the UI thread for 1.",
		shrunk: []string{"click 'A' in 'stall'", "click 'B' in 'stall'"}},
	{kind: explore.KindLeak, seed: "31", flags: []string{"-leak-every", "1", "-leak-rounds", "2"}, message: `live Go callback`,
		shrunk: []string{"click 'A' in 'leak'", "click 'B' in 'leak'", "click 'B' in 'leak'"}},
	{kind: explore.KindHang, seed: "5", flags: []string{"-hang", "1s"}, message: "the UI thread did not come back from the action within 1s",
		shrunk: []string{"click 'A' in 'hang'", "click 'B' in 'hang'"}},
	// The whole process stops: the explorer cannot say it, the driver
	// sees no progress.
	{kind: "wedge", seed: "12", flags: []string{"-hang", "1s"}, message: "no progress for ",
		shrunk: []string{"click 'A' in 'wedge'", "click 'B' in 'wedge'"}},
	{kind: explore.KindCrash, seed: "5", message: "SIGSEGV: segmentation violation",
		shrunk: []string{"click 'crash' in 'crash'"}},
}

// Every kind of planted bug is found, confirmed by a replay and shrunk to
// its shortest trace; -test writes each as a regression test, and those
// tests (which replay the shrunk trace) fail while the bugs are there and
// pass once they are fixed.
func TestFindsEveryKind(t *testing.T) {
	skipSanitized(t)
	dir := plantedCopy(t)
	// The copy, built once: a leak's place is its file in its directory,
	// the same in the exploration and in the regression test.
	exe := filepath.Join(t.TempDir(), "planted")
	build, err := exec.Command("go", "build", "-o", exe, "./"+filepath.ToSlash(dir)).CombinedOutput()
	require.NoError(t, err, "%s", build)
	t.Setenv("PLANTED", "") // the windows are each run's -planted
	var windows []string
	t.Run("explore", func(t *testing.T) {
		for _, tc := range plantedKinds {
			mode := string(tc.kind)
			windows = append(windows, mode)
			t.Run(mode, func(t *testing.T) {
				t.Parallel() // two at a time on two cores: hangs and stalls mostly wait
				want := tc.kind
				if want == "wedge" {
					want = explore.KindHang
				}
				out := filepath.Join(t.TempDir(), mode+".jsonl")
				args := append([]string{"-seed", tc.seed, "-duration", "20s", "-exe", exe, "-o", out, "-test=" + dir}, tc.flags...)
				status, stdout := driveWindows(t, mode, args...)
				require.Equal(t, exitFound, status)
				assert.Contains(t, stdout, "duetexplore: found after ")
				assert.Contains(t, stdout, "confirmed by a replay")
				assert.Regexp(t, `shrunk from \d+ to \d+ actions`, stdout)
				rep := readFile(t, out)
				require.Len(t, rep.Findings, 1)
				f := rep.Findings[0]
				assert.Equal(t, want, f.Kind)
				assert.Contains(t, f.Message, tc.message)
				assert.Equal(t, tc.shrunk, words(rep.Trace), "shrunk to the shortest trace")
				assert.Contains(t, stdout, "regression test written: ")
				switch tc.kind {
				case explore.KindLeak:
					assert.Contains(t, f.Where, "main.go:")
				case "wedge":
					assert.Contains(t, f.Message, "it was stopped (SIGSTOP): SIGCONT and SIGQUIT, then SIGKILL")
				case explore.KindCrash:
					assert.Regexp(t, `crash report: /\S+`, stdout, "the crash report's path is printed")
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	tests, _ := filepath.Glob(filepath.Join(dir, "duetexplore_*_test.go"))
	require.Len(t, tests, len(plantedKinds), "one regression test a kind")
	// Each test runs its window (-planted, as the exploration did); with
	// PLANTED=fixed, fixed. Both runs at once: they mostly wait.
	goTest := func(planted string, out *string, err *error) {
		cmd := exec.Command("go", "test", "-count=1", "-v", "./"+filepath.ToSlash(dir))
		cmd.Env = append(os.Environ(), "PLANTED="+planted)
		b, e := cmd.CombinedOutput()
		*out, *err = string(b), e
	}
	var bugOut, fixedOut string
	var bugErr, fixedErr error
	var wg sync.WaitGroup
	wg.Go(func() { goTest("", &bugOut, &bugErr) })
	wg.Go(func() { goTest("fixed", &fixedOut, &fixedErr) })
	wg.Wait()
	t.Logf("go test %s, the bugs there: %v\n%s", dir, bugErr, bugOut)
	t.Logf("go test %s, PLANTED=fixed: %v\n%s", dir, fixedErr, fixedOut)
	// The bugs there: each test fails, each saying its bug is still there.
	assert.Error(t, bugErr)
	assert.Equal(t, len(plantedKinds), strings.Count(bugOut, "--- FAIL: TestDuetexplore"), "every regression test fails")
	assert.Equal(t, len(plantedKinds), strings.Count(bugOut, "the bug is still there"), "each on its bug")
	assert.Contains(t, bugOut, "the program crashed again")
	assert.Contains(t, bugOut, "did not end (a hang: no progress for ")
	// Every bug fixed: each passes.
	assert.NoError(t, fixedErr)
	assert.Equal(t, len(plantedKinds), strings.Count(fixedOut, "--- PASS: TestDuetexplore"), "every regression test passes")
}

// -keep-going goes on after a finding, in a fresh child with the next seed
// after a crash: the planted app with two windows, a crash (one click) and
// an exception (A then B), yields both, each confirmed, shrunk, written
// and, with -test, a regression test.
func TestKeepGoingFindsEveryBug(t *testing.T) {
	skipSanitized(t)
	dir := plantedCopy(t)
	out := filepath.Join(t.TempDir(), "found")
	status, stdout := driveWindows(t, "exception,crash", "-seed", "3", "-duration", "6s", "-keep-going", "-exe", plantedExe, "-o", out, "-test="+dir)
	require.Equal(t, exitFound, status)
	assert.Contains(t, stdout, "duetexplore: 2 distinct findings")
	assert.Regexp(t, `finding 1, after [0-9.]+ s \(seed 3\)`, stdout)
	// Which child meets the second bug depends on the seed's choices; that
	// a fresh child took the next seed once one crashed does not.
	assert.Regexp(t, `finding 2, after [0-9.]+ s \(seed [3-9]\)`, stdout)
	assert.Contains(t, stdout, "explore: seed 4: ", "a fresh child, with the next seed, after the first crashed")
	assert.Contains(t, stdout, "crash: SIGSEGV: segmentation violation")
	files, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
	require.Len(t, files, 2)
	shrunk := map[explore.Kind][]string{}
	for _, file := range files {
		rep := readFile(t, file)
		require.Len(t, rep.Findings, 1)
		shrunk[rep.Findings[0].Kind] = words(rep.Trace)
	}
	assert.Equal(t, map[explore.Kind][]string{
		explore.KindCrash:     {"click 'crash' in 'crash'"},
		explore.KindException: {"click 'A' in 'exception'", "click 'B' in 'exception'"},
	}, shrunk)
	tests, _ := filepath.Glob(filepath.Join(dir, "duetexplore_*_test.go"))
	assert.Len(t, tests, 2, "a regression test each")
}

// The streamed trace: the last line of an index is the action, a finding
// line is a finding with the trace up to it, heartbeats and the end line
// are skipped, a line cut short is dropped; read up to a limit, only what
// came before it counts.
func TestReadTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	lines := []string{
		`{"beat":0}`,
		`{"n":0,"action":{"verb":"click","address":"a","label":"A"}}`,
		`{"n":0,"action":{"verb":"click","address":"a","label":"A","value":"done"}}`,
		`{"beat":1}`,
		`{"finding":{"kind":"exception","message":"E","trace":null},"upto":1}`,
		`{"n":1,"action":{"verb":"type","address":"e","label":"E"}}`,
		`{"end":"hang"}`,
	}
	data := strings.Join(lines, "\n") + "\n" + `{"n":2,"action":{"verb":"cl`
	require.NoError(t, os.WriteFile(path, []byte(data), 0o666))
	trace, findings, err := readTrace(path, -1)
	require.NoError(t, err)
	require.Len(t, trace, 2)
	assert.Equal(t, "done", trace[0].Value, "the last line of an index wins")
	require.Len(t, findings, 1)
	assert.Equal(t, explore.KindException, findings[0].Kind)
	require.Len(t, findings[0].Trace, 1)
	assert.Equal(t, "done", findings[0].Trace[0].Value)

	limit := int64(len(strings.Join(lines[:4], "\n")) + 1)
	trace, findings, err = readTrace(path, limit)
	require.NoError(t, err)
	assert.Len(t, trace, 1)
	assert.Empty(t, findings)
}

// Package app's stream, as the driver reads it: the actions, a heartbeat
// a second beside them (from the start: the driver's no-progress clock
// needs one), and the end line last.
func TestTraceBeatsAndEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	cmd := exec.Command(plantedExe)
	cmd.Env = append(os.Environ(), "PLANTED=clean", "GTK_A11Y=none", "DUET_EXPLORE=seed=1,duration=1500ms", "DUET_EXPLORE_TRACE="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.Contains(t, lines, `{"beat":0}`)
	assert.Contains(t, lines, `{"beat":1}`)
	assert.Equal(t, `{"end":"done"}`, lines[len(lines)-1])
	trace, findings, err := readTrace(path, -1)
	require.NoError(t, err)
	assert.NotEmpty(t, trace)
	assert.Empty(t, findings)
}

// A streamed finding line longer than bufio.Scanner's old 16 MiB (a
// message with a large dump in it) is read; one over the limit is an error
// that names the limit, with what came before it kept.
func TestReadTraceLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	big := strings.Repeat("x", 17<<20)
	lines := []string{
		`{"n":0,"action":{"verb":"click","address":"a","label":"A"}}`,
		`{"finding":{"kind":"log","message":"` + big + `","trace":null},"upto":1}`,
		`{"n":1,"action":{"verb":"click","address":"b","label":"B"}}`,
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o666))
	trace, findings, err := readTrace(path, -1)
	require.NoError(t, err)
	assert.Len(t, trace, 2, "the line after the long one is read")
	require.Len(t, findings, 1)
	assert.Len(t, findings[0].Message, len(big))

	old := maxLine
	maxLine = 1 << 20
	t.Cleanup(func() { maxLine = old })
	trace, findings, err = readTrace(path, -1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 2: a line longer than the limit of 1048576 bytes")
	assert.Len(t, trace, 1, "what came before the long line is kept")
	assert.Empty(t, findings)
}

// -replay refuses a file that is not a whole replay file, before it
// builds or runs anything: empty, cut at a line's end (its summary, the
// last line, gone; or its first lines gone, so that the summary's counts
// do not match), a DUET_EXPLORE_TRACE stream, or not JSON.
func TestReplayRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	rep := &explore.Report{Seed: 3, Trace: []explore.Action{
		{Verb: "click", Address: "window 'panic' > GtkBox#0 > GtkButton#4 'A'", Label: "A"},
		{Verb: "click", Address: "window 'panic' > GtkBox#0 > GtkButton#5 'B'", Label: "B"},
	}, Findings: []*explore.Finding{{Kind: explore.KindPanic, Message: "boom", Where: "main.go:1"}}}
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "empty: not a replay file"},
		{"blank", "\n\n", "empty: not a replay file"},
		{"no summary", strings.Join(lines[:3], ""), "cut short: no summary line at its end (2 actions and 1 findings before the cut)"},
		{"no last action", lines[0], "cut short: no summary line"},
		{"no first action", strings.Join(lines[1:], ""), "cut: its summary counts 2 actions and 1 findings, the file has 1 and 1"},
		{"stream", `{"beat":0}` + "\n" + `{"n":0,"action":{"verb":"click","address":"a"}}` + "\n", "a DUET_EXPLORE_TRACE stream, not a replay file"},
		{"not JSON", "click A\n", "line 1: not a JSON object"},
		{"a null action", `{"action":null}` + "\n" + strings.Join(lines[1:], ""), "line 1: an action without its verb and address"},
		{"after the summary", buf.String() + lines[0], "line 5: a line after the summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			require.NoError(t, os.WriteFile(file, []byte(tc.data), 0o666))
			var out, errb bytes.Buffer
			status := run(context.Background(), []string{"-replay", file, "-exe", plantedExe}, &out, &errb)
			assert.Equal(t, exitBadFile, status)
			assert.Contains(t, errb.String(), "duetexplore: -replay: "+file+": "+tc.want)
			assert.Empty(t, out.String(), "nothing was run")
		})
	}
	// The whole file reads.
	file := filepath.Join(dir, "whole.jsonl")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o666))
	got, err := readReplayFile(file)
	require.NoError(t, err)
	assert.Len(t, got.Trace, 2)
	assert.Len(t, got.Findings, 1)
}

// -keep-going keeps apart what Finding.Same would merge: two stalls of two
// actions (stalls have no place: Same takes any two for one), two panics
// on one line with different values; the same stall again is a repeat.
func TestKeepGoingKeepsDistinctFindingsApart(t *testing.T) {
	a := explore.Action{Verb: "click", Address: "window 'stall' > GtkBox#0 > GtkButton#5 'B'", Label: "B"}
	b := explore.Action{Verb: "click", Address: "window 'other' > GtkBox#0 > GtkButton#5 'B'", Label: "B"}
	var all []*met
	add := func(f *explore.Finding) {
		if m := seenBefore(all, f); m != nil {
			m.Repeats++
			return
		}
		all = append(all, &met{f: f})
	}
	add(&explore.Finding{Kind: explore.KindStall, Message: "the action kept the UI thread for 1.00 s (more than 300ms)", Trace: []explore.Action{a}})
	add(&explore.Finding{Kind: explore.KindStall, Message: "the action kept the UI thread for 1.01 s (more than 300ms)", Trace: []explore.Action{b}})
	add(&explore.Finding{Kind: explore.KindStall, Message: "the action kept the UI thread for 1.02 s (more than 300ms)", Trace: []explore.Action{b, a}})
	add(&explore.Finding{Kind: explore.KindPanic, Message: "assignment to entry in nil map", Where: "main.go:9"})
	add(&explore.Finding{Kind: explore.KindPanic, Message: "send on closed channel", Where: "main.go:9"})
	require.Len(t, all, 4)
	assert.Equal(t, 1, all[0].f.Repeats, "the stall of A again is a repeat")
	assert.Equal(t, 0, all[1].f.Repeats)
}

// A TMPDIR with a comma: the replay file's path in DUET_EXPLORE (comma
// separated) is quoted, and the replay replays (unquoted, the program
// refused its options and did not start).
func TestReplayWithACommaInTMPDIR(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "a,b")
	require.NoError(t, os.Mkdir(tmp, 0o777))
	file := filepath.Join(tmp, "clean.jsonl")
	rep := &explore.Report{Trace: []explore.Action{{Verb: "click", Address: "window 'clean' > GtkBox#0 > GtkButton#0 'more 0'", Label: "more 0"}}}
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, rep.WriteJSON(f))
	require.NoError(t, f.Close())
	t.Setenv("TMPDIR", tmp) // the driver's temporary directory, and its replay file, in it
	status, stdout := drive(t, "clean", "-exe", plantedExe, "-replay", file)
	assert.Equal(t, exitClean, status)
	assert.Contains(t, stdout, "replayed 1 of 1 actions")
	assert.Contains(t, stdout, "nothing found")
}

// An explorer that fails (explore.Run's error: here a getter that raises
// while it lists the widgets) is neither a finding nor a clean run: the
// driver says the explorer failed, with the child's error from its stderr,
// and exits 4 (the program exits 1 and says so on its trace's end line,
// where it exited 3, as for a finding, and wrote no report).
func TestExplorerFailure(t *testing.T) {
	for _, keepGoing := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-going=%v", keepGoing), func(t *testing.T) {
			args := []string{"-seed", "1", "-duration", "5s", "-exe", plantedExe}
			if keepGoing {
				args = append(args, "-keep-going")
			}
			status, stdout := drive(t, "raising", args...)
			assert.Equal(t, exitExplorer, status)
			assert.Contains(t, stdout, "duetexplore: the explorer failed (not a finding")
			assert.Contains(t, stdout, "planted: a getter that raises")
			assert.NotContains(t, stdout, "nothing found")
			assert.NotContains(t, stdout, "crash")
		})
	}
	// The program itself: status 1, not 3, and the error on its trace's
	// end line.
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	cmd := exec.Command(plantedExe)
	cmd.Env = append(os.Environ(), "PLANTED=raising", "GTK_A11Y=none", "DUET_EXPLORE=seed=1,duration=3s", "DUET_EXPLORE_TRACE="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode(), "%s", out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.Regexp(t, `^\{"end":"error","error":"explore: listing the widgets: RuntimeError: planted: a getter that raises`, lines[len(lines)-1])
}

// A program that cannot start (it exits at once, before the explorer
// started: its flags refused, here) is no crash to confirm and shrink: the
// driver says the program did not start, with its stderr, and exits 5.
func TestProgramThatDoesNotStart(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fails")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho 'cannot read its config' >&2\nexit 1\n"), 0o777))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a flag refused", []string{"-exe", plantedExe, "--", "-no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{"status 1 at once", []string{"-exe", script}, "cannot read its config"},
		{"keep-going", []string{"-keep-going", "-exe", script}, "cannot read its config"},
		{"replay", []string{"-replay", "testdata/clean-one-click.jsonl", "-exe", script}, "cannot read its config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, stdout := drive(t, "clean", append([]string{"-duration", "3s"}, tc.args...)...)
			assert.Equal(t, exitNoStart, status)
			assert.Contains(t, stdout, "duetexplore: the program did not start: it exited with status ")
			assert.Contains(t, stdout, tc.want)
			assert.NotContains(t, stdout, "confirmed")
			assert.NotContains(t, stdout, "crash")
		})
	}
}
