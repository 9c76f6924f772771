package forensics_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

// Crash report files, tested as another local user would attack them:
// nothing in the shared temporary directory, a private directory that is
// really the user's, names no one can predict, files no one else can read,
// and nothing of anyone's removed.

func init() {
	// A clean end by os.Exit inside a handler, crash reports on.
	scenarios["exit-in-handler"] = func() error {
		if _, err := forensics.EnableCrashReports(os.Getenv("REPORT")); err != nil {
			return err
		}
		fmt.Println("path", forensics.CrashReportPath())
		quit, err := callbacks.New(func() { os.Exit(0) }, callbacks.Name("quit_now"))
		if err != nil {
			return err
		}
		_, err = quit.Call()
		return fmt.Errorf("os.Exit returned: %v", err)
	}
	// A clean end through CloseCrashReports, as app.Run and looptest end.
	scenarios["clean-close"] = func() error {
		path, err := forensics.EnableCrashReports(os.Getenv("REPORT"))
		fmt.Println("path", path, "error", err)
		diag.CloseCrashReports()
		return nil
	}
}

// crashEnv is a child's environment with its own state and temporary
// directories, nothing else of the user's.
type crashEnv struct{ state, tmp string }

func newCrashEnv(t *testing.T) crashEnv {
	root := t.TempDir()
	e := crashEnv{state: filepath.Join(root, "state"), tmp: filepath.Join(root, "tmp")}
	require.NoError(t, os.Mkdir(e.state, 0o700))
	require.NoError(t, os.Mkdir(e.tmp, 0o777))
	return e
}

func (e crashEnv) vars(more ...string) []string {
	return append([]string{"XDG_STATE_HOME=" + e.state, "TMPDIR=" + e.tmp, "DUET_CRASH_REPORT="}, more...)
}

func entries(t *testing.T, dir string) []string {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

var reportLine = regexp.MustCompile(`the whole report is in (\S+)`)

func TestCrashReportFilesArePrivate(t *testing.T) {
	e := newCrashEnv(t)
	var paths []string
	for range 2 {
		_, stderr, err := testutil.RunChild(t, append(e.vars("FORENSICS_CHILD=segv"), "REPORT=")...)
		require.Error(t, err, "the child must crash")
		m := reportLine.FindStringSubmatch(stderr)
		require.NotNil(t, m, "stderr names the report\n%.3000s", stderr)
		paths = append(paths, m[1])
	}
	dir := filepath.Join(e.state, "duet", "crash-reports")
	for _, p := range paths {
		assert.Equal(t, dir, filepath.Dir(p), "in the private directory")
		st, err := os.Lstat(p)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "readable by the user alone")
		assert.True(t, st.Mode().IsRegular())
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Contains(t, string(b), "duet crash report")
		assert.Contains(t, string(b), "goroutine ", "Go's part is in the file too")
	}
	assert.NotEqual(t, paths[0], paths[1])
	assert.Regexp(t, `duet-crash-.+-\d+-[0-9a-f]{16}\.txt$`, paths[0], "a name no one can predict")
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o700), st.Mode().Perm())
	assert.Empty(t, entries(t, e.tmp), "nothing in the shared temporary directory")
}

func TestCleanEndsLeaveNoReportFile(t *testing.T) {
	for _, scenario := range []string{"exit-in-handler", "clean-close"} {
		t.Run(scenario, func(t *testing.T) {
			e := newCrashEnv(t)
			stdout, stderr, err := testutil.RunChild(t, append(e.vars("FORENSICS_CHILD="+scenario), "REPORT=")...)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, "path "+filepath.Join(e.state, "duet", "crash-reports"))
			assert.Empty(t, entries(t, filepath.Join(e.state, "duet", "crash-reports")), "no empty report left behind")
			assert.Empty(t, entries(t, e.tmp))
		})
	}
}

