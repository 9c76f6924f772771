package widgets_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
)

type capture struct {
	mu   sync.Mutex
	msgs []string
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *capture) WithGroup(string) slog.Handler            { return c }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, r.Level.String()+" "+r.Message)
	c.mu.Unlock()
	return nil
}

// With gotk4 linked in, GLib's log writer is gotk4's (it writes to
// slog.Default()); RouteLogs still gets GTK's messages, and puts the
// default logger back when stopped.
func TestGLibMessagesRoutedWithGotk4(t *testing.T) {
	before := slog.Default()
	c := &capture{}
	stop, err := eventloop.RouteLogs(c)
	require.NoError(t, err)
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, pygi.Exec(`
from gi.repository import GLib
GLib.log_variant("Gtk", GLib.LogLevelFlags.LEVEL_CRITICAL,
                 GLib.Variant("a{sv}", {"MESSAGE": GLib.Variant("s", "a GTK critical")}))
`, nil))
	})
	stop()
	assert.Same(t, before, slog.Default())
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Contains(t, strings.Join(c.msgs, "\n"), "ERROR a GTK critical")
}

// The tap RouteLogs puts on slog.Default() under gotk4 is a guest: the
// program's own slog records and its log.Print lines come out where and as
// they did, during the routing and after it; only GLib's messages move.
func TestRouteLogsLeavesTheProgramsLoggingAlone(t *testing.T) {
	for _, custom := range []bool{false, true} {
		t.Run(map[bool]string{false: "slog's own default", true: "the program's default"}[custom], func(t *testing.T) {
			var logBuf, appBuf syncBuffer
			prevOut, prevFlags, prevDefault := log.Writer(), log.Flags(), slog.Default()
			t.Cleanup(func() {
				slog.SetDefault(prevDefault)
				log.SetOutput(prevOut)
				log.SetFlags(prevFlags)
			})
			log.SetOutput(&logBuf)
			log.SetFlags(log.Lmsgprefix)
			log.SetPrefix("app: ")
			t.Cleanup(func() { log.SetPrefix("") })
			if custom {
				slog.SetDefault(slog.New(slog.NewTextHandler(&appBuf, nil)))
			}
			before, out, flags := slog.Default(), log.Writer(), log.Flags()

			c := &capture{}
			stop, err := eventloop.RouteLogs(c)
			require.NoError(t, err)
			assert.Equal(t, out, log.Writer(), "the log package's output stays")
			assert.Equal(t, flags, log.Flags(), "and its flags")
			log.Print("a log line")
			slog.Warn("a slog record", "k", 1)
			derived := slog.Default().With("sub", true)
			looptest.Do(t, func(t testing.TB) {
				require.NoError(t, pygi.Exec(`
from gi.repository import GLib
GLib.log_variant("Gtk", GLib.LogLevelFlags.LEVEL_WARNING,
                 GLib.Variant("a{sv}", {"MESSAGE": GLib.Variant("s", "a GTK warning")}))
`, nil))
			})
			stop()
			derived.Warn("after stop")
			assert.Same(t, before, slog.Default())
			assert.Equal(t, out, log.Writer())
			assert.Equal(t, flags, log.Flags())

			got := strings.Join(c.msgs, "\n")
			assert.Contains(t, got, "WARN a GTK warning", "GLib's messages are routed")
			assert.NotContains(t, got, "a slog record", "the program's are not")
			assert.NotContains(t, got, "a log line")
			where := &logBuf
			if custom {
				// slog.SetDefault sent log's output into the program's handler.
				where = &appBuf
				assert.Contains(t, appBuf.String(), "app: a log line", "log.Print where it went before")
			} else {
				assert.Contains(t, logBuf.String(), "app: a log line\n", "log.Print as it was, prefix and flags")
			}
			assert.Contains(t, where.String(), "a slog record", "slog records where they went before")
			assert.Contains(t, where.String(), "k=1")
			assert.Contains(t, where.String(), "after stop", "a logger derived while routing is the program's")
			assert.NotContains(t, logBuf.String()+appBuf.String(), "a GTK warning")
		})
	}
}

func glibWarning(t *testing.T, domain, msg string) {
	t.Helper()
	looptest.Do(t, func(t testing.TB) {
		var b pygi.Block
		g := b.Globals(pygi.Kw{"domain": domain, "msg": msg})
		b.Exec(`from gi.repository import GLib
GLib.log_variant(domain or None, GLib.LogLevelFlags.LEVEL_WARNING, GLib.Variant("a{sv}", {"MESSAGE": GLib.Variant("s", msg)}))`, g)
		require.NoError(t, b.Err())
	})
}

