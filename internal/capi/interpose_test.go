package capi

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every call to sigaction, sigaltstack or siginterrupt in an executable
// linking duet is told apart by interpose.c exactly: CPython's (from a
// function libpython's archive defines) are recorded, every other caller's
// (Go's runtime's among them) goes to libc. Checked against the machine
// code of this package's test executable, built with its symbol table,
// stripped of it in several ways, and started as it might be, so a
// CPython whose callers moved fails here, not in a user's process.
func TestEveryCPythonSignalCallIsToldApart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test executable")
	}
	InterposePrepare()
	if InterposeMode() == InterposeShared {
		t.Skip("built with duet_sharedpython: CPython's code is libpython.so's segment (eventloop's signal tests cover it)")
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.test")
	out, err := exec.Command("go", "test", "-c", "-o", full, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	// strip as go run and go test do (--strip-all), and as a packager
	// might: without debugging symbols (which takes the FILE symbols too),
	// without local symbols. The addresses stay: one list for all.
	strip := func(how string) string {
		to := filepath.Join(dir, "stripped"+how+".test")
		out, err := exec.Command("objcopy", how, full, to).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return to
	}

	members, defined := libpythonArchive(t)
	sites := callSites(t, full, defined)
	var cpython, other int
	var list strings.Builder
	for _, s := range sites {
		fmt.Fprintf(&list, "%x %t %s\n", s.ra, s.cpython, s.fn)
		if s.cpython {
			cpython++
		} else {
			other++
		}
	}
	require.GreaterOrEqual(t, cpython, 10, "CPython's call sites (faulthandler, signal.siginterrupt, PyOS_setsig...)")
	require.NotZero(t, other, "other callers (Go's runtime's x_cgo_sigaction)")
	// Beyond the calls: every function of the four objects (the handlers
	// CPython installs, signal_handler among them, are told by the same
	// rule) is CPython's, and no function of the program's own is.
	fns := functions(t, full, members, defined)
	for _, f := range fns {
		fmt.Fprintf(&list, "%x %t %s\n", f.ra, f.cpython, f.fn)
	}
	sites = append(sites, fns...)
	file := filepath.Join(dir, "sites")
	require.NoError(t, os.WriteFile(file, []byte(list.String()), 0o600))

	libpython, err := exec.Command("gcc", "-print-file-name=libpython3.11.so.1.0").Output()
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		argv []string
		env  string
		mode int
	}{
		{"symbol table", []string{full}, "", InterposeSymbols},
		{"stripped", []string{strip("--strip-all")}, "", InterposeDynamic},
		{"no debugging symbols", []string{strip("--strip-debug")}, "", InterposeDynamic},
		{"no local symbols", []string{strip("--discard-all")}, "", InterposeDynamic},
		// /proc/self/exe is ld.so's file then: the symbols in memory
		{"started by ld.so", []string{"/lib64/ld-linux-x86-64.so.2", full}, "", InterposeDynamic},
		// a libpython.so loaded beside is not where CPython runs
		{"libpython.so preloaded", []string{full}, "LD_PRELOAD=" + strings.TrimSpace(string(libpython)), InterposeSymbols},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(c.argv[0], append(c.argv[1:], "-test.run=^TestSignalCallSitesChild$", "-test.v")...)
			cmd.Env = append(os.Environ(), "DUET_SITES="+file, fmt.Sprintf("DUET_SITES_MODE=%d", c.mode))
			if c.env != "" {
				cmd.Env = append(cmd.Env, c.env)
			}
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), fmt.Sprintf("%d call sites and functions told apart", len(sites)))
		})
	}
}

// TestSignalCallSitesChild runs in the executables the test above builds.
func TestSignalCallSitesChild(t *testing.T) {
	file := os.Getenv("DUET_SITES")
	if file == "" {
		t.Skip("run by TestEveryCPythonSignalCallIsToldApart")
	}
	InterposePrepare()
	require.Equal(t, os.Getenv("DUET_SITES_MODE"), strconv.Itoa(InterposeMode()), "how this executable's CPython is found")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ra uint64
		var want bool
		var fn string
		_, err := fmt.Sscanf(l, "%x %t %s", &ra, &want, &fn)
		require.NoError(t, err, l)
		assert.Equal(t, want, FromPythonAt(uintptr(ra)+ExeBias()), "%s (at %#x)", fn, ra)
		n++
	}
	assert.False(t, FromPythonAt(ExeBias()+1), "an address outside the executable's code")
	fmt.Printf("%d call sites and functions told apart\n", n)
}

