package main

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		os.Stderr.WriteString("duetexplore's tests need a display (run them under xvfb-run -a)\n")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "duetexplore-test-")
	if err != nil {
		panic(err)
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
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	status = run(ctx, args, &out, &errb)
	t.Logf("duetexplore %s (PLANTED=%s): status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), mode, status, out.String(), errb.String())
	return status, out.String()
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
	assert.Equal(t, "main.go:23", f.Where)
	var words []string
	for _, a := range rep.Trace {
		words = append(words, a.String())
	}
	assert.LessOrEqual(t, len(words), 3, "%q", words)
	require.GreaterOrEqual(t, len(words), 2, "%q", words)
	assert.Equal(t, "click 'A' in 'panic'", words[0])
	assert.Equal(t, "click 'B' in 'panic'", words[len(words)-1])
	assert.Contains(t, stdout, "click 'A' in 'panic', click 'B' in 'panic' → Go panic: assignment to entry in nil map (main.go:23)")

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

	status, stdout := drive(t, "panic", "-seed", "11", "-duration", "10s", "-test", pkg)
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
	assert.Equal(t, "main.go:23", rep.Findings[0].Where)
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
	assert.Contains(t, out, "assignment to entry in nil map main.go:23")
	out, err = goTest("fixed")
	assert.NoError(t, err, "the bug is fixed: the test passes")
	assert.Contains(t, out, "ok  ")
	out, err = goTest("clean")
	assert.Error(t, err, "no A or B: the trace does not replay")
	assert.Contains(t, out, "the UI changed")
	assert.Contains(t, out, "record it again")
}

func TestUsage(t *testing.T) {
	status, _ := drive(t, "clean")
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-gc", "often", "-exe", plantedExe)
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "./testdata/no-such-package")
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-test", "-exe", plantedExe) // no package: no directory
	assert.Equal(t, exitUsage, status)
	status, _ = drive(t, "clean", "-test=./testdata/no-such-dir", "-exe", plantedExe)
	assert.Equal(t, exitUsage, status)
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
}
