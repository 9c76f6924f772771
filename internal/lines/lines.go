package lines

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// TooLongError is Read's error for a line longer than its limit.
type TooLongError struct{ Limit int }

func (e *TooLongError) Error() string { return "longer than the limit of " + Words(e.Limit) }

// Read reads one line of at most limit bytes, without its newline; io.EOF
// once there is none left (a last line without a newline is a line).
func Read(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > limit {
			return nil, &TooLongError{limit}
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

// Words says n bytes in MiB when it is a whole number of them.
func Words(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
