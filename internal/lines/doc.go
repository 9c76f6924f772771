// Package lines reads the JSON-lines files duet writes and reads back (an
// explorer's report, its streamed trace, a replay file): one line at a
// time, of any length up to a limit, which bufio.Scanner's token size
// (16 MiB at most) is not.
package lines
