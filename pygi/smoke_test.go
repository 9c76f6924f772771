package pygi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	m, err := Import("math")
	require.NoError(t, err)
	r, err := m.CallMethod("sqrt", 16)
	require.NoError(t, err)
	f, err := r.Float()
	require.NoError(t, err)
	require.Equal(t, 4.0, f)
	_, err = m.CallMethod("sqrt", "x")
	require.Error(t, err)
	t.Log(err)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	t.Log(pe.Traceback, pe.MRO)
}

func childMain(string) int { return 0 }
