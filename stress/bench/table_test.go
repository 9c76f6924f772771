package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// README's performance table is make bench's output: every row there is a
// row the bench defines, with the aim set for it, and every row the bench
// defines is there.
func TestReadmeTableIsTheBenchs(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(b)
	i, j := strings.Index(readme, beginMark), strings.Index(readme, endMark)
	require.True(t, i >= 0 && j > i, "README has the make bench markers")
	block := readme[i+len(beginMark) : j]
	require.Contains(t, block, "Measured ", "the block holds a make bench run")
	type row struct{ title, aim string }
	var got []row
	for _, line := range strings.Split(block, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 7 || strings.TrimSpace(cells[1]) == "comparison" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		got = append(got, row{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[5])})
	}
	var want []row
	for _, c := range newTable().rows() {
		n := len(c.sides) - 1
		if c.text != nil || n < 1 || c.unit == "µs" {
			n = 1
		}
		for range n {
			want = append(want, row{c.title, c.aim})
		}
	}
	assert.Equal(t, want, got, "run make bench to regenerate README's table")
}

func TestReplaceBlock(t *testing.T) {
	s, err := replaceBlock("a\n"+beginMark+"\nold\n"+endMark+"\nb", "new\n")
	require.NoError(t, err)
	assert.Equal(t, "a\n"+beginMark+"\nnew\n"+endMark+"\nb", s)
	_, err = replaceBlock("no markers", "x")
	assert.Error(t, err)
}
