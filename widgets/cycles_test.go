package widgets_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// The commonest line in GTK code is a handler that touches the widget it is
// connected to. Each idiom below does that, 1 000 times, on a Python widget
// (a Gtk.Box subclass with its own signal and property): every widget must
// be finalised and the live callbacks must come back to the baseline.

type idiom struct {
	name string
	// connect connects a handler to g that calls a method on g when g
	// emits "greeted". win is g's own window, for idioms that destroy it
	// (nil otherwise: g lives in a container that stays).
	connect   func(t testing.TB, g *widgets.Widget)
	ownWindow bool
}

var idioms = []idiom{
	{name: "emitter argument, raw connect", connect: func(t testing.TB, g *widgets.Widget) {
		r, err := g.CallMethod("connect", "greeted", func(self *pygi.Object, text string) {
			self.CallMethod("set_name", "emitter") // the widget, from the arguments
		})
		require.NoError(t, err)
		r.Close()
	}},
	{name: "emitter argument, Widget.Connect", connect: func(t testing.TB, g *widgets.Widget) {
		_, err := g.Connect("greeted", func(self *pygi.Object, text string) { self.CallMethod("set_name", "emitter") })
		require.NoError(t, err)
	}},
	{name: "connect-time data", connect: func(t testing.TB, g *widgets.Widget) {
		label, err := g.Object.Attr("label")
		require.NoError(t, err)
		defer label.Close()
		// The data (here the widget's own label) is held by PyGObject's
		// closure, on the Python side: a cycle Python's collector sees.
		_, err = g.Connect("greeted", func(_ *pygi.Object, text string, l *pygi.Object) {
			l.CallMethod("set_text", text+"!")
		}, label)
		require.NoError(t, err)
	}},
	{name: "connect_after with data", connect: func(t testing.TB, g *widgets.Widget) {
		r, err := g.CallMethod("connect_after", "greeted", func(_ *pygi.Object, text string, self *pygi.Object) {
			self.CallMethod("set_name", "after")
		}, g.Object)
		require.NoError(t, err)
		r.Close()
	}},
	{name: "weak capture", connect: func(t testing.TB, g *widgets.Widget) {
		weak, err := widgets.Weak(g.Object)
		require.NoError(t, err)
		_, err = g.Connect("greeted", func(_ *pygi.Object, _ string) {
			if w, ok := weak.Get(); ok {
				w.CallMethod("set_name", "weak")
				w.Close()
			}
		})
		require.NoError(t, err)
	}},
	{name: "strong capture, raw connect, window destroyed", ownWindow: true, connect: func(t testing.TB, g *widgets.Widget) {
		captured := g.Object
		r, err := g.CallMethod("connect", "greeted", func(*pygi.Object, string) { captured.CallMethod("set_name", "captured") })
		require.NoError(t, err)
		r.Close()
	}},
}

