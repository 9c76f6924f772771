package pygi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const systemPython = "/usr/bin/python3"

// pythonSays runs the system python3 (or another) on a snippet and returns
// what it prints.
func pythonSays(python, src string) (string, error) {
	out, err := exec.Command(python, "-c", src).Output()
	return strings.TrimSpace(string(out)), err
}

// evalText evaluates a Python expression to a Go string.
func evalText(expr string) (string, error) {
	r, err := Eval(expr, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.String(), nil
}

// compare checks that the embedded interpreter and python answer a
// question (an expression) the same way.
func compare(python, what, expr string) error {
	want, err := pythonSays(python, "print("+expr+")")
	if err != nil {
		return fmt.Errorf("%s: %s: %w", python, what, err)
	}
	got, err := evalText(expr)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s: duet says %q, %s says %q", what, got, python, want)
	}
	return nil
}

func init() {
	for name, fn := range map[string]func() error{
		// sys.executable names Python, not the app; argv is the app's.
		"identity": func() error {
			for _, q := range [][2]string{
				{"sys.executable", "__import__('os').path.realpath(__import__('sys').executable)"},
				{"sys._base_executable", "__import__('os').path.realpath(__import__('sys')._base_executable)"},
				{"sys.prefix", "__import__('sys').prefix"},
				{"sys.base_prefix", "__import__('sys').base_prefix"},
				{"sys.exec_prefix", "__import__('sys').exec_prefix"},
				{"sys.version", "__import__('sys').version"},
			} {
				if err := compare(systemPython, q[0], q[1]); err != nil {
					return err
				}
			}
			r, err := Eval("__import__('sys').argv", nil)
			if err != nil {
				return err
			}
			argv, err := As[[]string](r)
			if err != nil {
				return err
			}
			if strings.Join(argv, " ") != strings.Join(os.Args, " ") {
				return fmt.Errorf("sys.argv %q, want the app's %q", argv, os.Args)
			}
			return Finalize(context.Background())
		},
		// Code that starts sys.executable starts Python: a multiprocessing
		// pool with the spawn method, and a process pool executor.
		"spawn": func() error {
			g, err := NewGlobals()
			if err != nil {
				return err
			}
			err = Exec(`
import multiprocessing, concurrent.futures
ctx = multiprocessing.get_context("spawn")
with ctx.Pool(2) as pool:
    got = pool.map(abs, [-1, -2, -3])
assert got == [1, 2, 3], got
with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
    got = list(ex.map(pow, [2, 3], [5, 2]))
assert got == [32, 9], got
`, g)
			if err != nil {
				return err
			}
			g.Close()
			return Finalize(context.Background())
		},
		// A virtual environment configured for the app: importable exactly as
		// that environment's python3 sees it.
		"venv": func() error {
			dir := os.Getenv("DUET_TEST_VENV")
			python := filepath.Join(dir, "bin", "python3")
			if err := Init(Options{Venv: dir}); err != nil {
				return err
			}
			if _, err := Import("duet_venv_probe"); err != nil {
				return fmt.Errorf("a module in the venv's site-packages: %w", err)
			}
			if _, err := Import("gi"); err != nil {
				return fmt.Errorf("the system's site-packages (--system-site-packages): %w", err)
			}
			for _, q := range [][2]string{
				{"sys.prefix", "__import__('sys').prefix"},
				{"sys.base_prefix", "__import__('sys').base_prefix"},
				{"sys.executable", "__import__('sys').executable"},
				// python3 -c puts the working directory first; an app never does.
				{"sys.path", "[p for p in __import__('sys').path if p]"},
			} {
				if err := compare(python, q[0], q[1]); err != nil {
					return err
				}
			}
			if err := Init(Options{Venv: dir}); !errors.Is(err, ErrStarted) {
				return fmt.Errorf("Init's options after start: got %v, want ErrStarted", err)
			}
			if err := Init(Options{}); err != nil {
				return fmt.Errorf("Init without options after start: %v", err)
			}
			return Finalize(context.Background())
		},
		// $VIRTUAL_ENV alone (a user's activated shell) changes nothing: as
		// python3, which ignores it, the app imports what it imports without.
		"venv-env-ignored": func() error {
			if os.Getenv("VIRTUAL_ENV") == "" {
				return errors.New("the test sets VIRTUAL_ENV")
			}
			if _, err := Import("duet_venv_probe"); err == nil {
				return errors.New("imported duet_venv_probe from $VIRTUAL_ENV's site-packages")
			}
			if err := compare(systemPython, "sys.prefix", "__import__('sys').prefix"); err != nil {
				return err
			}
			if exe, err := evalText("__import__('sys').executable"); err != nil || strings.HasPrefix(exe, os.Getenv("VIRTUAL_ENV")) {
				return fmt.Errorf("sys.executable is %q (%v), in $VIRTUAL_ENV", exe, err)
			}
			return Finalize(context.Background())
		},
		// Start-up never imports from the working directory: planted gi.py
		// and gc.py there are not what "import gi" and "import gc" find.
		"cwd": func() error {
			if err := os.Chdir(os.Getenv("DUET_TEST_CWD")); err != nil {
				return err
			}
			for _, mod := range []string{"gi", "gc"} {
				f, err := evalText("getattr(__import__('" + mod + "'), '__file__', 'built-in')")
				if err != nil {
					return err
				}
				if strings.HasPrefix(f, os.Getenv("DUET_TEST_CWD")) {
					return fmt.Errorf("import %s found the planted %s", mod, f)
				}
			}
			r, err := Eval("[p for p in __import__('sys').path if p in ('', '.') or p == __import__('os').getcwd()]", nil)
			if err != nil {
				return err
			}
			if n, _ := r.Len(); n != 0 {
				return fmt.Errorf("sys.path holds the working directory: %v", r)
			}
			return Finalize(context.Background())
		},
	} {
		childScenarios[name] = fn
	}
}

func TestIdentityChildProcesses(t *testing.T) {
	venv := t.TempDir()
	out, err := exec.Command(systemPython, "-m", "venv", "--without-pip", "--system-site-packages", venv).CombinedOutput()
	require.NoError(t, err, "%s", out)
	site, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	require.NoError(t, err)
	require.Len(t, site, 1)
	require.NoError(t, os.WriteFile(filepath.Join(site[0], "duet_venv_probe.py"), []byte("here = True\n"), 0o644))
	cwd := t.TempDir()
	for _, mod := range []string{"gi", "gc"} {
		require.NoError(t, os.WriteFile(filepath.Join(cwd, mod+".py"), []byte("raise SystemExit('planted "+mod+" imported')\n"), 0o644))
	}
	for _, name := range []string{"identity", "spawn", "venv", "cwd", "venv-env-ignored"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := []string{"DUET_TEST_VENV=" + venv, "DUET_TEST_CWD=" + cwd}
			if name == "venv-env-ignored" {
				env = append(env, "VIRTUAL_ENV="+venv)
			}
			o, errOut, err := runChild(t, name, env...)
			require.NoError(t, err, "exit status; stderr:\n%s", errOut)
			assert.Contains(t, o, "ok")
			assert.Empty(t, errOut)
		})
	}
}

func TestInitOptionsRules(t *testing.T) {
	err := Init(Options{Venv: t.TempDir()})
	assert.ErrorContains(t, err, "not a virtual environment")
	assert.ErrorIs(t, Init(Options{Args: []string{"x"}}), ErrStarted, "this test process runs Python already")
	assert.NoError(t, Init(Options{}), "no options: starts Python if needed, else nothing")
}
