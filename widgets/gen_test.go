package widgets_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// The generated wrappers, and how they are made (go generate runs the same).
//
//go:generate go run ../cmd/duetgen -file testdata/greeter.py -class Greeter -package widgets_test -out greeter_gen_test.go
var generated = []struct {
	dir, out string // out in dir, where go generate runs duetgen
	args     []string
}{
	{"kit", "linechart_gen.go", []string{"-file", "duet_widgets.py", "-class", "LineChart", "-package", "kit", "-no-struct", "-no-constructor", "-skip", "push"}},
	{"kit", "logview_gen.go", []string{"-file", "duet_widgets.py", "-class", "LogView", "-package", "kit", "-no-struct", "-no-constructor", "-skip", "append"}},
	{".", "greeter_gen_test.go", []string{"-file", "testdata/greeter.py", "-class", "Greeter", "-package", "widgets_test"}},
}

// Regenerates every wrapper and fails on any difference: a Python class
// changed and its Go wrapper was not regenerated (run go generate ./widgets).
func TestGeneratedWrappersAreFresh(t *testing.T) {
	dir := t.TempDir()
	for _, g := range generated {
		t.Run(g.out, func(t *testing.T) {
			out := filepath.Join(dir, g.out)
			duetgen, err := filepath.Abs(filepath.Join("..", "cmd", "duetgen"))
			require.NoError(t, err)
			cmd := exec.Command("go", append([]string{"run", duetgen, "-out", out}, g.args...)...)
			cmd.Dir = g.dir
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", msg)
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			have, err := os.ReadFile(filepath.Join(g.dir, g.out))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(have), "%s is stale: run go generate ./widgets/...", g.out)
		})
	}
}

// The typed wrapper in use: properties, a signal with its typed emitter
// and argument, and a method, all checked by the compiler.
func TestTypedWrapper(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	looptest.Do(t, func(t testing.TB) {
		m, err := widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
		g, err := NewGreeter(m, pygi.Kw{"name": "typed"})
		require.NoError(t, err)
		var heard []string
		_, err = g.ConnectGreeted(func(self *Greeter, text string) {
			name, _ := self.Name()
			heard = append(heard, name+": "+text)
		})
		require.NoError(t, err)
		require.NoError(t, g.SetName("Go"))
		text, err := g.Greet()
		require.NoError(t, err)
		assert.Equal(t, "Hello, Go!", text)
		assert.Equal(t, []string{"Go: Hello, Go!"}, heard)
		n, err := g.Scale(3)
		require.NoError(t, err)
		assert.Equal(t, 6, n)

		chart, err := kit.NewLineChart("t", "u", 5)
		require.NoError(t, err)
		require.NoError(t, chart.PushMany(map[string][]float64{"a": {1, 2}}))
		pts, err := chart.Points("a")
		require.NoError(t, err)
		assert.Equal(t, []float64{1, 2}, pts)
		title, err := chart.Title()
		require.NoError(t, err)
		assert.Equal(t, "t", title)
	})
}

// editGreeter is testdata/greeter.py with edits (old, new, old, new, ...)
// made to it since its wrapper was generated.
func editGreeter(edits ...string) (string, error) {
	src, err := testdata.ReadFile("testdata/greeter.py")
	if err != nil {
		return "", err
	}
	text := string(src)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			return "", fmt.Errorf("greeter.py has no %q", edits[i])
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	return text, nil
}

func greeterSource(t testing.TB, edits ...string) string {
	src, err := editGreeter(edits...)
	require.NoError(t, err)
	return src
}

func init() {
	// The generated wrapper meets its class edited: the parameter of
	// scale is a str now.
	children["stale-wrapper"] = func() error {
		src, err := editGreeter("factor: int", "factor: str")
		if err != nil {
			return err
		}
		m, err := widgets.LoadSource("greeter", src)
		if err != nil {
			return err
		}
		g, err := NewGreeter(m, nil)
		if err != nil {
			fmt.Println("NewGreeter:", err)
			return nil
		}
		n, err := g.Scale(2)
		return fmt.Errorf("the edited class was not noticed: Scale(2) = %d, %v", n, err)
	}
}

// A wrapper whose Python class was edited after generation says so, naming
// the member, instead of calling what it no longer describes.
func TestStaleWrapperIsAnError(t *testing.T) {
	out, errOut, err := testutil.RunChild(t, "WIDGETS_CHILD=stale-wrapper")
	require.Equal(t, 0, testutil.ExitCode(t, err), "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "NewGreeter: widgets: the Python class has changed since its Go wrapper was generated: "+
		"Greeter (from testdata/greeter.py): method scale changed: it was scale(factor: int) -> int, "+
		"it is scale(factor: str) -> int; run go generate again")
}

