package reload

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reload runs what a file holds with the app's rights, and its reader
// runs on the watcher's goroutine, which the app's exit waits for: it reads
// only regular files of a bounded size that no other user could have
// written, and never blocks on one.
func TestReadSource(t *testing.T) {
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string) string // returns the path to read
		want string                                // "" for a good read, else part of the error
		root bool                                  // needs root (chown)
	}{
		{"a regular file", func(t *testing.T, dir string) string {
			return write(t, dir, "ok.py", "x = 1\n", 0o644)
		}, "", false},
		{"a FIFO", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "fifo.py")
			require.NoError(t, syscall.Mkfifo(p, 0o644))
			return p
		}, "not a regular file", false},
		{"a directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dir.py")
			require.NoError(t, os.Mkdir(p, 0o755))
			return p
		}, "not a regular file", false},
		{"a link to /dev/zero", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "zero.py")
			require.NoError(t, os.Symlink("/dev/zero", p))
			return p
		}, "not a regular file", false},
		{"a file larger than a reload reads", func(t *testing.T, dir string) string {
			p := write(t, dir, "big.py", "", 0o644)
			require.NoError(t, os.Truncate(p, maxSource+1))
			return p
		}, "more than a reload reads", false},
		{"a file any user may write", func(t *testing.T, dir string) string {
			p := write(t, dir, "open.py", "x = 1\n", 0o644)
			require.NoError(t, os.Chmod(p, 0o666))
			return p
		}, "any user may write to it", false},
		{"in a directory any user may write", func(t *testing.T, dir string) string {
			sub := filepath.Join(dir, "open")
			require.NoError(t, os.Mkdir(sub, 0o755))
			require.NoError(t, os.Chmod(sub, 0o777))
			return write(t, sub, "f.py", "x = 1\n", 0o644)
		}, "any user may write to it", false},
		{"in a sticky directory any user may write (as /tmp)", func(t *testing.T, dir string) string {
			sub := filepath.Join(dir, "sticky")
			require.NoError(t, os.Mkdir(sub, 0o755))
			require.NoError(t, os.Chmod(sub, 0o777|os.ModeSticky))
			return write(t, sub, "f.py", "x = 1\n", 0o644)
		}, "", false},
		{"a file another user owns", func(t *testing.T, dir string) string {
			p := write(t, dir, "theirs.py", "x = 1\n", 0o644)
			require.NoError(t, os.Chown(p, 65534, 65534))
			return p
		}, "owned by user 65534", true},
		{"in a directory another user owns", func(t *testing.T, dir string) string {
			sub := filepath.Join(dir, "theirs")
			require.NoError(t, os.Mkdir(sub, 0o755))
			p := write(t, sub, "f.py", "x = 1\n", 0o644)
			require.NoError(t, os.Chown(sub, 65534, 65534))
			return p
		}, "owned by user 65534", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && !root {
				t.Skip("needs root to give a file to another user")
			}
			p := tc.make(t, t.TempDir())
			done := make(chan error, 1)
			go func() { _, err := readSource(p); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute): // a deadlock detector, not a speed check
				t.Fatal("readSource blocked")
			}
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.want)
			}
		})
	}
}

func write(t *testing.T, dir, name, src string, mode os.FileMode) string {
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(src), mode))
	return p
}