// The private directory keeps the newest 100 reports: an app that
// crashes often (duetexplore keeps a report per crashing child) used to
// add one per crash for ever. Only duet's own reports go: a file of
// another name, a link named as a report and a report with a second name
// stay.
func TestPrivateDirectoryKeepsTheNewestReports(t *testing.T) {
	e := newCrashEnv(t)
	dir := filepath.Join(e.state, "duet", "crash-reports")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	const old = 110
	base := time.Now().Add(-time.Hour)
	name := func(i int) string { return fmt.Sprintf("duet-crash-app-%d-%016x.txt", 1000+i, i) }
	for i := range old { // written newest first: the age is the mtime, not the order made
		p := filepath.Join(dir, name(old-1-i))
		require.NoError(t, os.WriteFile(p, []byte("old report\n"), 0o600))
		mt := base.Add(time.Duration(old-1-i) * time.Second)
		require.NoError(t, os.Chtimes(p, mt, mt))
	}
	keepers := map[string]string{
		"notes.txt":                 "a file of the user's",
		"duet-crash-link.txt":       "a link named as a report",
		"duet-crash-hardlinked.txt": "a report with a second name",
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600))
	require.NoError(t, os.Symlink(filepath.Join(e.tmp, "x"), filepath.Join(dir, "duet-crash-link.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "duet-crash-hardlinked.txt"), nil, 0o600))
	require.NoError(t, os.Link(filepath.Join(dir, "duet-crash-hardlinked.txt"), filepath.Join(e.tmp, "second-name")))
	for _, k := range []string{"notes.txt", "duet-crash-link.txt", "duet-crash-hardlinked.txt"} {
		mt := base.Add(-time.Hour) // older than every report
		tv := unix.NsecToTimeval(mt.UnixNano())
		require.NoError(t, unix.Lutimes(filepath.Join(dir, k), []unix.Timeval{tv, tv}))
	}

	_, stderr, err := testutil.RunChild(t, append(e.vars("FORENSICS_CHILD=segv"), "REPORT=")...)
	require.Error(t, err, "the child must crash")
	m := reportLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, "stderr names the report\n%.3000s", stderr)

	left := map[string]bool{}
	for _, n := range entries(t, dir) {
		left[n] = true
	}
	for k, why := range keepers {
		assert.True(t, left[k], "%s (%s) stays", k, why)
	}
	assert.True(t, left[filepath.Base(m[1])], "the new report is there")
	var kept, tooOld []string
	for i := range old {
		if left[name(i)] {
			kept = append(kept, name(i))
			if i < old-99 {
				tooOld = append(tooOld, name(i))
			}
		}
	}
	assert.Len(t, kept, 99, "the newest 99 old reports, and the new one: 100")
	assert.Empty(t, tooOld, "kept, older than the newest 99")
}

// nobody is the uid another local user's entries get when the test runs as
// root; otherwise the attacker is played by the test's own user, and the
// ownership checks cannot be shown.
const nobody = 65534

func TestCrashReportsRefuseAnAttackersDirectory(t *testing.T) {
	attacker := t.TempDir()
	require.NoError(t, os.Chmod(attacker, 0o777))
	for _, tc := range []struct {
		name   string
		plant  func(t *testing.T, state string)
		refuse bool
		root   bool // needs root to play another user
	}{
		{"duet is a symbolic link", func(t *testing.T, state string) {
			require.NoError(t, os.Symlink(attacker, filepath.Join(state, "duet")))
		}, true, false},
		{"crash-reports is a symbolic link", func(t *testing.T, state string) {
			require.NoError(t, os.Mkdir(filepath.Join(state, "duet"), 0o700))
			require.NoError(t, os.Symlink(attacker, filepath.Join(state, "duet", "crash-reports")))
		}, true, false},
		{"crash-reports belongs to another user", func(t *testing.T, state string) {
			d := filepath.Join(state, "duet", "crash-reports")
			require.NoError(t, os.MkdirAll(d, 0o777))
			require.NoError(t, os.Chmod(d, 0o777))
			require.NoError(t, os.Chown(d, nobody, nobody))
		}, true, true},
		{"crash-reports is open to everyone (the user's own)", func(t *testing.T, state string) {
			d := filepath.Join(state, "duet", "crash-reports")
			require.NoError(t, os.MkdirAll(d, 0o700))
			require.NoError(t, os.Chmod(d, 0o777))
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Getuid() != 0 {
				t.Skip("playing another user needs root")
			}
			e := newCrashEnv(t)
			// No fallback to $XDG_RUNTIME_DIR: the refusal must show.
			tc.plant(t, e.state)
			before := entries(t, attacker)
			_, stderr, err := testutil.RunChild(t, append(e.vars("FORENSICS_CHILD=segv", "XDG_RUNTIME_DIR="), "REPORT=")...)
			require.Error(t, err, "the child must crash")
			assert.Equal(t, before, entries(t, attacker), "nothing written where the attacker points")
			if tc.refuse {
				assert.Contains(t, stderr, "refused")
				assert.NotContains(t, stderr, "the whole report is in")
				assert.Contains(t, stderr, "duet crash report", "the report still goes to stderr")
				return
			}
			m := reportLine.FindStringSubmatch(stderr)
			require.NotNil(t, m, "stderr:\n%.3000s", stderr)
			st, err := os.Stat(filepath.Dir(m[1]))
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o700), st.Mode().Perm(), "made private again")
		})
	}
}

