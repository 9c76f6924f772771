package forensics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/internal/testutil"
	"github.com/duet-gtk/duet/pygi"
)

func TestMain(m *testing.M) {
	if name := os.Getenv("FORENSICS_CHILD"); name != "" {
		// No core files from the crashes these children are made for.
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
		os.Exit(childMain(name))
	}
	if err := pygi.Init(pygi.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := pygi.Finalize(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "Finalize:", err)
		code = 1
	}
	os.Exit(code)
}

// siteOf is file:line of the line after the caller's, as census rows and
// diagnoses show it.
func siteOfNextLine() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s/%s:%d", filepath.Base(filepath.Dir(file)), filepath.Base(file), line+1)
}

func TestCensusCountsKnownAllocations(t *testing.T) {
	forensics.SetProvenance(true)
	looptest.Settle(t)
	mark, err := forensics.TakeCensus()
	require.NoError(t, err)

	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec("held = []\nclass CensusProbe: pass\n", g))
	held, err := g.Item("held")
	require.NoError(t, err)
	var site string
	for range 7 {
		site = siteOfNextLine()
		cb, err := callbacks.New(func() {}, callbacks.Name("census_probe"))
		require.NoError(t, err)
		r, err := held.CallMethod("append", cb)
		require.NoError(t, err)
		r.Close()
		cb.Close()
	}
	var probes []*pygi.Object
	for range 5 {
		o, err := pygi.Eval("CensusProbe()", g)
		require.NoError(t, err)
		probes = append(probes, o)
	}

	now, err := forensics.TakeCensus()
	require.NoError(t, err)
	assert.Contains(t, now.Callbacks, forensics.Count{Name: "census_probe", Site: site, N: 7})
	assert.Contains(t, now.PyObjects, forensics.Count{Name: "CensusProbe", N: 5})
	grew := now.Grew(mark)
	assert.Contains(t, grew, forensics.Change{Table: "callbacks", Name: "census_probe", Site: site, From: 0, To: 7})
	assert.Contains(t, grew, forensics.Change{Table: "python", Name: "CensusProbe", From: 0, To: 5})

	// Let go of everything: the rows are gone again.
	for _, o := range probes {
		o.Close()
	}
	require.NoError(t, pygi.Exec("held.clear()", g))
	held.Close()
	looptest.Settle(t)
	after, err := forensics.TakeCensus()
	require.NoError(t, err)
	for _, c := range after.Callbacks {
		assert.NotEqual(t, "census_probe", c.Name)
	}
	for _, c := range after.PyObjects {
		assert.NotEqual(t, "CensusProbe", c.Name)
	}
	assert.Equal(t, total(mark.Callbacks), total(after.Callbacks))
}

func TestCrossingsRecordTheBoundary(t *testing.T) {
	forensics.SetRing(true)
	defer forensics.SetRing(false)
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	probe, err := callbacks.New(func() {}, callbacks.Name("ring_probe"))
	require.NoError(t, err)
	require.NoError(t, g.SetItem("ring_probe", probe))
	probe.Close()
	r, err := pygi.Eval("ring_probe()", g)
	require.NoError(t, err)
	r.Close()
	l, err := pygi.Eval("[3, 1, 2]", g)
	require.NoError(t, err)
	r, err = l.CallMethod("sort")
	require.NoError(t, err)
	r.Close()
	require.NoError(t, pygi.Exec(`
from gi.repository import GObject
class RingEmitter(GObject.Object):
    __gsignals__ = {"ping": (GObject.SignalFlags.RUN_LAST, None, ())}
emitter = RingEmitter()
`, g))
	emitter, err := g.Item("emitter")
	require.NoError(t, err)
	onPing, err := callbacks.New(func() {}, callbacks.Name("on_ping"))
	require.NoError(t, err)
	_, err = callbacks.Connect(emitter, "ping", onPing)
	require.NoError(t, err)
	onPing.Close()
	r, err = emitter.CallMethod("emit", "ping")
	require.NoError(t, err)
	r.Close()

	cs := forensics.Crossings(24)
	require.NotEmpty(t, cs)
	var lines []string
	for _, c := range cs {
		lines = append(lines, c.Kind+" "+c.What)
		assert.NotZero(t, c.Thread)
	}
	joined := strings.Join(lines, "\n")
	assert.Contains(t, joined, "Python calls Go ring_probe")
	assert.Contains(t, joined, "call list sort")
	assert.Contains(t, joined, "signal calls Go on_ping ping builtins+RingEmitter", "the callback, the signal, the emitter's GType")
	for i := 1; i < len(cs); i++ {
		assert.Less(t, cs[i-1].Seq, cs[i].Seq, "oldest first")
	}
}

