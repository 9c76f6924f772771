package eventloop_test

import (
	"context"
	"log/slog"
	"strconv"
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

// capture is a slog.Handler that keeps what it is given.
type capture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *capture) WithGroup(string) slog.Handler            { return c }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.recs = append(c.recs, r.Clone())
	c.mu.Unlock()
	return nil
}

// find returns the first record whose message contains text, with its
// attributes as strings.
func (c *capture) find(text string) (slog.Record, map[string]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.recs {
		if strings.Contains(r.Message, text) {
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool {
				if s, ok := a.Value.Any().(*slog.Source); ok {
					attrs["file"], attrs["line"] = s.File, strconv.Itoa(s.Line)
					return true
				}
				attrs[a.Key] = a.Value.String()
				return true
			})
			return r, attrs, true
		}
	}
	return slog.Record{}, nil, false
}

func TestRouteLogs(t *testing.T) {
	c := &capture{}
	stop, err := eventloop.RouteLogs(c)
	require.NoError(t, err)
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.ExecFile(`
import warnings, logging, threading
from gi.repository import GLib
def channels():
    warnings.warn("careful now")                                  # line 5
    logging.getLogger("duet.test").error("boom %d", 42)           # line 6
    logging.getLogger("duet.test").info("below WARNING: dropped")
    class Noisy:
        def __del__(self):
            raise ValueError("raised in __del__")
    Noisy()
    GLib.log_variant("duet-test", GLib.LogLevelFlags.LEVEL_WARNING,
                     GLib.Variant("a{sv}", {"MESSAGE": GLib.Variant("s", "from GLib")}))
`, "channels.py", g))
	f, err := g.Item("channels")
	require.NoError(t, err)
	looptest.Do(t, func(t testing.TB) {
		r, err := f.Call()
		require.NoError(t, err)
		r.Close()
	})

	r, a, ok := c.find("careful now")
	require.True(t, ok, "warnings.warn")
	assert.Equal(t, slog.LevelWarn, r.Level)
	assert.Equal(t, "py.warnings", a["logger"])
	assert.Contains(t, r.Message, "UserWarning")
	assert.Equal(t, "channels.py", a["file"])
	assert.Equal(t, "5", a["line"])
	assert.Equal(t, "MainThread", a["thread"])

	r, a, ok = c.find("boom 42")
	require.True(t, ok, "logging")
	assert.Equal(t, slog.LevelError, r.Level)
	assert.Equal(t, "duet.test", a["logger"])
	assert.Equal(t, "6", a["line"])
	_, _, ok = c.find("dropped")
	assert.False(t, ok, "logging's own level filtering stays (root is WARNING)")

	r, a, ok = c.find("raised in __del__")
	require.True(t, ok, "unraisable")
	assert.Equal(t, slog.LevelError, r.Level)
	assert.Equal(t, "py.unraisable", a["logger"])

	r, a, ok = c.find("from GLib")
	require.True(t, ok, "GLib log message")
	assert.Equal(t, slog.LevelWarn, r.Level)
	assert.Equal(t, "glib", a["logger"])
	assert.Equal(t, "duet-test", a["glib_domain"])

	// Stopped: nothing more reaches the handler.
	stop()
	c.mu.Lock()
	n := len(c.recs)
	c.mu.Unlock()
	require.NoError(t, pygi.Exec("import logging\nlogging.getLogger('duet.test').critical('after stop: stderr')\n", nil))
	time.Sleep(10 * time.Millisecond)
	c.mu.Lock()
	assert.Len(t, c.recs, n)
	c.mu.Unlock()
}
