package explore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/duet-gtk/duet/internal/lines"
)

// Kind says what sort of trouble a Finding is.
type Kind string

// The kinds of finding.
const (
	// KindPanic: a Go panic in a handler or in work the loop ran.
	KindPanic Kind = "panic"
	// KindException: a Python exception nobody caught.
	KindException Kind = "exception"
	// KindLog: a GLib or GTK warning or critical.
	KindLog Kind = "log"
	// KindStall: an action whose handlers kept the UI thread longer than
	// Options.Stall.
	KindStall Kind = "stall"
	// KindLeak: a census row that grew at every one of Options.LeakRounds
	// rounds in a row.
	KindLeak Kind = "leak"
	// KindHang: the UI thread did not come back from an action within
	// Options.Hang; the run ends there (nothing more can be done), and
	// the program is likely stuck for good. cmd/duetexplore also says it
	// of a program still running well after its run's end.
	KindHang Kind = "hang"
	// KindCrash: the process died (a signal, a fatal Go error). The
	// explorer dies with it, so only a parent sees it: cmd/duetexplore
	// makes these findings, its Message names the signal.
	KindCrash Kind = "crash"
)

// An Action is one thing the explorer did, as a user would have.
type Action struct {
	// Verb is "click", "toggle", "type", "set", "pick", "page",
	// "select" (a list's row or item), "open" (a list's row or item
	// activated: Enter, a double click), "close" (a window) or
	// "activate" (an application's or window's action).
	Verb string `json:"verb"`
	// Address names the widget or action so that a run of the same
	// program finds it again: the window's title (or type), then one
	// segment per widget down the tree, its GType, its index among the
	// siblings of that type and what it reads ("window 'w' > GtkBox#0 >
	// GtkButton#1 'OK'"); for actions, "application > action app.name";
	// for closing a window, the window's own ("window 'w'"). A list's row
	// or item is not in it: the list is, the row's position is in Input.
	// Without what the widgets read ("window 'w' > GtkBox#0 >
	// GtkButton#1") it is the widget's structural key: coverage counts
	// widgets by it, and a replay that finds no candidate at the recorded
	// address takes the one with its structural key and verb (a label
	// that changed, "clicked 3 times" for "clicked 1 time").
	Address string `json:"address"`
	Label   string `json:"label,omitempty"`  // what the widget reads, for words
	Window  string `json:"window,omitempty"` // the window's title (or type)
	// WindowKey is the window's GType and its index among the visible
	// windows of that type, in the order they were made ("GtkWindow#1"):
	// what a replay finds the window by when its title, part of the
	// address, changed (the widget found below it by its structural key
	// then). Empty for the application's actions.
	WindowKey string `json:"window_key,omitempty"`
	Value     string `json:"value,omitempty"` // what was typed, set, picked, selected or opened
	// Input is what a replay needs to do it again as it was done (JSON:
	// the whole text typed and whether Enter ended it, the number set,
	// the item's or row's position, the page's index, the action's
	// parameter); none for a click, a toggle or a close. It is chosen
	// before the action is done: an action under way has it already.
	Input json.RawMessage `json:"input,omitempty"`
	// At is when it ran, since the exploration started.
	At time.Duration `json:"at_ns"`
}

// String says the action in words: "click 'A' in 'panic'".
func (a Action) String() string {
	what := a.Label
	if what == "" {
		what = lastType(a.Address)
	}
	var s string
	switch a.Verb {
	case "click":
		s = fmt.Sprintf("click %s", quote(what))
	case "toggle":
		s = fmt.Sprintf("turn %s %s", quote(what), a.Value)
	case "type":
		s = fmt.Sprintf("type %s into %s", a.Value, quote(what))
	case "set":
		s = fmt.Sprintf("set %s to %s", quote(what), a.Value)
	case "pick":
		s = fmt.Sprintf("pick %s in %s", quote(a.Value), quote(what))
	case "page":
		s = fmt.Sprintf("show page %s of %s", quote(a.Value), quote(what))
	case "select":
		s = fmt.Sprintf("select %s in %s", quote(a.Value), quote(what))
	case "open":
		s = fmt.Sprintf("open %s in %s", quote(a.Value), quote(what))
	case "close":
		s = "close window " + quote(a.Window)
		if a.Value != "" {
			s += " (" + a.Value + ")" // "refused": its close-request handler said no
		}
		return s
	case "activate":
		s = "activate " + a.Label
		if a.Value != "" {
			s += " with " + a.Value
		}
	default:
		s = a.Verb + " " + quote(what)
	}
	if a.Window != "" {
		s += " in " + quote(a.Window)
	}
	return s
}