// ---- crashes, in child processes ----------------------------------------------

const crashSource = `
import ctypes
def inner_python_frame():
    ctypes.string_at(0)  # a read of address 0, in C: SIGSEGV
def outer_python_frame(go_middle):
    go_middle()
`

var scenarios = map[string]func() error{
	// A SIGSEGV in C code, three crossings deep: Python -> Go -> Python -> C.
	"segv": func() error {
		if _, err := forensics.EnableCrashReports(os.Getenv("REPORT")); err != nil {
			fmt.Fprintln(os.Stderr, "EnableCrashReports:", err) // the report still goes to stderr
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(crashSource, g); err != nil {
			return err
		}
		inner, err := g.Item("inner_python_frame")
		if err != nil {
			return err
		}
		middle, err := callbacks.New(func() error { _, err := inner.Call(); return err }, callbacks.Name("go_middle"))
		if err != nil {
			return err
		}
		outer, err := g.Item("outer_python_frame")
		if err != nil {
			return err
		}
		_, err = outer.Call(middle)
		return fmt.Errorf("still alive after the SIGSEGV: %v", err)
	},
	// The same, with a thread that blocks every signal holding a Go M (it
	// called into Go once), as GLib's threads do: the runtime's SIGQUIT
	// relay never reaches it and would wait 10 s before dying.
	"segv-blocked-thread": func() error {
		if _, err := forensics.EnableCrashReports(os.Getenv("REPORT")); err != nil {
			return err
		}
		touched := make(chan struct{})
		touch, err := callbacks.New(func() { close(touched) }, callbacks.Name("touch"))
		if err != nil {
			return err
		}
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := g.SetItem("touch", touch); err != nil {
			return err
		}
		if err := pygi.Exec(crashSource+`
import signal, threading
def deaf():
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    touch()
    threading.Event().wait()
threading.Thread(target=deaf, daemon=True).start()
`, g); err != nil {
			return err
		}
		<-touched
		time.Sleep(50 * time.Millisecond)
		err = pygi.Exec("inner_python_frame()", g)
		return fmt.Errorf("still alive after the SIGSEGV: %v", err)
	},
	// Go turns a nil dereference in Go code into a panic a program may
	// recover, through the same SIGSEGV duet's handler sees first.
	"recovered-nil": func() error {
		if _, err := forensics.EnableCrashReports(os.Getenv("REPORT")); err != nil {
			return err
		}
		var p *struct{ n int }
		for range 3 {
			func() {
				defer func() { recover() }()
				p.n++
			}()
		}
		fmt.Println("recovered")
		return nil
	},
	// A fatal Go error: a panic nobody recovers, on another goroutine.
	"panic": func() error {
		if _, err := forensics.EnableCrashReports(os.Getenv("REPORT")); err != nil {
			return err
		}
		r, err := pygi.Eval("sum(range(10))", nil)
		if err != nil {
			return err
		}
		r.Close()
		go func() { panic("a deliberate Go panic") }()
		time.Sleep(10 * time.Second)
		return errors.New("still alive after the panic")
	},
	// Calls into a callback the broken ownership mode freed: from Python,
	// and from a signal through duet's closure.
	"uaf-python": func() error { return useAfterFree(false) },
	"uaf-signal": func() error { return useAfterFree(true) },
}

func useAfterFree(viaSignal bool) error {
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
	e, err := g.Item("e")
	if err != nil {
		return err
	}
	held, err := g.Item("held")
	if err != nil {
		return err
	}
	func() {
		fmt.Println("site", siteOfNextLine())
		cb, err := pyobj.NewCallback(func() {}, "on_tick", true, false, 0)
		if err != nil {
			panic(err)
		}
		if viaSignal {
			_, err = callbacks.Connect(e, "ping", cb)
		} else {
			_, err = held.CallMethod("append", cb)
		}
		if err != nil {
			panic(err)
		}
	}()
	for range 10 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		if err := eventloop.Collect(); err != nil {
			return err
		}
	}
	fmt.Printf("stats %+v\n", forensics.ReadStats().Callbacks)
	os.Stdout.Sync()
	if viaSignal {
		_, err = e.CallMethod("emit", "ping")
	} else {
		_, err = pygi.Eval("held[0]()", g)
	}
	return fmt.Errorf("the freed callback returned (%v)", err)
}

