package eventloop_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

const gen2Py = `
import gc
keep = [[] for _ in range(1000000)]
gc.collect()
` + cyclicGarbagePy + `
full0 = gc.get_stats()[2]["collections"]
`

// The loop's collections follow CPython's collect_generations, with its
// long-lived guard (a full collection only once the objects surviving
// gen 1 since the last full one are 25% of the long-lived ones): without
// it, with a large heap, the loop ran full collections far more often
// than CPython does, each one a pause of the UI thread.
func TestFullCollectionsFollowCPython(t *testing.T) {
	defer watchdog(t, 2*time.Minute)()
	const body = "garbage(300000)\n"
	ref, err := exec.Command("/usr/bin/python3", "-c", gen2Py+body+"print(gc.get_stats()[2]['collections'] - full0)").CombinedOutput()
	require.NoError(t, err, "%s", ref)
	g, err := pygi.NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, pygi.Exec(gen2Py, g))
	// Made on the UI thread in chunks, so that the loop collects between them.
	for range 2000 {
		require.NoError(t, eventloop.InvokeWait(t.Context(), func() error { return pygi.Exec("garbage(150)", g) }))
	}
	r, err := pygi.Eval("gc.get_stats()[2]['collections'] - full0", g)
	require.NoError(t, err)
	n, _ := pygi.As[int64](r)
	r.Close()
	t.Logf("full collections: CPython %s, duet's loop %d", strings.TrimSpace(string(ref)), n)
	require.NoError(t, pygi.Exec("del keep", g))
	assert.LessOrEqual(t, n, int64(2), "the loop ran full collections CPython would not have run")
}
