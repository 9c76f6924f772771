package pysrc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// code.bin is read at the first module load of every program: whatever its
// bytes, the outcome is an index or an error (every file then compiles as
// it loads), never a panic.
func TestParsePrecompiledTakesAnyBytes(t *testing.T) {
	h := precompiledHeader
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"empty", "", true},
		{"header only", h, true},
		{"one entry", h + "a.py\nsum\n3\nabc\n", true},
		{"another header", "duet precompiled python 0\n", false},
		{"truncated header fields", h + "a.py\nsum\n", false},
		{"length past the end", h + "a.py\nsum\n9\nabc\n", false},
		{"largest length", h + "a.py\nsum\n9223372036854775807\nabc\n", false},
		{"length overflowing int", h + "a.py\nsum\n99999999999999999999\nabc\n", false},
		{"negative length", h + "a.py\nsum\n-1\nabc\n", false},
		{"no newline after the code", h + "a.py\nsum\n3\nabcd", false},
		{"code cut short", h + "a.py\nsum\n3\nab", false},
		{"not a number", h + "a.py\nsum\nthree\nabc\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var idx map[string]compiled
			var err error
			require.NotPanics(t, func() { idx, err = parsePrecompiled(tc.in) })
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, "code.bin")
			assert.Nil(t, idx)
		})
	}
	idx, err := parsePrecompiled(h + "a.py\nsum\n3\nabc\nb.py\nsum2\n0\n\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]compiled{"a.py": {sum: "sum", code: "abc"}, "b.py": {sum: "sum2", code: ""}}, idx)
}
