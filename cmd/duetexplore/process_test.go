package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asMainVar makes the test binary run the command's main (TestMain), so
// that a test can start the driver as a user does, in a process of its
// own, without building it.
const asMainVar = "DUETEXPLORE_TEST_AS_MAIN"

// sleepMarker is a "sleep" argument no other process has: the planted
// app's grandchild (PLANTED_SPAWN), found by it in /proc.
func sleepMarker() string {
	return fmt.Sprintf("600.%d%06d", os.Getpid(), rand.IntN(1e6))
}

// sleeping lists the processes that run "sleep marker".
func sleeping(marker string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, []byte("sleep\x00"+marker+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && !processZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processZombie says whether pid has exited and waits to be reaped.
func processZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z"))
}

func killLeftovers(t *testing.T, marker string) {
	t.Cleanup(func() {
		for _, pid := range sleeping(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// What the program starts is ended with it: the planted app starts a
// sleep that would outlive it, in its process group, which the driver
// kills once the program has ended. With -v, the program's output goes
// through a pipe the sleep holds too: the driver does not wait for the
// sleep to end (cmd.Wait would, without WaitDelay).
func TestChildProcessGroupIsEnded(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		t.Run(fmt.Sprintf("v=%v", verbose), func(t *testing.T) {
			marker := sleepMarker()
			killLeftovers(t, marker)
			t.Setenv("PLANTED_SPAWN", marker)
			args := []string{"-seed", "1", "-duration", "2s", "-exe", plantedExe}
			if verbose {
				args = append(args, "-v")
			}
			began := time.Now()
			status, _ := drive(t, "clean", args...)
			assert.Equal(t, exitClean, status)
			assert.Less(t, time.Since(began), 30*time.Second, "the driver did not wait for the sleep")
			assert.Eventually(t, func() bool { return len(sleeping(marker)) == 0 }, 3*time.Second, 50*time.Millisecond,
				"the program's own process (sleep %s) is left: %v", marker, sleeping(marker))
		})
	}
}

// Without a display the driver runs its own X server, as a child: it
// stays the process the user started, so that a SIGTERM to it ends
// everything: the program, what the program started, the X server, whose
// lock file and socket go, and the private directory of its cookie. It
// exits 143, as a shell reports SIGTERM.
func TestSIGTERMEndsEverything(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("no Xvfb")
	}
	marker := sleepMarker()
	killLeftovers(t, marker)
	cmd := exec.Command(os.Args[0], "-seed", "1", "-duration", "120s", "-exe", plantedExe)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "DISPLAY" && k != "WAYLAND_DISPLAY" && k != "XAUTHORITY" && k != "PLANTED" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, asMainVar+"=1", "PLANTED=clean", "PLANTED_SPAWN="+marker)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	server := regexp.MustCompile(`^duetexplore: X server :(\d+) \(Xvfb, pid (\d+)\)$`)
	var display string
	var xPid int
	deadline := time.After(60 * time.Second)
	for display == "" {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the driver ended: %s", strings.Join(log, "\n"))
			log = append(log, l)
			if m := server.FindStringSubmatch(l); m != nil {
				display = m[1]
				xPid, _ = strconv.Atoi(m[2])
			}
		case <-deadline:
			t.Fatalf("no X server said: %s", strings.Join(log, "\n"))
		}
	}
	// Xvfb -displayfd makes its socket (and no lock file: it takes the
	// first number whose socket it can make).
	lock, socket := "/tmp/.X"+display+"-lock", "/tmp/.X11-unix/X"+display
	assert.FileExists(t, socket)
	// The program runs (its sleep is there) on the driver's X server.
	require.Eventually(t, func() bool { return len(sleeping(marker)) > 0 }, 60*time.Second, 50*time.Millisecond)
	pids := sleeping(marker)
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pids[0]))
	require.NoError(t, err)
	var authority string
	for kv := range strings.SplitSeq(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "XAUTHORITY="); ok {
			authority = v
		}
		if v, ok := strings.CutPrefix(kv, "DISPLAY="); ok {
			assert.Equal(t, ":"+display, v)
		}
	}
	require.NotEmpty(t, authority, "the program has the server's authority file")
	time.Sleep(500 * time.Millisecond) // well into the run

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() {
		for l := range lines {
			log = append(log, l)
		}
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the driver did not end within 30 s of SIGTERM")
	}
	t.Logf("duetexplore: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), strings.Join(log, "\n"))
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 128+int(syscall.SIGTERM), ee.ExitCode())
	assert.Empty(t, sleeping(marker), "the program's own process is ended")
	assert.Eventually(t, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", xPid))
		return err != nil || processZombie(xPid)
	}, 5*time.Second, 50*time.Millisecond, "Xvfb ended")
	assert.NoFileExists(t, lock)
	assert.NoFileExists(t, socket)
	assert.NoDirExists(t, filepath.Dir(authority), "the private directory is removed")
}

// A driver stopped (Ctrl+Z stops it alone: its programs are in process
// groups of their own and go on) for longer than the run's time, its -hang
// and -grace wakes to both the program's exit and its timer: the exit
// wins, whatever select picks (it picked the timer, and a hang, about a
// third of the time).
func TestStoppedDriverReportsNoHang(t *testing.T) {
	fake, err := filepath.Abs("testdata/fakeclean/run.sh")
	require.NoError(t, err)
	for i := range 5 {
		cmd := exec.Command(os.Args[0], "-seed", "1", "-duration", "300ms", "-hang", "300ms", "-grace", "300ms", "-exe", fake)
		cmd.Env = append(os.Environ(), asMainVar+"=1", "DISPLAY=:none")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
		err := cmd.Wait()
		assert.NoError(t, err, "run %d:\n%s", i, out.String())
		assert.Contains(t, out.String(), "nothing found", "run %d", i)
		assert.NotContains(t, out.String(), "still running", "run %d", i)
	}
}
