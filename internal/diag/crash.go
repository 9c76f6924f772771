package diag

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/duet-gtk/duet/internal/capi"
)

// Crash reports (see package forensics for the contract). Everything here
// happens once per process; a later call only changes the file.
//
// Files: a report is written where no other local user can read it or
// steer it. By default that is a directory of the user's own,
// $XDG_STATE_HOME/duet/crash-reports (~/.local/state/...; else
// $XDG_RUNTIME_DIR/duet/crash-reports), mode 0700 and checked to be the
// user's own real directory, never a shared one such as /tmp. The report
// is an unnamed file there (O_TMPFILE, mode 0600) that gets its name, one
// no one can predict, only when a crash writes to it (linkat in the crash
// handler, which creates the name and never follows a link): a process
// that ends in any other way, os.Exit included, leaves nothing behind.
// Where the file system cannot make unnamed files, the named file is
// created at once (O_EXCL|O_NOFOLLOW) and removed at a clean end if still
// empty and still the same file; there, a process that ends by os.Exit
// leaves that empty file behind.

var crash struct {
	mu   sync.Mutex
	file *os.File // what the runtime and the handlers write to
	dir  *os.File // the directory the unnamed file is linked into at a crash; nil: none
	path string   // where the report is, or will be once a crash names it
	made bool     // duet created the named file at path (the fallback): removed at a clean end if empty
	ino  uint64   // and its identity, so that only that file is ever removed
	dev  uint64
}

// ErrNoPrivateDir: there is nowhere private to keep crash reports (no
// usable $XDG_STATE_HOME, $HOME or $XDG_RUNTIME_DIR); reports go to stderr.
var ErrNoPrivateDir = errors.New("forensics: no private directory for crash reports")

// EnableCrashReports makes path the crash report file ("" for a new one in
// duet's private directory, see above; a path that exists is appended to
// if it is the user's own regular file, 0600 or stricter, with no other
// name, or a character device; one that does not exist is created only by
// a crash, under path-<pid> if someone made path meanwhile), asks the Go runtime to
// crash rather than exit on a fatal error (so that the report's SIGABRT
// handler runs), turns the ring and provenance on, and returns the path.
// A path that is a symbolic link is refused. When the file cannot be
// opened, reports still go to stderr, and the error says why.
func EnableCrashReports(path string) (string, error) {
	crash.mu.Lock()
	defer crash.mu.Unlock()
	r, err := openReport(path)
	if err != nil {
		// Still a report on stderr: the handlers without a file.
		debug.SetTraceback("crash")
		capi.InstallCrashHandler(-1, -1, "", "")
		capi.SetRing(true)
		SetProvenance(true)
		return "", err
	}
	// The Go runtime writes every goroutine's stack there as well as to
	// stderr; "crash" makes it end with SIGABRT, where duet's part follows.
	if err := debug.SetCrashOutput(r.file, debug.CrashOptions{}); err != nil {
		r.close()
		return "", fmt.Errorf("forensics: crash output: %w", err)
	}
	debug.SetTraceback("crash")
	dirfd, name := -1, ""
	if r.dir != nil {
		dirfd, name = int(r.dir.Fd()), filepath.Base(r.path)
	}
	if !capi.InstallCrashHandler(int(r.file.Fd()), dirfd, name, r.path) {
		r.close()
		return "", fmt.Errorf("forensics: cannot install the crash handlers")
	}
	closeLocked()
	crash.file, crash.dir, crash.path, crash.made, crash.ino, crash.dev = r.file, r.dir, r.path, r.made, r.ino, r.dev
	capi.SetRing(true)
	SetProvenance(true)
	return r.path, nil
}

type report struct {
	file, dir *os.File
	path      string
	made      bool
	ino, dev  uint64
}

func (r *report) close() {
	r.file.Close()
	if r.dir != nil {
		r.dir.Close()
	}
	if r.made {
		os.Remove(r.path)
	}
}

