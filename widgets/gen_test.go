package widgets_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// The generated wrappers, and how they are made (go generate runs the same).
//
//go:generate go run ../cmd/duetgen -file testdata/greeter.py -class Greeter -package widgets_test -out greeter_gen_test.go
var generated = []struct {
	out  string
	args []string
}{
	{"linechart_gen.go", []string{"-file", "py/duet_widgets.py", "-class", "LineChart", "-package", "widgets", "-no-struct", "-no-constructor", "-skip", "push"}},
	{"logview_gen.go", []string{"-file", "py/duet_widgets.py", "-class", "LogView", "-package", "widgets", "-no-struct", "-no-constructor", "-skip", "append"}},
	{"greeter_gen_test.go", []string{"-file", "testdata/greeter.py", "-class", "Greeter", "-package", "widgets_test"}},
}

// Regenerates every wrapper and fails on any difference: a Python class
// changed and its Go wrapper was not regenerated (run go generate ./widgets).
func TestGeneratedWrappersAreFresh(t *testing.T) {
	dir := t.TempDir()
	for _, g := range generated {
		t.Run(g.out, func(t *testing.T) {
			out := filepath.Join(dir, g.out)
			cmd := exec.Command("go", append([]string{"run", "../cmd/duetgen", "-out", out}, g.args...)...)
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", msg)
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			have, err := os.ReadFile(g.out)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(have), "%s is stale: run go generate ./widgets", g.out)
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

		chart, err := widgets.NewLineChart("t", "u", 5)
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
