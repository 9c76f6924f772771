package explore

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A line longer than bufio.Scanner's buffer (a finding whose detail is a
// large goroutine dump) reads back whole; one over the limit is an error
// that names the limit, not a report cut short in silence.
func TestReadReportLongLines(t *testing.T) {
	detail := strings.Repeat("goroutine 1 [running]:\n", (17<<20)/23+1) // over 16 MiB
	rep := &Report{Seed: 7, Trace: []Action{{Verb: "click", Address: "window 'w' > GtkButton#0 'A'"}},
		Findings: []*Finding{{Kind: KindPanic, Message: "boom", Detail: detail}}}
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	back, err := ReadReport(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Len(t, back.Findings, 1)
	assert.Equal(t, detail, back.Findings[0].Detail)
	assert.Len(t, back.Trace, 1)
	assert.Equal(t, uint64(7), back.Seed, "the summary after the long line is read too")

	// A last line without its newline is still a line.
	back, err = ReadReport(bytes.NewReader(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
	require.NoError(t, err)
	assert.Equal(t, uint64(7), back.Seed)

	old := maxLine
	maxLine = 1 << 20
	t.Cleanup(func() { maxLine = old })
	_, err = ReadReport(bytes.NewReader(buf.Bytes()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 2: longer than the limit of 1 MiB")
}
