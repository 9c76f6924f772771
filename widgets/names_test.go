package widgets_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/widgets"
	"github.com/duet-gtk/duet/widgets/kit"
)

// unnamed matches the names callbacks derives for a func literal (funcN,
// gowrapN, callbackN).
var unnamed = regexp.MustCompile(`^callback\d*$|(^|_)(func|gowrap)\d+(_|$)`)

// Every callback widgets makes for itself (the connect hooks, the census
// window's source, ...) says what it is in the census: a name of its own.
func TestWidgetsOwnCallbacksAreNamed(t *testing.T) {
	var live []diag.Live
	looptest.Do(t, func(t testing.TB) {
		require.NoError(t, widgets.InitGTK())
		_, err := kit.ShowCensus(nil)
		require.NoError(t, err)
		defer hooks.CloseCensus()
		chart, err := kit.NewLineChart("named", "", 10)
		require.NoError(t, err)
		chart.Push("a", 1)
		live = diag.CallbackCensus.Read()
	})
	names := map[string]bool{}
	for _, l := range live {
		names[l.Name] = true
		if strings.HasPrefix(l.Site, "widgets/") && !strings.Contains(l.Site, "_test.go") {
			assert.NotRegexp(t, unnamed, l.Name, "widgets made a callback without a name (callbacks.Name): %+v", l)
		}
	}
	for _, want := range []string{"census", "duet_toplevels_changed", "duet_record_connection", "duet_connect_native"} {
		assert.True(t, names[want], "%s is alive (what the test covers): %v", want, live)
	}
}
