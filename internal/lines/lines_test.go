package lines

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 100_000) // past bufio's buffer: read in chunks
	r := bufio.NewReaderSize(strings.NewReader("a\n"+long+"\n\nlast"), 16)
	for _, want := range []string{"a", long, "", "last"} {
		got, err := Read(r, 1<<20)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	_, err := Read(r, 1<<20)
	assert.Equal(t, io.EOF, err)

	_, err = Read(bufio.NewReader(strings.NewReader(long+"\n")), 1<<10)
	var tl *TooLongError
	require.True(t, errors.As(err, &tl))
	assert.Equal(t, "longer than the limit of 1024 bytes", err.Error())
	assert.Equal(t, "2 MiB", Words(2<<20))
}
