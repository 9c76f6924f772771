package widgets_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

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