func TestNamedReportFiles(t *testing.T) {
	dir := t.TempDir()
	t.Run("an existing empty file stays after a clean end", func(t *testing.T) {
		p := filepath.Join(dir, "app.log")
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=clean-close", "REPORT="+p, "DUET_CRASH_REPORT=")
		require.NoError(t, err, stderr)
		_, err = os.Stat(p)
		assert.NoError(t, err, "duet removes only what it created")
	})
	t.Run("an existing file is appended to", func(t *testing.T) {
		p := filepath.Join(dir, "kept.log")
		require.NoError(t, os.WriteFile(p, []byte("the user's own line\n"), 0o600))
		_, _, err := testutil.RunChild(t, "FORENSICS_CHILD=segv", "REPORT="+p, "DUET_CRASH_REPORT=")
		require.Error(t, err)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), "the user's own line\n"))
		assert.Contains(t, string(b), "duet crash report")
	})
	t.Run("a device stays", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("mknod needs root")
		}
		p := filepath.Join(dir, "null")
		require.NoError(t, syscall.Mknod(p, syscall.S_IFCHR|0o666, int(1<<8|3)))
		_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=clean-close", "REPORT="+p, "DUET_CRASH_REPORT=")
		require.NoError(t, err, stderr)
		st, err := os.Lstat(p)
		require.NoError(t, err, "the device node is still there")
		assert.NotZero(t, st.Mode()&fs.ModeCharDevice)
	})
	t.Run("a file that does not exist is created only by a crash", func(t *testing.T) {
		p := filepath.Join(dir, "new.txt")
		_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=exit-in-handler", "REPORT="+p, "DUET_CRASH_REPORT=")
		require.NoError(t, err, stderr)
		_, err = os.Lstat(p)
		assert.ErrorIs(t, err, fs.ErrNotExist)
		_, _, err = testutil.RunChild(t, "FORENSICS_CHILD=segv", "REPORT="+p, "DUET_CRASH_REPORT=")
		require.Error(t, err)
		st, err := os.Lstat(p)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	})
	for _, tc := range []struct {
		name, why string
		plant     func(t *testing.T, p string)
		root      bool
	}{
		{"a FIFO", "not a regular file", func(t *testing.T, p string) { require.NoError(t, syscall.Mkfifo(p, 0o666)) }, false},
		{"a file others can read", "can be read by others", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, nil, 0o644))
			require.NoError(t, os.Chmod(p, 0o644))
		}, false},
		{"a file with another name", "hard links", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p+".other", nil, 0o600))
			require.NoError(t, os.Link(p+".other", p))
		}, false},
		{"another user's file", "belongs to user", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, nil, 0o600))
			require.NoError(t, os.Chmod(p, 0o666))
			require.NoError(t, os.Chown(p, nobody, nobody))
		}, true},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			if tc.root && os.Getuid() != 0 {
				t.Skip("playing another user needs root")
			}
			p := filepath.Join(t.TempDir(), "target")
			tc.plant(t, p)
			_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=segv", "REPORT="+p, "DUET_CRASH_REPORT=")
			require.Error(t, err, "the child must still crash, promptly")
			assert.Contains(t, stderr, tc.why)
			assert.Contains(t, stderr, "duet crash report", "the report goes to stderr")
			if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				assert.Empty(t, b, "nothing written to the refused file")
			}
		})
	}
	t.Run("a symbolic link is refused", func(t *testing.T) {
		target := filepath.Join(dir, "victim")
		require.NoError(t, os.WriteFile(target, []byte("precious\n"), 0o644))
		p := filepath.Join(dir, "link.txt")
		require.NoError(t, os.Symlink(target, p))
		_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=segv", "REPORT="+p, "DUET_CRASH_REPORT=")
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Contains(t, stderr, "symbolic link")
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, "precious\n", string(b), "the link's target untouched")
	})
}

