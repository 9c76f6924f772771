package reload

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxSource bounds what a reload reads: no Python module or .ui file of an
// app is near it, and a file that is (a symbolic link to /dev/zero, a log
// written to the wrong name) is not read into memory.
const maxSource = 8 << 20

// errUntrusted: the file, or the directory it is in, could be written by a
// user other than this process's (or root). A reload runs what the file
// holds with the app's rights, so such a file is never read.
var errUntrusted = errors.New("not trusted")

// readSource reads a watched file the way a reload may: a regular file
// (not a FIFO, a device or a directory: a FIFO would block the watcher, and
// with it the app's exit), at most maxSource bytes, owned by this process's
// user or root, not writable by others, in a directory only they may
// change (or one with the sticky bit, as /tmp: others cannot replace a
// file there). A symbolic link is followed and its target checked.
func readSource(path string) ([]byte, error) {
	if err := trustedDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO swapped in after the check does not block the
	// open; the descriptor is checked again below.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%v)", path, st.Mode().Type())
	}
	if err := owner(path, st); err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != filepath.Dir(path) {
		if err := trustedDir(filepath.Dir(real)); err != nil {
			return nil, err
		}
	}
	if st.Size() > maxSource {
		return nil, fmt.Errorf("%s: %d bytes, more than a reload reads (%d)", path, st.Size(), maxSource)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSource+1))
	if err == nil && len(b) > maxSource {
		err = fmt.Errorf("%s: more than a reload reads (%d bytes)", path, maxSource)
	}
	return b, err
}

// trustedDir checks a directory: owned by this user or root, and not
// writable by others unless sticky.
func trustedDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return owner(dir, st)
}

// owner checks a file or a directory (st is its): owned by this user or
// root, not writable by others (a directory may be, with the sticky bit).
func owner(path string, st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to check on this system
	}
	if uid := uint32(os.Geteuid()); sys.Uid != uid && sys.Uid != 0 {
		return fmt.Errorf("%s: %w: owned by user %d, not by this process's user (%d) or root", path, errUntrusted, sys.Uid, uid)
	}
	perm := st.Mode()
	if perm&0o002 != 0 && !(perm.IsDir() && perm&os.ModeSticky != 0) {
		return fmt.Errorf("%s: %w: any user may write to it", path, errUntrusted)
	}
	return nil
}
