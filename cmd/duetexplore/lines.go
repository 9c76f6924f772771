package main

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/duet-gtk/duet/explore"
	"github.com/duet-gtk/duet/internal/lines"
)

// maxLine bounds a line of the files the driver reads (the streamed trace,
// a replay file): explore.MaxLine, as explore.ReadReport's; a variable so
// that a test can lower it.
var maxLine = explore.MaxLine

// readLine reads one line of any length up to maxLine, without its
// newline (lines.Read, with the limit in bytes in its error).
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := lines.Read(r, maxLine)
	if tl := (*lines.TooLongError)(nil); errors.As(err, &tl) {
		return nil, fmt.Errorf("a line longer than the limit of %d bytes", tl.Limit)
	}
	return line, err
}