func quote(s string) string { return "'" + s + "'" }

// lastType is the type of the last segment of an address.
func lastType(addr string) string {
	if i := strings.LastIndex(addr, " > "); i >= 0 {
		addr = addr[i+3:]
	}
	if i := strings.IndexAny(addr, "# "); i >= 0 {
		addr = addr[:i]
	}
	return addr
}

// A Finding is one piece of trouble and the actions that led to it.
type Finding struct {
	Kind Kind `json:"kind"`
	// Message is one line: the panic's value, the exception, the log
	// message, how long the stall was, the row that grew.
	Message string `json:"message"`
	// Where is the source line the trouble points at, when known: the
	// first frame of a Go panic outside the runtime and duet's library,
	// the innermost frame of a Python traceback, the handler's site of a
	// leaking callback.
	Where string `json:"where,omitempty"`
	// Detail is the rest: the Go stack, the traceback, the census rows.
	Detail string `json:"detail,omitempty"`
	// Trace is every action from the start of the run up to the one
	// after which the trouble was seen (cmd/duetexplore shrinks it).
	Trace []Action `json:"trace"`
	// Repeats counts the times the same trouble was seen again (when the
	// run goes on after a finding).
	Repeats int `json:"repeats,omitempty"`
	// At is when it was first seen, since the exploration started; zero
	// for a finding only a parent makes (cmd/duetexplore's crashes and
	// hangs).
	At time.Duration `json:"at_ns,omitempty"`

	key  string // what makes two findings the same trouble
	upto int    // how many actions of the run's trace led to it
}

// wordsShown bounds how many of a trace's last actions String spells out.
const wordsShown = 8

