package scroll

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The scroll goes from the top to the bottom in whole steps, the last one
// clamped, and nothing moves before Arm or after the bottom.
func TestTickScrollsToTheBottom(t *testing.T) {
	var r Recorder
	const upper, page = 2000.0, 100.0
	_, ok := r.Tick(0, upper, page)
	assert.False(t, ok, "not armed yet")
	r.Arm()
	var steps []float64
	v := 0.0
	for range 10 {
		r.BeforePaint()
		next, ok := r.Tick(v, upper, page)
		if !ok {
			break
		}
		steps = append(steps, next)
		v = next
		if r.AfterPaint() {
			break
		}
	}
	assert.Equal(t, []float64{500, 1000, 1500, 1900}, steps)
	_, ok = r.Tick(v, upper, page)
	assert.False(t, ok, "done")
}

// Line has the figures make bench reads (stress/bench's scroll), one per
// field, in the order bench.py's Recorder.line writes them.
func TestLineFields(t *testing.T) {
	var r Recorder
	r.Arm()
	r.BeforePaint()
	r.Tick(0, 100, 100)
	r.Handler(time.Now(), true, true)
	r.AfterPaint()
	f := strings.Fields(r.Line())
	assert.Len(t, f, 14)
	assert.Equal(t, "1", f[0], "frames")
	assert.Equal(t, "1", f[11], "binds")
	assert.Equal(t, "1", f[12], "setups")
}
