// Package examples_test runs every example's scripted session headless, as
// a user would run the program, and checks that it exits 0.
package examples_test

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/examples/internal/shot"
	"github.com/duet-gtk/duet/internal/testutil"
)

var (
	binDir  string
	buildMu sync.Mutex
	built   = map[string]string{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "duet-examples")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles an example once per test run.
func build(t *testing.T, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	p := filepath.Join(binDir, name)
	out, err := exec.Command("go", "build", "-o", p, "./"+name).CombinedOutput()
	require.NoError(t, err, "%s", out)
	built[name] = p
	return p
}

// run runs an example (under xvfb-run when there is no display).
func run(t *testing.T, name string, args ...string) (string, string) {
	t.Helper()
	return runEnv(t, name, nil, args...)
}

// runEnv is run with more environment.
func runEnv(t *testing.T, name string, env []string, args ...string) (string, string) {
	t.Helper()
	bin := build(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmdArgs := append([]string{bin}, args...)
	if os.Getenv("DISPLAY") == "" {
		cmdArgs = append([]string{"xvfb-run", "-a", "-s", "-screen 0 1280x800x24"}, cmdArgs...)
	}
	cmd := testutil.Command(ctx, cmdArgs[0], cmdArgs[1:]...)
	// A GLib or GTK critical fails the example's run (as in PyGObject's
	// own test suite).
	cmd.Env = append(append(os.Environ(), "GTK_A11Y=none", "G_DEBUG=fatal-criticals"), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s hung", name)
	require.NoError(t, err, "%s %v\nstdout:\n%s\nstderr:\n%s", name, args, out.String(), errb.String())
	return out.String(), errb.String()
}

func TestHello(t *testing.T) {
	_, errOut := run(t, "hello", "-script")
	assert.Empty(t, errOut)
}

// The gallery (every PyGObject API that takes a callable, with Go funcs)
// and its PyGObject twin both run every section.
func TestGallery(t *testing.T) {
	out, errOut := run(t, "gallery", "-script", "-file", "gallery/gallery.py")
	assert.Contains(t, out, "all 9 sections ran: action binding draw file filter+sort idle list tick timeout")
	assert.Empty(t, errOut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"/usr/bin/python3", "gallery/gallery.py"}
	if os.Getenv("DISPLAY") == "" {
		args = append([]string{"xvfb-run", "-a"}, args...)
	}
	cmd := testutil.Command(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none", "G_DEBUG=fatal-criticals")
	py, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", py)
	assert.Equal(t, "all 9 sections ran: action binding draw file filter+sort idle list tick timeout\n", string(py))
}

// The explorer, switched on with DUET_EXPLORE, reports nothing on any
// example in a short run (run exits 0 only then; make explore runs each
// for minutes). hello has nothing to act on but its window; the gallery
// has its list, its action and its drawing area; the builder's Close
// button ends its run at once.
//
// The showcase ignores one GTK 4.8 warning, as make explore does (the
// Makefile's GTK48_TROUGH says why): GTK now and then snapshots the trough
// of its log's scrollbar before allocating it while the log grows, which
// no code of the program's touches.
func TestExploreExamples(t *testing.T) {
	const gtk48Trough = `ignore-log="^Gtk-WARNING: Trying to snapshot GtkGizmo 0x[0-9a-f]+ without a current allocation$"`
	for _, tc := range []struct {
		name   string
		args   []string
		ignore string
	}{
		{"hello", nil, ""},
		{"awaker", nil, ""},
		{"gallery", []string{"-file", "gallery/gallery.py"}, ""},
		{"goroutines", nil, ""},
		{"quotes", nil, ""},
		{"showcase", nil, gtk48Trough},
		{"builder", nil, ""},
		{"subclass", nil, ""},
		{"typed", nil, ""},
		{"weak", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := "seed=1,duration=3s,gc=20ms"
			if tc.ignore != "" {
				opts += "," + tc.ignore
			}
			_, errOut := runEnv(t, tc.name, []string{"DUET_EXPLORE=" + opts, "DUET_SCREENSHOT="}, tc.args...)
			assert.Contains(t, errOut, "explore: seed 1: ")
			assert.Contains(t, errOut, "nothing found")
			t.Log(strings.TrimSpace(errOut))
		})
	}
}

func TestGoroutines(t *testing.T) {
	out, errOut := run(t, "goroutines", "-script")
	assert.Contains(t, out, "cancelled after")
	assert.Empty(t, errOut)
}

// TestAwakerManyRuns is the seed's crash hunt: 20 runs in a row, each
// clicking the toggle 200 times while both garbage collectors are forced
// every 5 ms; the callback Go dropped must survive all of it.
func TestAwakerManyRuns(t *testing.T) {
	for i := range 20 {
		out, errOut := run(t, "awaker", "-script", "-clicks", "200", "-click-interval", "1ms", "-gc-interval", "5ms")
		require.Contains(t, out, "clicked 200 times", "run %d", i+1)
		require.Empty(t, errOut, "run %d", i+1)
	}
}

func TestAwakerScreenshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "awaker.png")
	out, _ := run(t, "awaker", "-screenshot", path)
	assert.Contains(t, out, "screenshot: "+path)
	checkScreenshot(t, path, "awaker.png")
}

// checkScreenshot asserts that the picture shows something and keeps a copy
// where a person can look at it (DUET_SCREENSHOTS, set by make test).
func checkScreenshot(t *testing.T, path, keepAs string) {
	t.Helper()
	blank, err := shot.Blank(path)
	require.NoError(t, err)
	assert.False(t, blank, "the screenshot shows the window")
	if dir := os.Getenv("DUET_SCREENSHOTS"); dir != "" {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, keepAs), data, 0o644))
	}
}

func TestShowcaseScriptedWithScreenshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "showcase.png")
	out, errOut := run(t, "showcase", "-script", "-screenshot", path)
	assert.Contains(t, out, "screenshot: "+path)
	assert.Empty(t, errOut)
	checkScreenshot(t, path, "showcase-test.png")
}

// Quotes: asyncio in a Python widget, awaiting a Go func, awaited by Go.
func TestQuotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quotes.png")
	out, errOut := run(t, "quotes", "-script", "-screenshot", path)
	assert.Contains(t, out, "Errors are values.  (score 3)")
	assert.Contains(t, out, "fetched 5 quotes")
	assert.Contains(t, out, "the button fetched 5 quotes")
	assert.Empty(t, errOut)
	checkScreenshot(t, path, "quotes.png")
}

// Quotes is reloadable: with DUET_RELOAD=1 it watches feed.py where it is
// in the tree (next to the main.go that embeds it), and says so; off, it
// says nothing (TestQuotes).
func TestQuotesReloadable(t *testing.T) {
	out, errOut := runEnv(t, "quotes", []string{"DUET_RELOAD=1"}, "-script")
	assert.Contains(t, out, "fetched 5 quotes")
	assert.Regexp(t, `^duet reload: watching /\S+/quotes/feed.py\n$`, errOut)
}

// Builder: a .ui file whose handlers are Go funcs, one given another
// widget of the file as its argument.
func TestBuilder(t *testing.T) {
	out, errOut := run(t, "builder", "-script")
	assert.Equal(t, "Hello, Go!\nclosed by on_close_clicked\n", out)
	assert.Empty(t, errOut)
}

// Builder is reloadable: with DUET_RELOAD=1 it watches builder.ui where it
// is in the tree (next to the main.go that embeds it).
func TestBuilderReloadable(t *testing.T) {
	out, errOut := runEnv(t, "builder", []string{"DUET_RELOAD=1"}, "-script")
	assert.Equal(t, "Hello, Go!\nclosed by on_close_clicked\n", out)
	assert.Regexp(t, `^duet reload: watching /\S+/builder/builder.ui\n$`, errOut)
}