func childMain(name string) int {
	fn, ok := scenarios[name]
	if !ok {
		return 2
	}
	if err := fn(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	return 0
}

func TestCrashReports(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		want     []string // in the report file
	}{
		{"segv", []string{
			"SIGSEGV", "goroutine 1", // Go's part
			"duet crash report", "last boundary crossings", "Python calls Go  go_middle", "call  function outer_python_frame", "call  function inner_python_frame", // the ring
			"Python threads", "inner_python_frame", "outer_python_frame", // Python's part
		}},
		{"segv-blocked-thread", []string{"SIGSEGV", "goroutine 1", "duet crash report", "Python threads", "inner_python_frame"}},
		{"panic", []string{
			"a deliberate Go panic", "goroutine ",
			"duet crash report", "run  dict", "Python threads",
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.txt")
			start := time.Now()
			_, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD="+tc.scenario, "REPORT="+report)
			// Not a speed check: the runtime alone would wait 10 s for
			// threads that never answer its relay (segv-blocked-thread).
			assert.Less(t, time.Since(start), 8*time.Second, "a crashing process dies promptly")
			require.Error(t, err, "the child must crash\nstderr:\n%s", stderr)
			assert.NotContains(t, stderr, "FAIL:")
			var ee interface{ Sys() any }
			require.ErrorAs(t, err, &ee)
			ws, ok := ee.Sys().(syscall.WaitStatus)
			require.True(t, ok)
			assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGABRT, "dies of SIGABRT: %v\nstderr:\n%.3000s", ws, stderr)
			data, err := os.ReadFile(report)
			require.NoError(t, err)
			text := string(data)
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
			assert.Contains(t, stderr, "duet crash report", "stderr gets the report too")
			if t.Failed() {
				t.Logf("report:\n%.6000s", text)
			}
		})
	}
}

func TestRecoveredPanicsStayRecoverable(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.txt")
	stdout, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD=recovered-nil", "REPORT="+report)
	require.NoError(t, err, "stderr:\n%s", stderr)
	assert.Contains(t, stdout, "recovered")
	assert.NotContains(t, stderr, "duet crash report")
}

func TestUseAfterFreeDiagnosis(t *testing.T) {
	for _, tc := range []struct {
		scenario, debug string
		want, not       []string
	}{
		{"uaf-python", "callbacks", []string{"duet: use after free: callback on_tick (", "freed by the Go GC (the deliberately broken ownership) at ", "called from Python"}, nil},
		{"uaf-signal", "callbacks", []string{"duet: use after free: callback on_tick (", "called from signal 'ping' of ", "Emitter 0x"}, nil},
		{"uaf-signal", "", nil, []string{"use after free: callback on_tick"}},
	} {
		t.Run(tc.scenario+"/DUET_DEBUG="+tc.debug, func(t *testing.T) {
			stdout, stderr, err := testutil.RunChild(t, "FORENSICS_CHILD="+tc.scenario, "DUET_DEBUG="+tc.debug)
			require.Error(t, err, "the child must crash\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.NotContains(t, stderr, "FAIL:")
			assert.Contains(t, stdout, "FreedByGoGC:1")
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
			for _, w := range tc.not {
				assert.NotContains(t, stderr, w)
			}
			if tc.debug != "" {
				site := strings.TrimSpace(strings.TrimPrefix(firstLineWith(stdout, "site "), "site "))
				require.NotEmpty(t, site)
				assert.Contains(t, stderr, "callback on_tick ("+site+")", "the diagnosis names where it was made")
			}
		})
	}
}

func firstLineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func total(t []forensics.Count) int {
	n := 0
	for _, c := range t {
		n += c.N
	}
	return n
}