func openReport(path string) (*report, error) {
	if path == "" {
		dir, err := PrivateDir("crash-reports")
		if err != nil {
			return nil, err
		}
		var b [8]byte
		rand.Read(b[:])
		prog := strings.Map(func(r rune) rune {
			if r == '/' || r < ' ' {
				return '_'
			}
			return r
		}, filepath.Base(os.Args[0]))
		r, err := openUnnamed(dir, fmt.Sprintf("duet-crash-%s-%d-%s.txt", prog, os.Getpid(), hex.EncodeToString(b[:])))
		if err == nil {
			pruneReports(dir, keepReports-1) // room for this one
		}
		return r, err
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("forensics: crash report file: %w", err)
	}
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("forensics: crash report file %s is a symbolic link: refused", path)
	case err == nil:
		return openExisting(path)
	case errors.Is(err, fs.ErrNotExist):
		return openUnnamed(filepath.Dir(path), filepath.Base(path))
	default:
		return nil, fmt.Errorf("forensics: crash report file: %w", err)
	}
}

// keepReports bounds the reports kept in duet's private directory: a
// process that may add one there first removes the oldest past the
// bound, so that an app that crashes often (duetexplore runs a child per
// finding, and keeps each one's report) does not fill the user's state
// directory. A user's own path is never pruned.
const keepReports = 100

// pruneReports leaves at most keep reports in dir, removing the oldest (by
// modification time). Only what duet names a report is looked at, and
// only a regular file of the user's own is removed: never a link, never
// another name. Everything is done relative to the directory's
// descriptor, so a directory swapped after PrivateDir checked it is not
// followed. A report another process removes meanwhile is not an error;
// nothing here is (a report not pruned is only a file too many).
func pruneReports(dir string, keep int) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	d := os.NewFile(uintptr(dfd), dir)
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var reports []string
	for _, n := range names {
		if strings.HasPrefix(n, "duet-crash-") && strings.HasSuffix(n, ".txt") {
			reports = append(reports, n)
		}
	}
	if len(reports) <= keep { // the usual case: no stat at all
		return
	}
	type aged struct {
		name  string
		mtime unix.Timespec
	}
	var own []aged
	uid := uint32(os.Getuid())
	for _, n := range reports {
		var st unix.Stat_t
		if unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		// An empty report is a running process's where files cannot be
		// unnamed (see above: named at its start, written by a crash).
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uid || st.Nlink != 1 || st.Size == 0 {
			continue
		}
		own = append(own, aged{n, st.Mtim})
	}
	slices.SortFunc(own, func(a, b aged) int {
		return cmp.Or(cmp.Compare(a.mtime.Sec, b.mtime.Sec), cmp.Compare(a.mtime.Nsec, b.mtime.Nsec), strings.Compare(a.name, b.name))
	})
	for _, a := range own[:max(0, len(own)-keep)] {
		unix.Unlinkat(dfd, a.name, 0)
	}
}

// openExisting opens a file that exists, to append to it (never removed):
// the user's own regular file with no other name, or a character device
// (/dev/null, a terminal). Anything else, or a file that another user could
// read or swap under us, is refused.
func openExisting(path string) (*report, error) {
	refuse := func(why string) (*report, error) {
		return nil, fmt.Errorf("forensics: crash report file %s %s: refused", path, why)
	}
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err == nil && lst.Mode&unix.S_IFMT != unix.S_IFREG && lst.Mode&unix.S_IFMT != unix.S_IFCHR {
		return refuse("is not a regular file or a character device")
	}
	// O_NONBLOCK: should a FIFO take the place of the file meanwhile, the
	// open must not hang (it is refused below anyway).
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("forensics: crash report file %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("forensics: crash report file %s: %w", path, err)
	}
	var why string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		switch {
		case int(st.Uid) != os.Getuid():
			why = fmt.Sprintf("belongs to user %d, who could read the report", st.Uid)
		case st.Nlink != 1:
			why = "has other names (hard links)"
		case st.Mode&0o077 != 0:
			why = fmt.Sprintf("can be read by others (mode %#o)", st.Mode&0o777)
		}
	case unix.S_IFCHR:
	default:
		why = "is not a regular file or a character device"
	}
	if why != "" {
		unix.Close(fd)
		return refuse(why)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("forensics: crash report file %s: %w", path, err)
	}
	return &report{file: os.NewFile(uintptr(fd), path), path: path}, nil
}