// A crash in C on a thread Go does not run (a Python thread): Go would end
// the process without a word; the report comes first.
func TestCrashOnAPythonThreadIsReported(t *testing.T) {
	p := filepath.Join(t.TempDir(), "report.txt")
	_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=segv-python-thread", "REPORT="+p, "DUET_CRASH_REPORT=")
	require.Error(t, err)
	assert.Contains(t, stderr, "duet crash report")
	assert.Contains(t, stderr, "inner_python_frame")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Contains(t, string(b), "inner_python_frame")
}

func init() {
	scenarios["segv-python-thread"] = func() error {
		if _, err := forensics.EnableCrashReports(os.Getenv("REPORT")); err != nil {
			return err
		}
		err := pygi.Exec(crashSource+"import threading\nt = threading.Thread(target=inner_python_frame)\nt.start()\nt.join()\n", nil)
		return fmt.Errorf("still alive after the SIGSEGV: %v", err)
	}
}

// The use-after-free diagnosis is complete however the free and the call
// interleave: here the call comes right after runtime.GC(), while the
// cleanup that frees the callback may still be running. A signal that
// called it is named whichever side of the free the call landed on.
func TestUseAfterFreeDiagnosisRacingTheFree(t *testing.T) {
	for _, tc := range []struct{ scenario, caller string }{
		{"uaf-race", "called from Python"},
		{"uaf-race-signal", "called from signal 'ping' of "},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			for i := range 10 {
				_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD="+tc.scenario, "DUET_DEBUG=callbacks")
				require.Error(t, err, "run %d: the child must crash", i)
				assert.Contains(t, stderr, "duet: use after free: callback on_race (", "run %d: name and site\n%.2000s", i, stderr)
				assert.Contains(t, stderr, "freed by the Go GC", "run %d", i)
				assert.Contains(t, stderr, tc.caller, "run %d", i)
			}
		})
	}
}

func init() {
	race := func(viaSignal bool) error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(`
from gi.repository import GObject
class Emitter(GObject.Object):
    __gsignals__ = {"ping": (GObject.SignalFlags.RUN_LAST, None, ())}
e = Emitter()
held = []
`, g); err != nil {
			return err
		}
		func() {
			cb, err := pyobj.NewCallback(func() {}, "on_race", true, false, 0)
			if err != nil {
				panic(err)
			}
			if viaSignal {
				e, _ := g.Item("e")
				_, err = callbacks.Connect(e, "ping", cb)
			} else {
				h, _ := g.Item("held")
				_, err = h.CallMethod("append", cb)
			}
			if err != nil {
				panic(err)
			}
		}()
		runtime.GC()
		call := "held[0]()"
		if viaSignal {
			call = "e.emit('ping')"
		}
		for range 100000 {
			if _, err := pygi.Eval(call, g); err != nil {
				return err
			}
		}
		return errors.New("the freed callback kept running")
	}
	scenarios["uaf-race"] = func() error { return race(false) }
	scenarios["uaf-race-signal"] = func() error { return race(true) }
}
