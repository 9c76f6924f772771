package explore

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A replay file whose path has a comma (a TMPDIR, a package's directory)
// is given quoted; the comma inside does not end the option, and the
// options after it are read.
func TestParseOptionsQuotedPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), `a,b "c"`)
	require.NoError(t, os.Mkdir(dir, 0o777))
	file := filepath.Join(dir, "trace.jsonl")
	f, err := os.Create(file)
	require.NoError(t, err)
	rep := &Report{Trace: []Action{{Verb: "click", Address: "window 'w' > GtkButton#0 'A'"}}}
	require.NoError(t, rep.WriteJSON(f))
	require.NoError(t, f.Close())

	o, err := ParseOptions("replay=" + strconv.Quote(file) + ",strict,seed=3")
	require.NoError(t, err)
	assert.Len(t, o.Replay, 1)
	assert.True(t, o.ReplayStrict)
	assert.Equal(t, uint64(3), o.Seed)

	_, err = ParseOptions("replay=" + file + ",seed=3")
	assert.Error(t, err, "unquoted, the comma ends the path")
	_, err = ParseOptions(`replay="/tmp/x,seed=3`)
	assert.ErrorContains(t, err, "a quoted value is a Go string literal")
}
