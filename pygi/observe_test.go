package pygi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What Python code can observe, compared with /usr/bin/python3 under the
// same conditions (stdout and stderr pipes, the same environment). Each
// row is an expression; the table in doc.go lists them.
var observable = [][2]string{
	{"sys.flags", "__import__('sys').flags"},
	{"sys.path", "[p for p in __import__('sys').path if p]"}, // python3 -c puts '' first; an app has no script directory
	{"site", "(__import__('site').ENABLE_USER_SITE, __import__('site').getsitepackages(), __import__('site').getusersitepackages(), 'site' in __import__('sys').modules)"},
	{"stdio", "[(f.encoding, f.errors, f.line_buffering, f.isatty()) for f in (__import__('sys').stdin, __import__('sys').stdout, __import__('sys').stderr)]"},
	{"filesystem encoding", "(__import__('sys').getfilesystemencoding(), __import__('sys').getfilesystemencodeerrors(), __import__('locale').getpreferredencoding(False))"},
	{"faulthandler", "__import__('faulthandler').is_enabled()"},
	{"threading.excepthook", "__import__('threading').excepthook is __import__('threading').__excepthook__"},
	{"recursion limit", "__import__('sys').getrecursionlimit()"},
	{"switch interval", "__import__('sys').getswitchinterval()"},
	{"gc thresholds", "__import__('gc').get_threshold()"},
	{"main module", "(__import__('__main__').__name__, sorted(k for k in vars(__import__('__main__')) if not k.startswith('__')))"},
}

func init() {
	childScenarios["observe"] = func() error {
		var diffs []string
		for _, q := range observable {
			if err := compare(systemPython, q[0], q[1]); err != nil {
				diffs = append(diffs, err.Error())
			}
		}
		// atexit functions run when Python is finalised, as at python3's exit.
		if err := Exec("import atexit\natexit.register(lambda: print('atexit ran', flush=True))\n", nil); err != nil {
			return err
		}
		if len(diffs) > 0 {
			return fmt.Errorf("differences from python3:\n%s", strings.Join(diffs, "\n"))
		}
		return Finalize(context.Background())
	}
}

func TestWhatPythonObserves(t *testing.T) {
	for _, env := range [][]string{nil, {"PYTHONFAULTHANDLER=1"}} {
		t.Run(strings.Join(append([]string{"env"}, env...), " "), func(t *testing.T) {
			for _, e := range env {
				k, v, _ := strings.Cut(e, "=")
				t.Setenv(k, v) // the reference python3 sees it too
			}
			out, errOut, err := runChild(t, "observe", env...)
			require.NoError(t, err, "stderr:\n%s", errOut)
			assert.Contains(t, out, "atexit ran")
			assert.Contains(t, out, "ok")
		})
	}
}
