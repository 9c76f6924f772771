package widgets_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// A widget module named like a module Python already has (the standard
// library's calendar) is refused, never registered over it; loading one's
// own module again replaces it, and a failed load keeps what was there.
func TestLoadedModulesNeverShadowPythons(t *testing.T) {
	dir := t.TempDir()
	cal := filepath.Join(dir, "ui", "calendar.py")
	require.NoError(t, os.MkdirAll(filepath.Dir(cal), 0o755))
	require.NoError(t, os.WriteFile(cal, []byte("WIDGET = 'mine'\n"), 0o644))
	mine := filepath.Join(dir, "duet_test_panel.py")
	require.NoError(t, os.WriteFile(mine, []byte("VERSION = 1\n"), 0o644))
	looptest.Do(t, func(t testing.TB) {
		_, err := widgets.LoadFile(cal)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "'calendar'")
		assert.Contains(t, err.Error(), "shadow")
		r, err := pygi.Eval("(__import__('http.cookiejar'), __import__('calendar').__file__)[1]", nil)
		require.NoError(t, err, "the standard library's calendar still imports, and what needs it")
		assert.Contains(t, r.String(), "/usr/lib/python3")

		m, err := widgets.LoadFile(mine)
		require.NoError(t, err)
		m.Close()
		require.NoError(t, os.WriteFile(mine, []byte("VERSION = 2\n"), 0o644))
		m, err = widgets.LoadFile(mine)
		require.NoError(t, err, "its own module again: replaced")
		m.Close()
		require.NoError(t, os.WriteFile(mine, []byte("VERSION = 3\nraise RuntimeError('broken')\n"), 0o644))
		_, err = widgets.LoadFile(mine)
		require.Error(t, err)
		v, err := pygi.Eval("__import__('duet_test_panel').VERSION", nil)
		require.NoError(t, err)
		n, _ := pygi.As[int64](v)
		assert.Equal(t, int64(2), n, "a failed load keeps the module that was there")
	})
}