// The tap under gotk4 holds up to what a program may do with slog and log
// meanwhile: make the tap its default again (slog.SetDefault(slog.Default()),
// after which log.Print went through the tap into slog's own handler and
// took the log package's lock twice), set a default of its own (a later
// RouteLogs taps that one), log records that look like GLib's.
func TestRouteLogsTapHoldsUp(t *testing.T) {
	prevOut, prevFlags, prevDefault := log.Writer(), log.Flags(), slog.Default()
	t.Cleanup(func() {
		slog.SetDefault(prevDefault)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	})
	var logBuf syncBuffer
	log.SetOutput(&logBuf)
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still blocked after 10 s (a deadlock on the log package's lock)", what)
		}
	}

	c := &capture{}
	stop, err := eventloop.RouteLogs(c)
	require.NoError(t, err)
	slog.SetDefault(slog.Default())
	within("log.Print while routing", func() { log.Print("one") })
	glibWarning(t, "", "a domainless GLib warning")
	slog.Info("the program's own record", "glib_domain", "mine")
	stop()
	within("log.Print after stop", func() { log.Print("two") })
	assert.Equal(t, io.Writer(&logBuf), log.Writer(), "log's output is the program's again")
	assert.Contains(t, logBuf.String(), "one\n")
	assert.Contains(t, logBuf.String(), "two\n")
	assert.Contains(t, logBuf.String(), "the program's own record glib_domain=mine", "the program's record is the program's")
	got := strings.Join(c.msgs, "\n")
	assert.Contains(t, got, "WARN a domainless GLib warning", "a GLib message without a domain is routed too")
	assert.NotContains(t, got, "the program's own record")

	// The program sets a default of its own: a RouteLogs from then on
	// taps that one.
	var appBuf syncBuffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&appBuf, nil)))
	c2 := &capture{}
	stop2, err := eventloop.RouteLogs(c2)
	require.NoError(t, err)
	glibWarning(t, "Gtk", "under the second routing")
	stop2()
	assert.Contains(t, strings.Join(c2.msgs, "\n"), "WARN under the second routing")
	assert.NotContains(t, appBuf.String(), "under the second routing")
}

// What a program does with log and slog while RouteLogs' tap is in comes
// out as it would without duet: records formatted as slog's own handler
// formats them (attributes quoted and grouped, the flags' file the
// record's caller), written where log's output is now, and after stop the
// log package as the program left it.
func TestRouteLogsTapIsTransparent(t *testing.T) {
	emit := func() { slog.Info("msg", "k", "a b", "e", "", slog.Group("g", "x", 1, "y", 2)) }
	for _, tc := range []struct {
		name  string
		setup func()       // before RouteLogs
		while func()       // while routing
		after func()       // after stop
		check func(string) // what the buffer the program logs to holds
	}{
		{name: "format", setup: func() { log.SetFlags(0) }, while: emit, check: func(got string) {
			assert.Equal(t, "INFO msg k=\"a b\" e=\"\" g.x=1 g.y=2\n", got)
		}},
		{name: "file flag", setup: func() { log.SetFlags(log.Lshortfile) }, while: func() { slog.Info("here") }, check: func(got string) {
			assert.Regexp(t, `^logs_test\.go:\d+: INFO here\n$`, got)
		}},
		{name: "set default to the default", setup: func() { log.SetFlags(log.Lmsgprefix); log.SetPrefix("app: ") },
			while: func() { slog.SetDefault(slog.Default()); log.Print("during") },
			after: func() { log.Print("after") },
			check: func(got string) {
				assert.Contains(t, got, "during\n")
				assert.Contains(t, got, "app: after\n", "log's flags and prefix as they were")
				assert.Equal(t, log.Lmsgprefix, log.Flags())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, flags, prefix, d := log.Writer(), log.Flags(), log.Prefix(), slog.Default()
			t.Cleanup(func() { slog.SetDefault(d); log.SetOutput(out); log.SetFlags(flags); log.SetPrefix(prefix) })
			var buf syncBuffer
			log.SetOutput(&buf)
			tc.setup()
			stop, err := eventloop.RouteLogs(&capture{})
			require.NoError(t, err)
			tc.while()
			stop()
			if tc.after != nil {
				tc.after()
			}
			tc.check(buf.String())
		})
	}

	t.Run("set output while routing", func(t *testing.T) {
		out, flags, prefix, d := log.Writer(), log.Flags(), log.Prefix(), slog.Default()
		t.Cleanup(func() { slog.SetDefault(d); log.SetOutput(out); log.SetFlags(flags); log.SetPrefix(prefix) })
		var before, now syncBuffer
		log.SetFlags(0)
		log.SetOutput(&before)
		stop, err := eventloop.RouteLogs(&capture{})
		require.NoError(t, err)
		log.SetOutput(&now)
		slog.Info("slog during")
		stop()
		assert.Equal(t, "INFO slog during\n", now.String(), "where log's output is now")
		assert.Empty(t, before.String())
	})

	t.Run("own default while routing", func(t *testing.T) {
		out, flags, prefix, d := log.Writer(), log.Flags(), log.Prefix(), slog.Default()
		t.Cleanup(func() { slog.SetDefault(d); log.SetOutput(out); log.SetFlags(flags); log.SetPrefix(prefix) })
		var logBuf, app syncBuffer
		log.SetOutput(&logBuf)
		stop, err := eventloop.RouteLogs(&capture{})
		require.NoError(t, err)
		slog.SetDefault(slog.New(slog.NewTextHandler(&app, nil)))
		stop()
		log.Print("after")
		assert.Contains(t, app.String(), "msg=after", "log.Print goes to the program's handler, as its SetDefault made it")
		assert.Empty(t, logBuf.String())
	})
}