// openUnnamed prepares a report that a crash names dir/name.
func openUnnamed(dir, name string) (*report, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("forensics: crash report directory: %w", err)
	}
	d := os.NewFile(uintptr(dfd), dir)
	path := filepath.Join(dir, name)
	if fd, err := unix.Openat(dfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600); err == nil {
		return &report{file: os.NewFile(uintptr(fd), path), dir: d, path: path}, nil
	}
	// No unnamed files here: the named one now, exclusively.
	fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("forensics: crash report file %s: %w", path, err)
	}
	r := &report{file: os.NewFile(uintptr(fd), path), path: path, made: true}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		r.ino, r.dev = st.Ino, st.Dev
	}
	return r, nil
}

// PrivateDir returns duet's directory sub for the user, made if needed:
// under $XDG_STATE_HOME/duet (else ~/.local/state/duet, else
// $XDG_RUNTIME_DIR/duet), mode 0700, and refused unless it is a real
// directory (no symbolic link) owned by the user.
func PrivateDir(sub string) (string, error) {
	var bases []string
	if b := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(b) {
		bases = append(bases, b)
	} else if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		bases = append(bases, filepath.Join(home, ".local", "state"))
	}
	if b := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(b) {
		bases = append(bases, b)
	}
	var errs []error
	for _, base := range bases {
		// The base is the user's; each of duet's levels is made and checked
		// in turn, so that nothing is made through a link someone planted.
		dir := filepath.Join(base, "duet", sub)
		err := os.MkdirAll(base, 0o700)
		for _, d := range []string{filepath.Join(base, "duet"), dir} {
			if err != nil {
				break
			}
			if err = os.Mkdir(d, 0o700); errors.Is(err, fs.ErrExist) {
				err = nil
			}
			if err == nil {
				err = ownDir(d, d == dir)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return dir, nil
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("%w: $XDG_STATE_HOME, $HOME and $XDG_RUNTIME_DIR are unset", ErrNoPrivateDir)
	}
	return "", fmt.Errorf("%w: %w", ErrNoPrivateDir, errors.Join(errs...))
}

// ownDir checks that dir is a directory of the user's own (not a symbolic
// link, not someone else's); private also makes it 0700.
func ownDir(dir string, private bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("%s is a symbolic link: refused", dir)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory", dir)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to user %d, not to this user (%d): refused", dir, st.Uid, os.Getuid())
	case private && st.Mode&0o077 != 0:
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	case !private && st.Mode&0o022 != 0:
		return fmt.Errorf("%s can be written by others: refused", dir)
	}
	return nil
}

// CrashReportPath is where the report file is, or will be when a crash
// writes it; "" when there is none (crash reports off, or closed by
// CloseCrashReports).
func CrashReportPath() string {
	crash.mu.Lock()
	defer crash.mu.Unlock()
	return crash.path
}

// CloseCrashReports is for a clean end of the process: from then on
// reports go to stderr only. An unnamed report vanishes; a file duet
// created (the fallback) is removed if nothing was written to it and it is
// still the same file; a file that existed before is only closed.
func CloseCrashReports() {
	crash.mu.Lock()
	defer crash.mu.Unlock()
	if crash.file == nil {
		return
	}
	capi.InstallCrashHandler(-1, -1, "", "")
	debug.SetCrashOutput(nil, debug.CrashOptions{})
	closeLocked()
}

// closeLocked closes the current report file. Called with crash.mu held.
func closeLocked() {
	if crash.file == nil {
		return
	}
	if crash.made {
		var fst, pst unix.Stat_t
		if unix.Fstat(int(crash.file.Fd()), &fst) == nil && fst.Size == 0 &&
			unix.Lstat(crash.path, &pst) == nil && pst.Ino == crash.ino && pst.Dev == crash.dev {
			os.Remove(crash.path)
		}
	}
	crash.file.Close()
	if crash.dir != nil {
		crash.dir.Close()
	}
	crash.file, crash.dir, crash.path, crash.made = nil, nil, "", false
}

// CrashReportsFromEnv turns crash reports on when DUET_CRASH_REPORT asks:
// "1" (or "on", "true") for a new file in duet's private directory,
// anything else but "0", "off" and "false" names the file.
func CrashReportsFromEnv() {
	v := strings.TrimSpace(os.Getenv("DUET_CRASH_REPORT"))
	switch strings.ToLower(v) {
	case "", "0", "off", "false":
		return
	case "1", "on", "true":
		v = ""
	}
	if _, err := EnableCrashReports(v); err != nil {
		fmt.Fprintln(os.Stderr, "duet:", err, "(crash reports go to stderr only)")
	}
}