// Subclass: GTK runs a virtual function written in Go.
func TestSubclass(t *testing.T) {
	out, errOut := run(t, "subclass", "-script")
	assert.Equal(t, "count 3, label \"clicked 3 times\"\n", out)
	assert.Empty(t, errOut)
}

// Typed: the generated wrapper in use, its signal included.
func TestTyped(t *testing.T) {
	out, errOut := run(t, "typed", "-script")
	assert.Equal(t, "changed to 10\nchanged to 11\nbumped to 10, then to 11\n", out)
	assert.Empty(t, errOut)
}

// The typed example's wrapper is what duetgen writes for counter.py now:
// after an edit of the class, go generate ./examples/typed.
func TestTypedWrapperIsFresh(t *testing.T) {
	out := filepath.Join(t.TempDir(), "counter_gen.go")
	cmd := exec.Command("go", "run", "../../cmd/duetgen", "-file", "counter.py", "-class", "Counter", "-package", "main", "-out", out)
	cmd.Dir = "typed" // as go generate runs it: the file names counter.py as given
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	have, err := os.ReadFile("typed/counter_gen.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(have), "typed/counter_gen.go is stale: run go generate ./examples/typed")
}

// Weak: the action's handler lets the window's label go, and is skipped
// once it has.
func TestWeak(t *testing.T) {
	out, errOut := run(t, "weak", "-script")
	assert.Equal(t, "bumped 2 times\nthe window's label is finalised\nbumped again: still 2 bumps, the handler was skipped\n", out)
	assert.Contains(t, errOut, "DEBUG duet: weak capture gone, handler skipped type=GtkLabel")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "nothing else on stderr: %s", errOut)
}

// The README's reload pictures (examples/internal/reloadshot, make
// reload-shots): a Python widget's do_snapshot saved with another colour
// (reloadshot checks the bar's colour in each picture), then a .ui file
// reloaded in the running app, broken (the banner shows, red over the top
// of the window) and then fixed (no banner).
func TestReloadScreenshots(t *testing.T) {
	dir := t.TempDir()
	out, errOut := run(t, "internal/reloadshot", "-out", dir)
	names := []string{"reload-before.png", "reload-python.png", "reload-broken.png", "reload-after.png"}
	for _, name := range names {
		assert.Contains(t, out, "screenshot: "+filepath.Join(dir, name))
		checkScreenshot(t, filepath.Join(dir, name), name)
	}
	assert.Contains(t, errOut, "duet reload: swatch.py: applied (1 method)\n")
	assert.Contains(t, errOut, "duet reload: form.ui: kept the old code: the interface names handlers with no Go func: on_wave; Go funcs the interface never names: on_greet\n")
	assert.Contains(t, errOut, "duet reload: form.ui: applied (1 object rebuilt)\n")
	for name, banner := range map[string]bool{"reload-before.png": false, "reload-python.png": false, "reload-broken.png": true, "reload-after.png": false} {
		assert.Equal(t, banner, reddish(t, filepath.Join(dir, name), 2, 2), "%s: the banner's colour at its top left", name)
	}
	// The README shows the committed copies (make reload-shots writes
	// them there): each is in the tree, and small.
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	for _, name := range names {
		rel := "docs/reload/" + name
		assert.Contains(t, string(readme), "("+rel+")", "the README shows %s", rel)
		st, err := os.Stat(filepath.Join("..", rel))
		if assert.NoError(t, err, "make reload-shots writes %s", rel) {
			assert.Less(t, st.Size(), int64(60<<10), "%s stays small", rel)
		}
	}
}

// reddish says whether the pixel at x, y of the PNG is the banner's red.
func reddish(t *testing.T, path string, x, y int) bool {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	r, g, b, _ := img.At(x, y).RGBA()
	return r > 2*g && r > 2*b
}