func TestHandlersThatTouchTheirWidget(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	const cycles = 1000
	warmUpTeardown(t)
	var (
		m         *widgets.Module
		container *pygi.Object
		win       *pygi.Object
	)
	looptest.Do(t, func(t testing.TB) {
		var err error
		m, err = widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
		G := Gtk(t)
		win, err = G.CallMethod("Window")
		require.NoError(t, err)
		container, err = G.CallMethod("Box")
		require.NoError(t, err)
		_, err = win.CallMethod("set_child", container) // lives through the test
		require.NoError(t, err)
	})
	defer looptest.Do(t, func(t testing.TB) { win.CallMethod("destroy") })
	for _, id := range idioms {
		t.Run(id.name, func(t *testing.T) {
			base := looptest.Settle(t)
			rss0 := rssKB()
			watches := make([]*widgets.Watch, 0, cycles)
			for i := range cycles {
				looptest.Do(t, func(t testing.TB) {
					g, err := m.New("Greeter", pygi.Kw{"name": fmt.Sprint("g", i)})
					require.NoError(t, err)
					id.connect(t, g)
					var own *pygi.Object
					if id.ownWindow {
						own, err = Gtk(t).CallMethod("Window")
						require.NoError(t, err)
						_, err = own.CallMethod("set_child", g.Object)
					} else {
						_, err = container.CallMethod("append", g.Object)
					}
					require.NoError(t, err)
					_, err = g.CallMethod("greet") // emits "greeted": the handler runs
					require.NoError(t, err)
					w, err := widgets.WatchFinalize(g.Object)
					require.NoError(t, err)
					watches = append(watches, w)
					if id.ownWindow {
						_, err = own.CallMethod("destroy")
						own.Close()
					} else {
						_, err = container.CallMethod("remove", g.Object)
					}
					require.NoError(t, err)
					g.Close()
				})
				if i%200 == 199 {
					looptest.Settle(t) // keeps what waits for release bounded
				}
			}
			ok := finalized(t, watches...)
			alive := 0
			for _, w := range watches {
				if !w.Finalized() {
					alive++
				}
			}
			assert.True(t, ok, "%d of %d widgets never finalised", alive, cycles)
			assert.Equal(t, base, looptest.Settle(t), "live callbacks back to the baseline")
			t.Logf("%d cycles: %d finalised; RSS %+d kB", cycles, cycles-alive, rssKB()-rss0)
		})
	}
}

// rssKB reads the process's resident set size.
func rssKB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// The pattern the idioms replace, for the record: a handler that captures
// its own widget, which is then removed from a container that lives on.
// Neither collector can see the cycle (Python holds the handler, the
// handler's Go closure holds the widget); the widgets stay. duetvet reports
// this code, and callbacks.Cycles names such handlers at run time.
func TestStrongCaptureInALivingContainerLeaks(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	warmUpTeardown(t)
	base := looptest.Settle(t)
	var watches []*widgets.Watch
	var m *widgets.Module
	looptest.Do(t, func(t testing.TB) {
		var err error
		m, err = widgets.LoadFS(testdata, "testdata/greeter.py")
		require.NoError(t, err)
		G := Gtk(t)
		box, err := G.CallMethod("Box")
		require.NoError(t, err)
		for i := range 20 {
			g, err := m.New("Greeter", pygi.Kw{"name": fmt.Sprint("leak", i)})
			require.NoError(t, err)
			//duet:cycle-ok the leak this test measures
			_, err = g.Connect("greeted", func(*pygi.Object, string) { g.CallMethod("set_name", "x") })
			require.NoError(t, err)
			_, err = box.CallMethod("append", g.Object)
			require.NoError(t, err)
			_, err = g.CallMethod("greet") // the handler runs
			require.NoError(t, err)
			w, err := widgets.WatchFinalize(g.Object)
			require.NoError(t, err)
			watches = append(watches, w)
			_, err = box.CallMethod("remove", g.Object)
			require.NoError(t, err)
		}
	})
	assert.False(t, finalized(t, watches[0]), "if this fails, Go closures no longer hide cycles: update the docs")
	assert.Equal(t, base+20, looptest.Settle(t))

	// The runtime report names each such handler and where it was made.
	cycles, err := callbacks.Cycles()
	require.NoError(t, err)
	var mine []callbacks.Cycle
	for _, c := range cycles {
		if strings.HasPrefix(c.Created, "widgets/cycles_test.go:") {
			mine = append(mine, c)
		}
	}
	require.Len(t, mine, 20, "all cycles: %v", cycles)
	assert.Equal(t, "greeted_handler", mine[0].Callback)
	assert.Contains(t, mine[0].Object, "Greeter") // PyGObject names the GType module+class
	assert.Equal(t, leakLine, mine[0].Created)
	t.Log(mine[0])
}

// leakLine is where TestStrongCaptureInALivingContainerLeaks connects.
var leakLine = func() string {
	_, file, _, _ := runtime.Caller(0)
	src, _ := os.ReadFile(file)
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, `g.Connect("greeted", func(*pygi.Object, string) { g.CallMethod("set_name", "x") })`) {
			return fmt.Sprintf("widgets/cycles_test.go:%d", i+1)
		}
	}
	return "?"
}()
