package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// xServer is the X server the driver runs for itself when there is no
// display: one Xvfb for the exploration and every replay, a child of the
// driver, which stays the process the user started (see "The display" in
// the package doc).
type xServer struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	dir     string // private (0700): the authority file, Xvfb's log
	display string // ":N"
}

// xStartTimeout bounds how long Xvfb may take to say it is ready.
const xStartTimeout = 30 * time.Second

// startX starts Xvfb on a display it picks itself (-displayfd: it writes
// the number once it accepts connections, so there is no race for a free
// number and no wait by polling), reachable only with a fresh cookie in a
// private authority file (as xvfb-run does), and points DISPLAY and
// XAUTHORITY at it for the children.
func startX(ctx context.Context) (*xServer, error) {
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		return nil, fmt.Errorf("no DISPLAY or WAYLAND_DISPLAY, and no Xvfb to make one: %w", err)
	}
	dir, err := os.MkdirTemp("", "duetexplore-x-")
	if err != nil {
		return nil, err
	}
	x := &xServer{dir: dir, exited: make(chan struct{})}
	auth := filepath.Join(dir, "Xauthority")
	if err := writeAuthority(auth); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer r.Close()
	logPath := filepath.Join(dir, "Xvfb.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		w.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close()
	x.cmd = exec.Command(bin, "-displayfd", "3", "-auth", auth, "-nolisten", "tcp", "-screen", "0", "1280x800x24")
	x.cmd.ExtraFiles = []*os.File{w} // fd 3
	x.cmd.Stdout, x.cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl+C at the terminal reaches the driver,
	// which ends the programs before the server (a server gone first
	// would end them as crashes). Pdeathsig: a driver killed outright
	// still takes the server with it, and SIGTERM lets the server remove
	// its lock file and socket.
	x.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	err = x.cmd.Start()
	w.Close()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting Xvfb: %w", err)
	}
	go func() {
		x.cmd.Wait()
		close(x.exited)
	}()
	number := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		number <- strings.TrimSpace(line)
	}()
	var n string
	select {
	case n = <-number:
	case <-time.After(xStartTimeout):
	case <-ctx.Done():
	}
	if _, err := strconv.Atoi(n); err != nil {
		x.stop()
		why := "it did not say its display"
		if ctx.Err() != nil {
			why = ctx.Err().Error()
		}
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("starting Xvfb: %s\n%s", why, strings.TrimSpace(string(log)))
	}
	x.display = ":" + n
	os.Setenv("DISPLAY", x.display)
	os.Setenv("XAUTHORITY", auth)
	return x, nil
}

// stop ends the server (SIGTERM: it removes its lock file and socket),
// SIGKILL if it does not end within 5 s (then its lock file and socket are
// removed here), and removes the private directory.
func (x *xServer) stop() {
	x.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-x.exited:
	case <-time.After(5 * time.Second):
		x.cmd.Process.Kill()
		<-x.exited
		if n := strings.TrimPrefix(x.display, ":"); n != "" {
			lock := "/tmp/.X" + n + "-lock"
			// Only its own: the lock file says whose it is.
			if b, err := os.ReadFile(lock); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(x.cmd.Process.Pid) {
				os.Remove(lock)
				os.Remove("/tmp/.X11-unix/X" + n)
			}
		}
	}
	os.RemoveAll(x.dir)
}

// writeAuthority writes an X authority file with one fresh
// MIT-MAGIC-COOKIE-1 for any address and display (the server, given it
// with -auth, takes the cookie; a client, given it as XAUTHORITY, finds
// it for the display the server picked). The format is Xau's: a family,
// then an address, a display number, an authorization name and its data,
// each a big-endian 16-bit length and its bytes.
func writeAuthority(path string) error {
	cookie := make([]byte, 16)
	if _, err := rand.Read(cookie); err != nil {
		return err
	}
	const familyWild = 0xffff
	var b []byte
	b = binary.BigEndian.AppendUint16(b, familyWild)
	for _, field := range [][]byte{nil, nil, []byte("MIT-MAGIC-COOKIE-1"), cookie} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(field)))
		b = append(b, field...)
	}
	return os.WriteFile(path, b, 0o600)
}

// ensureDisplay starts an X server when there is neither DISPLAY nor
// WAYLAND_DISPLAY; nil when there is a display.
func ensureDisplay(ctx context.Context) (*xServer, error) {
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		return nil, nil
	}
	return startX(ctx)
}
