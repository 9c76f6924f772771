package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// faulthandler (pytest and many apps enable it) and Go's own fault
// handling, in one process: a nil dereference in a Go callback stays a Go
// panic that Python sees as GoPanic, and a native crash writes Python's
// tracebacks to faulthandler's file.
func init() {
	scenarios["fault-go-panic"] = func() error {
		if os.Getenv("PYTHONFAULTHANDLER") == "" {
			if err := pygi.Exec("import faulthandler\nfaulthandler.enable()\n", nil); err != nil {
				return err
			}
		}
		return goPanics()
	}
	scenarios["fault-native"] = func() error {
		path := os.Getenv("FAULT_FILE")
		code := "import faulthandler, ctypes\n"
		if path != "" {
			code += fmt.Sprintf("f = open(%q, 'w')\nfaulthandler.enable(file=f)\n", path)
		}
		code += "def crash_here():\n    ctypes.string_at(0)\ncrash_here()\n"
		return pygi.Exec(code, nil)
	}
	scenarios["fault-disabled"] = func() error {
		if err := pygi.Exec("import faulthandler\nfaulthandler.enable()\nfaulthandler.disable()\n", nil); err != nil {
			return err
		}
		return goPanics()
	}
}

// goPanics: Go callbacks that dereference nil, called from Python, are
// GoPanic exceptions there, every time.
func goPanics() error {
	var nilMap map[string]int
	var nilPtr *int
	cb, err := callbacks.New(func(n int) int {
		if n == 0 {
			return *nilPtr // SIGSEGV in Go code
		}
		nilMap["x"] = n
		return 0
	}, callbacks.Name("derefs_nil"))
	if err != nil {
		return err
	}
	g, err := pygi.NewGlobals()
	if err != nil {
		return err
	}
	if err := g.SetItem("cb", cb); err != nil {
		return err
	}
	for _, n := range []int{0, 1, 0} {
		r, err := pygi.Eval(fmt.Sprintf(`(lambda: [cb(%d)])()`, n), g)
		var pe *pygi.Error
		if !errors.As(err, &pe) || !pe.Matches("duet_callbacks.GoPanic") {
			return fmt.Errorf("cb(%d): want GoPanic, got %v (%v)", n, err, r)
		}
	}
	on, err := pygi.Eval(`__import__("faulthandler").is_enabled()`, nil)
	if err != nil {
		return err
	}
	fmt.Println("faulthandler enabled:", on.String())
	return pygi.Finalize(context.Background())
}

func TestFaulthandlerLeavesGoPanicsToGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"enabled by Python code", nil, "faulthandler enabled: True"},
		{"PYTHONFAULTHANDLER=1", []string{"PYTHONFAULTHANDLER=1"}, "faulthandler enabled: True"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := testutil.RunChild(t, append([]string{"CALLBACKS_CHILD=fault-go-panic"}, tc.env...)...)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%.3000s", out, errOut)
			assert.Contains(t, out, tc.want)
			assert.NotContains(t, errOut, "Fatal Python error")
		})
	}
	t.Run("enabled then disabled", func(t *testing.T) {
		out, errOut, err := testutil.RunChild(t, "CALLBACKS_CHILD=fault-disabled")
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%.3000s", out, errOut)
		assert.Contains(t, out, "faulthandler enabled: False")
	})
}

func TestFaulthandlerReportsNativeCrashes(t *testing.T) {
	t.Run("to its file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "fault.txt")
		_, errOut, err := testutil.RunChild(t, "CALLBACKS_CHILD=fault-native", "FAULT_FILE="+file)
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "want a crash, got %v\nstderr:\n%s", err, errOut)
		b, rerr := os.ReadFile(file)
		require.NoError(t, rerr)
		assert.Contains(t, string(b), "Fatal Python error: Segmentation fault")
		assert.Contains(t, string(b), "in crash_here", "Python's traceback, naming the function")
		assert.Contains(t, errOut, "SIGSEGV", "and then Go's own report of the fault")
	})
	t.Run("PYTHONFAULTHANDLER=1 to stderr", func(t *testing.T) {
		_, errOut, err := testutil.RunChild(t, "CALLBACKS_CHILD=fault-native", "PYTHONFAULTHANDLER=1")
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "want a crash, got %v\nstderr:\n%s", err, errOut)
		assert.Contains(t, errOut, "Fatal Python error: Segmentation fault")
		assert.Contains(t, errOut, "in crash_here")
	})
}
