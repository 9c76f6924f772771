package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/duet-gtk/duet/explore"
)

// maxLine bounds a line of the files the driver reads (the streamed trace,
// a replay file): explore.MaxLine, as explore.ReadReport's; a variable so
// that a test can lower it.
var maxLine = explore.MaxLine

// readLine reads one line of any length up to maxLine, without its
// newline; io.EOF once there is none left (a last line without a newline
// is a line).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > maxLine {
			return nil, fmt.Errorf("a line longer than the limit of %d bytes", maxLine)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}