// The check itself, on classes edited in odd ways (each with a Generated
// of its own: a Go type is checked once).
func TestGeneratedCheck(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const (
		scaleDef = "    def scale(self, factor: int) -> int:"
		signal   = `None, (str,)`
		prop     = `name = GObject.Property(type=str, default="world")`
	)
	for i, c := range []struct {
		name  string
		edits []string
		want  string // "" for a class that still matches
	}{
		{"unchanged", nil, ""},
		{"hint", []string{"factor: int", "factor: float"}, "method scale changed: it was scale(factor: int) -> int, it is scale(factor: float) -> int"},
		{"return", []string{"-> int:", "-> str:"}, "it is scale(factor: int) -> str"},
		{"removed", []string{"def scale(", "def scaled("}, "method scale is gone (it was scale(factor: int) -> int)"},
		{"static", []string{scaleDef, "    @staticmethod\n    def scale(factor: int) -> int:"}, "method scale is gone"},
		{"not a function", []string{scaleDef, "    scale = len\n    def _old(self, factor: int) -> int:"}, "method scale is gone"},
		{"bad hint", []string{"factor: int", "factor: 'NoSuchType'"}, "it is scale(factor: any) -> any"},
		{"keyword-only", []string{"self, factor", "self, *, factor"}, "it is scale(*, factor: int) -> int"},
		{"another parameter", []string{"factor: int)", "factor: int, by: int)"}, "it is scale(factor: int, by: int) -> int"},
		{"async", []string{"    def scale(", "    async def scale("}, "it is scale(factor: int) -> int, async"},
		{"generator", []string{"return factor * 2", "yield factor * 2"}, "it is scale(factor: int) -> int, generator"},
		{"variadic", []string{"factor: int)", "*factor: int)"}, "it is scale(*factor: int) -> int"},
		{"property type", []string{prop, `name = GObject.Property(type=int, default=0)`}, "property name changed: it was name: gchararray, settable, it is name: gint, settable"},
		{"read-only", []string{prop, `name = GObject.Property(type=str, default="world", flags=GObject.ParamFlags.READABLE)`}, "it is name: gchararray"},
		{"signal", []string{signal, `bool, (str,)`}, "signal greeted changed: it was greeted(gchararray) -> void, it is greeted(gchararray) -> gboolean"},
		{"two at once", []string{signal, `bool, (str,)`, "factor: int", "factor: str"}, "it is greeted(gchararray) -> gboolean; method scale changed"},
		{"added", []string{scaleDef, "    def extra(self, x: str) -> str:\n        return x\n\n" + scaleDef}, ""},
		{"renamed", []string{"class Greeter(", "class Welcomer(", "\nclass Broken", "\nGreeter = Welcomer\n\nclass Broken"}, ""},
		{"subclassed under its own name", []string{"\nclass Broken", "\n_Greeter = Greeter\nclass Greeter(_Greeter):\n    def greet(self) -> str:\n        return _Greeter.greet(self)\n\nclass Broken"}, ""},
		{"renamed and subclassed", []string{"class Greeter(", "class Welcomer(", "\nclass Broken", "\nclass Greeter(Welcomer):\n    pass\n\nclass Broken"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			looptest.Do(t, func(t testing.TB) {
				m, err := widgets.LoadSource(fmt.Sprintf("greeter_edit%d", i), greeterSource(t, c.edits...))
				require.NoError(t, err)
				w, err := m.New("Greeter", nil)
				require.NoError(t, err)
				g := &widgets.Generated{Class: "Greeter", File: "testdata/greeter.py", Members: greeterGenerated.Members}
				err = g.Check(w)
				if c.want == "" {
					assert.NoError(t, err)
					assert.NoError(t, g.Check(w))
					return
				}
				assert.ErrorIs(t, err, widgets.ErrStaleWrapper)
				assert.ErrorContains(t, err, c.want)
				assert.ErrorContains(t, err, "run go generate again")
				assert.Equal(t, err, g.Check(w), "every call says so")
			})
		})
	}
	looptest.Do(t, func(t testing.TB) {
		g := &widgets.Generated{Class: "Greeter", Members: greeterGenerated.Members}
		assert.ErrorIs(t, g.Check(nil), pygi.ErrNilObject)
		assert.ErrorIs(t, g.Check(widgets.Wrap(nil)), pygi.ErrNilObject)
		// Not a GObject at all: every member is gone.
		err := g.Check(widgets.Wrap(pygi.None()))
		assert.ErrorIs(t, err, widgets.ErrStaleWrapper)
		assert.ErrorContains(t, err, "property name is gone")
	})
	var nerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		g := &widgets.Generated{Class: "Greeter", Members: greeterGenerated.Members}
		nerr = g.Check(nil)
	}()
	<-done
	assert.True(t, errors.Is(nerr, eventloop.ErrNotMain), "off the UI thread: %v", nerr)
}

// A typed nil wrapper is an error in every generated method, not a panic.
func TestTypedWrapperNilIsAnError(t *testing.T) {
	var g *Greeter
	looptest.Do(t, func(t testing.TB) {
		_, err := g.Name()
		assert.ErrorIs(t, err, pygi.ErrNilObject)
		_, err = g.Greet()
		assert.ErrorIs(t, err, pygi.ErrNilObject)
		assert.ErrorIs(t, (&Greeter{}).SetName("x"), pygi.ErrNilObject)
	})
}