type callSite struct {
	ra      uint64 // link-time return address, or an address inside a function
	fn      string // the calling function, or that function
	cpython bool   // CPython's
}

// libpythonArchive lists the archive's members and the functions it
// defines.
func libpythonArchive(t *testing.T) (members, defined map[string]bool) {
	archive, err := exec.Command("gcc", "-print-file-name=libpython3.11.a").Output()
	require.NoError(t, err)
	path := strings.TrimSpace(string(archive))
	ar, err := exec.Command("ar", "t", path).Output()
	require.NoError(t, err, "ar t %s", path)
	members = map[string]bool{}
	for _, m := range strings.Fields(string(ar)) {
		members[m] = true
	}
	nm, err := exec.Command("nm", "--defined-only", path).Output()
	require.NoError(t, err, "nm on %s", path)
	defined = map[string]bool{}
	for _, l := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(l); len(f) == 3 && (f[1] == "t" || f[1] == "T") {
			defined[f[2]] = true
		}
	}
	require.NotEmpty(t, members)
	require.NotEmpty(t, defined)
	return members, defined
}

// functions lists, from exe's symbol table, the functions whose answer is
// known: those of the four CPython objects (yes) and those of any object
// not the archive's (no); a function address inside is enough.
func functions(t *testing.T, exe string, members, defined map[string]bool) []callSite {
	f, err := elf.Open(exe)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	four := map[string]bool{"faulthandler.o": true, "signalmodule.o": true, "pylifecycle.o": true, "_posixsubprocess.o": true}
	var out []callSite
	file := ""
	var nfour, nprogram int
	for _, s := range syms {
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FILE:
			file = s.Name
			continue
		case elf.STT_FUNC:
		default:
			continue
		}
		if s.Size == 0 {
			continue
		}
		var want bool
		switch {
		case elf.ST_BIND(s.Info) != elf.STB_LOCAL:
			if defined[s.Name] || strings.HasPrefix(s.Name, "Py") || strings.HasPrefix(s.Name, "_Py") {
				continue // CPython's by name, or a non-Py global of the archive's: not asked
			}
			want = false
		case four[file]:
			want = true
			nfour++
		case file == "" || members[file]:
			continue
		default:
			want = false
		}
		if !want {
			nprogram++
		}
		out = append(out, callSite{ra: s.Value + s.Size/2, fn: s.Name, cpython: want})
	}
	require.Greater(t, nfour, 50, "functions of the four CPython objects")
	require.Greater(t, nprogram, 1000, "functions of the program's own")
	return out
}

// callSites disassembles exe and names each call to the three functions.
func callSites(t *testing.T, exe string, defined map[string]bool) []callSite {
	dis, err := exec.Command("objdump", "-d", "--no-show-raw-insn", exe).Output()
	require.NoError(t, err)
	fnRe := regexp.MustCompile(`^[0-9a-f]+ <(.+)>:$`)
	insnRe := regexp.MustCompile(`^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$`)
	callRe := regexp.MustCompile(`^[0-9a-f]+ <(sigaction|sigaltstack|siginterrupt)>$`)
	var sites []callSite
	var fn string
	pending := false
	sc := bufio.NewScanner(bytes.NewReader(dis))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := fnRe.FindStringSubmatch(line); m != nil {
			require.False(t, pending, "a call ends %s", fn)
			fn = m[1]
			continue
		}
		m := insnRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if pending { // this instruction is where the call returns to
			ra, err := strconv.ParseUint(m[1], 16, 64)
			require.NoError(t, err)
			sites = append(sites, callSite{ra: ra, fn: fn, cpython: defined[fn]})
			pending = false
		}
		pending = m[2] == "call" && callRe.MatchString(m[3])
	}
	require.NoError(t, sc.Err())
	return sites
}