// String says the finding in plain words, its trace first: "click 'A' in
// 'panic', click 'B' → Go panic: assignment to entry in nil map
// (main.go:41)".
func (f *Finding) String() string {
	var b strings.Builder
	trace := f.Trace
	if n := len(trace) - wordsShown; n > 0 {
		fmt.Fprintf(&b, "(%d earlier actions) ", n)
		trace = trace[n:]
	}
	for i, a := range trace {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	if len(trace) == 0 {
		b.WriteString("(no action yet)")
	}
	b.WriteString(" → ")
	b.WriteString(f.Kind.words())
	b.WriteString(": ")
	b.WriteString(f.Message)
	if f.Where != "" {
		fmt.Fprintf(&b, " (%s)", f.Where)
	}
	if f.Repeats > 0 {
		fmt.Fprintf(&b, " [seen %d more times]", f.Repeats)
	}
	return b.String()
}

// Same says whether f and g are the same kind of trouble at the same
// place, as a replay or a shrunk trace must meet again: the same Kind and
// Where, and, where no place is known, the same Message (a stall's or a
// hang's message, which says how long, aside; addresses such as 0x4040a0c0
// in a message do not count). Two leaks are the same when the same thing
// leaked (the census table and row: the callback's name, the Python type,
// the GType; the callback's site is their Where), whatever the counts
// their messages say: a shorter trace leaks as much less as it does less.
func (f *Finding) Same(g *Finding) bool {
	if f == nil || g == nil || f.Kind != g.Kind || f.Where != g.Where {
		return false
	}
	if f.Kind == KindLeak {
		return leakIdentity(f.Message) == leakIdentity(g.Message)
	}
	return f.Where != "" || f.Kind == KindStall || f.Kind == KindHang || stable(f.Message) == stable(g.Message)
}

// leakGrew ends what a leak's message names (what leaked) and begins its
// counts, which people read and Same does not compare.
const leakGrew = " grew at each of "

// leakIdentity is what a leak's message says leaked, without the counts:
// `Python objects Go holds, of type "bytearray"`.
func leakIdentity(msg string) string {
	what, _, _ := strings.Cut(msg, leakGrew)
	return stable(what)
}

// Distinct says whether f and g are different troubles, as a run that
// goes on after a finding counts them (cmd/duetexplore -keep-going):
// stricter than Same, which says what a replay must meet again. Two
// findings are the same trouble only with the same Kind, the same Where
// and the same message, addresses (0x4040a0c0) and decimal numbers (a
// leak's counts, a stall's seconds) aside, even when Where is known (two
// panics on one line with different values are two bugs); and for a
// stall or a hang, whose place is seldom known, with the same action
// running too: the last of its trace, by verb and address.
func (f *Finding) Distinct(g *Finding) bool {
	if f == nil || g == nil {
		return f != g
	}
	return f.distinctKey() != g.distinctKey()
}

// numbers are what a message says that changes with the run: counts, and
// how long.
var numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// distinctKey is what Distinct compares.
func (f *Finding) distinctKey() string {
	what := numbers.ReplaceAllString(stable(f.Message), "N")
	if f.Kind == KindLeak {
		// What leaked, as Same has it: its name may have digits of its own
		// ("Vec2" is not "Vec3"), and only the counts are left out.
		what = leakIdentity(f.Message)
	}
	key := []string{string(f.Kind), f.Where, what}
	if f.Kind == KindStall || f.Kind == KindHang {
		var a Action
		if n := len(f.Trace); n > 0 {
			a = f.Trace[n-1]
		}
		key = append(key, a.Verb, a.Address)
	}
	return strings.Join(key, "\x00")
}

// addresses are what a message may say that differs from one run to the
// next of the same trouble: GTK's warnings name objects by address
// ("Trying to snapshot GtkGizmo 0x40409640 without a current allocation").
var addresses = regexp.MustCompile(`0x[0-9a-fA-F]{4,}`)

// stable is a message as two runs of the same trouble say it alike.
func stable(msg string) string { return addresses.ReplaceAllString(msg, "0x…") }

func (k Kind) words() string {
	switch k {
	case KindPanic:
		return "Go panic"
	case KindException:
		return "Python exception"
	case KindLog:
		return "GLib/GTK message"
	case KindStall:
		return "UI stall"
	case KindHang:
		return "hang"
	case KindLeak:
		return "leak"
	case KindCrash:
		return "crash"
	}
	return string(k)
}

// A Report is what a run did and found.
type Report struct {
	Seed     uint64        `json:"seed"`
	Trace    []Action      `json:"-"` // every action, in order (WriteJSON writes one line each)
	Findings []*Finding    `json:"-"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Seen counts the distinct widgets and actions (by structural key,
	// see Action.Address) the explorer could act on at some point,
	// Reached those it did act on: the run's coverage.
	Seen    int `json:"seen"`
	Reached int `json:"reached"`
	// Samples are the run's state over time (actions, live callbacks,
	// RSS, findings), in order; WriteJSON writes one line each, WritePlot
	// draws them.
	Samples []Sample `json:"-"`
	// A replay's outcome (Options.Replay): how many of the Recorded
	// actions it took (Replayed), why it stopped short (ReplayError: a
	// recorded address not found, or an action that could not be done as
	// recorded; not a finding), and whether Options.Expect came back.
	Recorded    int    `json:"recorded,omitempty"`
	Replayed    int    `json:"replayed,omitempty"`
	ReplayError string `json:"replay_error,omitempty"`
	Reproduced  bool   `json:"reproduced,omitempty"`
}

// String is the report in words: a summary line, then each finding.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "explore: seed %d: %d actions in %.1f s (%.1f/s), %d of %d widgets and actions reached: ",
		r.Seed, len(r.Trace), r.Elapsed.Seconds(), r.rate(), r.Reached, r.Seen)
	switch len(r.Findings) {
	case 0:
		b.WriteString("nothing found\n")
	case 1:
		b.WriteString("1 finding\n")
	default:
		fmt.Fprintf(&b, "%d findings\n", len(r.Findings))
	}
	if r.Recorded > 0 || r.ReplayError != "" {
		fmt.Fprintf(&b, "  replay: %d of %d recorded actions taken", r.Replayed, r.Recorded)
		if r.ReplayError != "" {
			fmt.Fprintf(&b, "; replay error: %s", r.ReplayError)
		}
		if r.Reproduced {
			b.WriteString("; the recorded finding came back")
		}
		b.WriteString("\n")
	}
	for i, f := range r.Findings {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, f)
	}
	return b.String()
}

// rate is the run's actions per second (0 for a run that took no time).
func (r *Report) rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Trace)) / r.Elapsed.Seconds()
}

// share is the part of the widgets and actions seen that the run reached,
// from 0 to 1 (0 when it saw none).
func (r *Report) share() float64 {
	if r.Seen <= 0 {
		return 0
	}
	return float64(r.Reached) / float64(r.Seen)
}

// WriteJSON writes the report as JSON lines, for tools: one {"action": ...}
// per action of the trace, one {"finding": ...} per finding, one
// {"sample": ...} per sample, then one {"summary": ...}, which adds to the
// report's numbers the counts of actions and findings, the actions per
// second ("actions_per_s") and the share of the widgets and actions seen
// that were reached ("coverage", from 0 to 1).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // addresses read "window > GtkBox#0 > ...", in a file for people too
	for i := range r.Trace {
		if err := enc.Encode(map[string]any{"action": &r.Trace[i]}); err != nil {
			return err
		}
	}
	for _, f := range r.Findings {
		if err := enc.Encode(map[string]any{"finding": f}); err != nil {
			return err
		}
	}
	for i := range r.Samples {
		if err := enc.Encode(map[string]any{"sample": &r.Samples[i]}); err != nil {
			return err
		}
	}
	type summary struct {
		*Report
		Actions     int     `json:"actions"`
		Findings    int     `json:"findings"`
		ActionsPerS float64 `json:"actions_per_s"`
		Coverage    float64 `json:"coverage"`
	}
	round := func(v float64, places float64) float64 {
		p := math.Pow(10, places)
		return math.Round(v*p) / p
	}
	return enc.Encode(map[string]any{"summary": summary{r, len(r.Trace), len(r.Findings), round(r.rate(), 2), round(r.share(), 3)}})
}

// MaxLine bounds a line ReadReport reads: a finding's line holds its whole
// trace and its detail (a goroutine dump), so it may be long, but a line
// longer than this is taken for a broken file rather than read on.
const MaxLine = 256 << 20

// maxLine is MaxLine, a variable so that a test can lower it.
var maxLine = MaxLine

// ReadReport reads what WriteJSON wrote (a file DUET_EXPLORE_OUT names):
// the trace, the findings, the samples and the summary's numbers. Lines it
// does not know are skipped (and a file without samples reads without);
// a line that is not JSON is an error, and so is one longer than MaxLine.
func ReadReport(r io.Reader) (*Report, error) {
	rep := &Report{}
	br := bufio.NewReader(r)
	n := 0
	for {
		raw, err := lines.Read(br, maxLine)
		if err == io.EOF {
			break
		}
		n++
		if err != nil {
			return nil, fmt.Errorf("explore: line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var line struct {
			Action  *Action
			Finding *Finding
			Sample  *Sample
			Summary *Report
		}
		if err := json.Unmarshal(raw, &line); err != nil {
			return nil, fmt.Errorf("explore: line %d: %w", n, err)
		}
		switch {
		case line.Action != nil:
			rep.Trace = append(rep.Trace, *line.Action)
		case line.Finding != nil:
			rep.Findings = append(rep.Findings, line.Finding)
		case line.Sample != nil:
			rep.Samples = append(rep.Samples, *line.Sample)
		case line.Summary != nil:
			trace, findings, samples := rep.Trace, rep.Findings, rep.Samples
			*rep = *line.Summary
			rep.Trace, rep.Findings, rep.Samples = trace, findings, samples
		}
	}
	return rep, nil
}

func readReportFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadReport(f)
}
