package reload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each reload is one line, which says what was applied and names what
// needs a restart, owner by owner, even when an error's message or a
// reason has several lines.
func TestLineIsOneLine(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want string
	}{
		{Result{Path: "/a/feed.py", Outcome: Applied, Functions: 1, Methods: 2},
			"duet reload: feed.py: applied (1 function, 2 methods)"},
		{Result{Path: "/a/form.ui", Outcome: Applied, Objects: 3},
			"duet reload: form.ui: applied (3 objects rebuilt)"},
		{Result{Path: "/a/feed.py", Outcome: Restart, Methods: 1, Restart: []string{"Row: property 'count' added", "Feed: do_snapshot is new: GTK calls it only in a new process"}},
			"duet reload: feed.py: applied (1 method); restart needed: Row: property 'count' added; Feed: do_snapshot is new: GTK calls it only in a new process"},
		{Result{Path: "/a/feed.py", Outcome: Restart, Restart: []string{"Row: its bases changed"}},
			"duet reload: feed.py: restart needed: Row: its bases changed"},
		{Result{Path: "/a/form.ui", Outcome: Restart, Objects: 2, Restart: []string{"form.ui: ValueError: no\n  good\r\n"}},
			"duet reload: form.ui: applied (2 objects rebuilt); restart needed: form.ui: ValueError: no good"},
		{Result{Path: "/a/feed.py", Outcome: KeptOld, Error: "RuntimeError: two\nlines (line 3)", Traceback: "Traceback ...\n"},
			"duet reload: feed.py: kept the old code: RuntimeError: two lines (line 3) (traceback follows)"},
		{Result{Path: "/a/feed.py", Outcome: Skipped, Error: "the module was loaded again since"},
			"duet reload: feed.py: not reloaded: the module was loaded again since"},
	} {
		got := line(&c.res)
		assert.Equal(t, c.want, got)
		assert.False(t, strings.ContainsAny(got, "\r\n"), got)
	}
}
