package lifetime

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/duet-gtk/duet/internal/capi"
)

// C's fast entry (capi.Call0) reads the gate's word with its own idea of
// the encoding: it must be this package's.
func TestGateEncodingIsCs(t *testing.T) {
	assert.Equal(t, int64(Ready), int64(capi.GateReady))
	assert.Equal(t, int64(phaseShift), int64(capi.GatePhaseShift))
	s := int64(Ready)<<phaseShift | 5
	assert.Equal(t, Ready, phaseOf(s))
	assert.Equal(t, int64(5), countOf(s))
}
