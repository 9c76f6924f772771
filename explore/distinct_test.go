package explore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Distinct is stricter than Same: Same is what a replay must meet again,
// Distinct what a run that goes on counts as two troubles.
func TestDistinct(t *testing.T) {
	a := Action{Verb: "click", Address: "window 'w' > GtkBox#0 > GtkButton#4 'A'", Label: "A"}
	b := Action{Verb: "click", Address: "window 'w' > GtkBox#0 > GtkButton#5 'B'", Label: "B"}
	stall := func(msg string, trace ...Action) *Finding {
		return &Finding{Kind: KindStall, Message: msg, Trace: trace}
	}
	for _, tc := range []struct {
		name     string
		f, g     *Finding
		distinct bool
	}{
		{"one panic", &Finding{Kind: KindPanic, Message: "boom", Where: "main.go:3"}, &Finding{Kind: KindPanic, Message: "boom", Where: "main.go:3"}, false},
		{"two panics on one line", &Finding{Kind: KindPanic, Message: "nil map", Where: "main.go:3"}, &Finding{Kind: KindPanic, Message: "closed channel", Where: "main.go:3"}, true},
		{"panics at two lines", &Finding{Kind: KindPanic, Message: "boom", Where: "main.go:3"}, &Finding{Kind: KindPanic, Message: "boom", Where: "main.go:4"}, true},
		{"addresses aside", &Finding{Kind: KindLog, Message: "GtkGizmo 0x40409640 without"}, &Finding{Kind: KindLog, Message: "GtkGizmo 0x5050a0a0 without"}, false},
		{"a leak's counts aside", &Finding{Kind: KindLeak, Message: `live Go callbacks "x" grew at each of 5 censuses, 20 or more actions apart: 3 → 8`, Where: "main.go:9"}, &Finding{Kind: KindLeak, Message: `live Go callbacks "x" grew at each of 5 censuses, 20 or more actions apart: 4 → 12`, Where: "main.go:9"}, false},
		{"two leaking rows", &Finding{Kind: KindLeak, Message: `live Go callbacks "x" grew at each of 5 censuses, 20 or more actions apart: 3 → 8`, Where: "main.go:9"}, &Finding{Kind: KindLeak, Message: `live Go callbacks "y" grew at each of 5 censuses, 20 or more actions apart: 3 → 8`, Where: "main.go:9"}, true},
		{"one stall, two durations", stall("the action kept the UI thread for 1.02 s (more than 300ms)", a, b), stall("the action kept the UI thread for 1.31 s (more than 300ms)", b), false},
		{"leaks of two types whose names differ by a digit", &Finding{Kind: KindLeak, Message: `GObjects of type "Vec2" grew at each of 5 censuses, 20 or more actions apart: 3 → 8`}, &Finding{Kind: KindLeak, Message: `GObjects of type "Vec3" grew at each of 5 censuses, 20 or more actions apart: 3 → 8`}, true},
		{"two stalls, two actions", stall("the action kept the UI thread for 1.02 s (more than 300ms)", a), stall("the action kept the UI thread for 1.02 s (more than 300ms)", b), true},
		{"a stall in the handler, one after", stall("the action kept the UI thread for 1.02 s (more than 1s)", a), stall("the UI thread was busy for 1.02 s after the action (work it queued; more than 1s)", a), true},
		{"two hangs", &Finding{Kind: KindHang, Message: "no progress for 14 s", Trace: []Action{a}}, &Finding{Kind: KindHang, Message: "no progress for 13 s", Trace: []Action{b}}, true},
		{"two kinds", &Finding{Kind: KindPanic, Message: "x"}, &Finding{Kind: KindException, Message: "x"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.distinct, tc.f.Distinct(tc.g))
			assert.Equal(t, tc.distinct, tc.g.Distinct(tc.f), "symmetric")
		})
	}
	// Where Distinct is stricter than Same: a replay still meets these.
	assert.True(t, stall("x", a).Same(stall("x", b)))
	p, q := &Finding{Kind: KindPanic, Message: "nil map", Where: "main.go:3"}, &Finding{Kind: KindPanic, Message: "closed channel", Where: "main.go:3"}
	assert.True(t, p.Same(q))
}
