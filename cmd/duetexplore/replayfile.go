package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/duet-gtk/duet/explore"
)

// readReplayFile reads a replay file (-o's, or DUET_EXPLORE_OUT's) for
// -replay, and refuses one that is not whole. explore.ReadReport skips
// what it does not know and takes what it finds, so an empty file, or one
// cut at a line's end, would read as a shorter trace (or none) and replay
// as if it were the recorded one. explore.Report.WriteJSON ends the file
// with its summary, which counts the actions and findings before it: a
// file must end with that summary, and have those counts.
func readReplayFile(path string) (*explore.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty: not a replay file", path)
	}
	var actions, findings int
	var summary *struct{ Actions, Findings *int }
	br := bufio.NewReader(bytes.NewReader(data))
	for n := 1; ; n++ {
		raw, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var line map[string]json.RawMessage
		if err := json.Unmarshal(raw, &line); err != nil {
			return nil, fmt.Errorf("%s: line %d: not a JSON object: %w", path, n, err)
		}
		if summary != nil {
			return nil, fmt.Errorf("%s: line %d: a line after the summary (the summary is the last line)", path, n)
		}
		_, act := line["action"]
		_, beat := line["beat"]
		_, end := line["end"]
		if _, n := line["n"]; n && act || beat || end {
			return nil, fmt.Errorf("%s: a DUET_EXPLORE_TRACE stream, not a replay file (replay the file -o or DUET_EXPLORE_OUT names)", path)
		}
		switch {
		case act:
			var a struct{ Verb, Address string }
			if err := json.Unmarshal(line["action"], &a); err != nil || a.Verb == "" || a.Address == "" {
				return nil, fmt.Errorf("%s: line %d: an action without its verb and address", path, n)
			}
			actions++
		case line["finding"] != nil:
			findings++
		case line["summary"] != nil:
			if err := json.Unmarshal(line["summary"], &summary); err != nil || summary == nil {
				return nil, fmt.Errorf("%s: line %d: a summary that does not read: %v", path, n, err)
			}
		}
	}
	switch {
	case summary == nil:
		return nil, fmt.Errorf("%s: cut short: no summary line at its end (%d actions and %d findings before the cut)", path, actions, findings)
	case summary.Actions == nil || summary.Findings == nil:
		return nil, fmt.Errorf("%s: its summary does not count its actions and findings", path)
	case *summary.Actions != actions || *summary.Findings != findings:
		return nil, fmt.Errorf("%s: cut: its summary counts %d actions and %d findings, the file has %d and %d", path, *summary.Actions, *summary.Findings, actions, findings)
	}
	rep, err := explore.ReadReport(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}
