package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/duet-gtk/duet/explore"
)

// testFlag is -test: bare, the regression test goes into the explored
// package's directory; -test=DIR puts it into DIR.
type testFlag struct {
	set bool
	dir string
}

func (f *testFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return f.dir
}

func (f *testFlag) Set(v string) error {
	f.set = true
	switch v {
	case "true":
		f.dir = ""
	case "false":
		f.set, f.dir = false, ""
	default:
		f.dir = v
	}
	return nil
}

func (f *testFlag) IsBoolFlag() bool { return true }

// testDir is where -test writes: DIR, or the directory of the package
// pkg names (go list).
func testDir(ctx context.Context, f *testFlag, pkg string) (string, error) {
	if f.dir != "" {
		return filepath.Abs(f.dir)
	}
	if pkg == "" {
		return "", errors.New("-test with -exe needs a directory: -test=DIR")
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("go list %s: %w", pkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// packageName reads the package clause of dir's Go files (not its tests).
func packageName(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		return f.Name.Name, nil
	}
	return "", fmt.Errorf("%s: no Go files", dir)
}

// writeTest writes the shrunk trace into DIR/testdata and a Go test in
// DIR that replays it and fails while its finding comes back.
func (d *driver) writeTest(dir string, f *explore.Finding, trace []explore.Action, seed uint64) (string, error) {
	pkg, err := packageName(dir)
	if err != nil {
		return "", err
	}
	var jsonl bytes.Buffer
	rep := &explore.Report{Seed: seed, Trace: trace, Findings: []*explore.Finding{f}}
	if err := rep.WriteJSON(&jsonl); err != nil {
		return "", err
	}
	sum := sha256.Sum256(jsonl.Bytes())
	hash := hex.EncodeToString(sum[:4])
	base := "duetexplore-" + string(f.Kind) + "-" + hash + ".jsonl"
	limit := replayLimit(trace)
	var words []string
	for _, a := range trace {
		words = append(words, oneLine(a.String()))
	}
	kind := []rune(string(f.Kind))
	kind[0] = unicode.ToUpper(kind[0])
	data := map[string]any{
		"Package": pkg,
		"Func":    "TestDuetexplore" + string(kind) + hash,
		"File":    base,
		"Finding": oneLine(f.String()),
		"Words":   words,
		"Seed":    seed,
		"Kind":    strconv.Quote(string(f.Kind)),
		"Where":   strconv.Quote(f.Where),
		"Message": strconv.Quote(f.Message),
		// strict: each recorded address as it is, no fallback to its
		// structural key, which after a change of the UI may name another
		// widget: the replay would act elsewhere and the test pass with
		// the bug still there.
		"Options":  strconv.Quote(fmt.Sprintf("duration=%s,strict,%s", limit, d.options())),
		"Recorded": goStrings(words),
		"Timeout":  int((limit + d.hang + d.grace + 2*time.Minute).Round(time.Minute).Minutes()),
		"Late":     int64(limit + d.hang + d.grace),
		"Stuck":    int64(d.hang + progressMargin),
		"Actions":  len(trace),
		"Args":     goStrings(d.appArgs),
	}
	var src bytes.Buffer
	if err := regressionTest.Execute(&src, data); err != nil {
		return "", err
	}
	code, err := format.Source(src.Bytes())
	if err != nil {
		return "", fmt.Errorf("formatting the test: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o777); err != nil {
		return "", err
	}
	traceFile := filepath.Join(dir, "testdata", base)
	testFile := filepath.Join(dir, "duetexplore_"+string(f.Kind)+"_"+hash+"_test.go")
	if err := os.WriteFile(traceFile, jsonl.Bytes(), 0o666); err != nil {
		return "", err
	}
	if err := os.WriteFile(testFile, code, 0o666); err != nil {
		return "", err
	}
	fmt.Fprintf(d.out, "duetexplore: regression test written: %s\n", testFile)
	fmt.Fprintf(d.out, "duetexplore: its trace: %s\n", traceFile)
	return testFile, nil
}

var regressionTest = template.Must(template.New("test").Parse(`package {{.Package}}

// This test was written by duetexplore (github.com/duet-gtk/duet/cmd/duetexplore).
// It replays testdata/{{.File}}, the {{.Actions}} actions an exploration
// (seed {{.Seed}}) shrank its finding to:
//
{{- range .Words}}
//   - {{.}}
{{- end}}
//
// which led to
//
//	{{.Finding}}
//
// It builds the package, runs it with DUET_EXPLORE=replay=FILE (under
// xvfb-run -a when there is no display) and fails while the same kind of
// trouble at the same place comes back; it passes once the replay runs
// clean. When the UI changes so that a recorded widget is no longer
// found at its recorded address (the replay is strict: it does not take
// another widget in its place), it fails too: record the trace again with
//
//	go run github.com/duet-gtk/duet/cmd/duetexplore -seed {{.Seed}} -test ./path/to/this/package
//
// and delete this file and its trace.

import (
	"bufio"
	"context"
	"encoding/json"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func {{.Func}}(t *testing.T) {
	const (
		trace       = {{printf "%q" .File}}
		wantKind    = {{.Kind}}
		wantWhere   = {{.Where}}
		wantMessage = {{.Message}}
		options     = {{.Options}}
	)
	recorded := {{.Recorded}} // the actions in words
	file, err := filepath.Abs(filepath.Join("testdata", trace))
	if err != nil {
		t.Fatal(err)
	}
	var wrap []string
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		xvfb, err := exec.LookPath("xvfb-run")
		if err != nil {
			t.Skip("no DISPLAY or WAYLAND_DISPLAY, and no xvfb-run to make one")
		}
		wrap = []string{xvfb, "-a", "-s", "-screen 0 1280x800x24"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), {{.Timeout}}*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	exe := filepath.Join(tmp, "app")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out := filepath.Join(tmp, "replay.jsonl")
	errPath := filepath.Join(tmp, "stderr")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append(append(wrap, exe), {{.Args}}...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "DUET_EXPLORE"):
			continue
		case k == "G_DEBUG":
			var keep []string
			for _, f := range strings.Split(v, ",") {
				if f != "fatal-criticals" && f != "fatal-warnings" && f != "" {
					keep = append(keep, f)
				}
			}
			kv = "G_DEBUG=" + strings.Join(keep, ",")
		}
		env = append(env, kv)
	}
	if os.Getenv("GTK_A11Y") == "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		env = append(env, "GTK_A11Y=none")
	}
	trail := filepath.Join(tmp, "trace.jsonl")
	// The options are comma separated: a path with a comma is quoted.
	replay := file
	if strings.ContainsAny(file, ` + "`" + `,"` + "`" + `) || strings.TrimSpace(file) != file {
		replay = strconv.Quote(file)
	}
	cmd.Env = append(env, "DUET_ALLOW_CRITICALS=1", "DUET_EXPLORE=replay="+replay+","+options, "DUET_EXPLORE_OUT="+out, "DUET_EXPLORE_TRACE="+trail)
	cmd.Stdout, cmd.Stderr = errFile, errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = kill
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("running the program: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The program is killed when it will not end by itself: the explorer
	// reported a hang ({"end":"hang"} on DUET_EXPLORE_TRACE), the program
	// makes no progress (neither an action nor its heartbeat, package
	// app's, once a second, for longer than the explorer waits for the
	// UI thread, and a margin: the process is stopped, or its Go runtime
	// stuck), or it still runs long after its replay's time.
	const late, stuck = time.Duration({{.Late}}), time.Duration({{.Stuck}})
	lateTimer := time.NewTimer(late)
	defer lateTimer.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var runErr error
	killed := ""
	size, grew := int64(-1), time.Time{}
wait:
	for {
		select {
		case runErr = <-exited:
			break wait
		case <-lateTimer.C:
			killed = "it was still running " + late.String() + " after it started"
		case <-tick.C:
			st, err := os.Stat(trail)
			if err != nil {
				continue // not yet
			}
			if st.Size() != size {
				size, grew = st.Size(), time.Now()
			}
			stream, _ := os.ReadFile(trail)
			switch {
			case bytes.Contains(stream, []byte(` + "`" + `{"end":"hang"}` + "`" + `)):
				killed = "the explorer reported a hang"
			case bytes.Contains(stream, []byte(` + "`" + `{"beat":` + "`" + `)) && !bytes.Contains(stream, []byte(` + "`" + `{"end":"done"}` + "`" + `)) && time.Since(grew) > stuck:
				killed = "no progress for " + time.Since(grew).Round(time.Second).String()
			default:
				continue
			}
		}
		kill()
		runErr = <-exited
		break
	}
	if killed == "" && ctx.Err() != nil {
		killed = "the test's time ran out"
	}
	errFile.Close()
	stderr, _ := os.ReadFile(errPath)
	// The explorer's own failure (a getter that raises while it lists the
	// widgets, say) ends the program with status 1 and this end line: not
	// the recorded crash coming back.
	stream, _ := os.ReadFile(trail)
	explorerFailed := bytes.Contains(stream, []byte(` + "`" + `{"end":"error"` + "`" + `))
	status := 0
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		status = ee.ExitCode()
	} else if runErr != nil && killed == "" {
		t.Fatalf("running the program: %v", runErr)
	}

	type finding struct {
		Kind, Message, Where, Detail string
	}
	var found []finding
	type summaryLine struct {
		Replayed    int    ` + "`json:\"replayed\"`" + `
		Recorded    int    ` + "`json:\"recorded\"`" + `
		ReplayError string ` + "`json:\"replay_error\"`" + `
	}
	var summary *summaryLine
	if f, err := os.Open(out); err == nil {
		// Lines of any length: a finding's line holds its whole detail.
		br := bufio.NewReader(f)
		for {
			raw, err := br.ReadBytes('\n')
			if len(raw) == 0 && err != nil {
				break
			}
			var line struct {
				Finding *finding
				Summary *summaryLine
			}
			if json.Unmarshal(raw, &line) != nil {
				continue
			}
			if line.Finding != nil {
				found = append(found, *line.Finding)
			}
			if line.Summary != nil {
				summary = line.Summary
			}
		}
		f.Close()
	}
	// As explore.Finding.Same: addresses in a message do not count, nor a
	// leak's counts (what leaked does).
	addresses := regexp.MustCompile("0x[0-9a-fA-F]{4,}")
	stable := func(msg string) string {
		msg = addresses.ReplaceAllString(msg, "0x…")
		if wantKind == "leak" {
			msg, _, _ = strings.Cut(msg, " grew at each of ")
		}
		return msg
	}
	same := func(f finding) bool {
		if f.Kind != wantKind || f.Where != wantWhere {
			return false
		}
		if f.Kind == "leak" {
			return stable(f.Message) == stable(wantMessage)
		}
		return f.Where != "" || f.Kind == "stall" || f.Kind == "hang" || stable(f.Message) == stable(wantMessage)
	}
	var again *finding
	for i := range found {
		if same(found[i]) {
			again = &found[i]
			break
		}
	}
	switch {
	case again != nil:
		t.Fatalf("the bug is still there: the replay of %s met it again: %s: %s %s\n%s", trace, again.Kind, again.Message, again.Where, again.Detail)
	case len(found) > 0:
		t.Fatalf("the replay of %s met other trouble than the recorded %s (%s): %s: %s %s\n%s", trace, wantKind, wantMessage, found[0].Kind, found[0].Message, found[0].Where, found[0].Detail)
	case (killed != "" || ctx.Err() != nil) && wantKind == "hang":
		t.Fatalf("the bug is still there: the replay of %s did not end (a hang: %s)\n%s", trace, killed, stderr)
	case killed != "" || ctx.Err() != nil:
		t.Fatalf("the replay of %s did not end (%s)\n%s", trace, killed, stderr)
	case explorerFailed:
		t.Fatalf("the explorer failed replaying %s (exit status %d): not the recorded %s\n%s", trace, status, wantKind, stderr)
	case status != 0 && status != 3 && wantKind == "crash":
		t.Fatalf("the bug is still there: the program crashed again replaying %s (exit status %d; recorded: %s)\n%s", trace, status, wantMessage, stderr)
	case status != 0:
		t.Fatalf("the program ended with status %d replaying %s\n%s", status, trace, stderr)
	case summary == nil:
		t.Fatalf("the program wrote no report (does it run app.Main or App.Run?)\n%s", stderr)
	case summary.ReplayError != "":
		what := ""
		if summary.Replayed < len(recorded) {
			what = " (" + recorded[summary.Replayed] + ")"
		}
		t.Fatalf("the UI changed: recorded action %d%s not found (%s): the trace %s no longer replays after %d of %d actions; record it again (see this file's header)", summary.Replayed+1, what, summary.ReplayError, trace, summary.Replayed, summary.Recorded)
	}
	t.Logf("replayed %d actions from %s: the recorded %s did not come back", summary.Replayed, trace, wantKind)
}
`))

// goStrings is ss as a Go []string literal.
func goStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// oneLine makes s fit a line comment.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}
