package forensics

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// EnableCrashReports turns crash reports on, written to stderr and to a
// file, and returns the file's path. With path "" the file is a new one in
// duet's private directory ($XDG_STATE_HOME/duet/crash-reports, mode
// 0700, the user's own), with a name no one can predict, and it exists
// only once a crash has written it (the directory keeps the newest 100
// reports, see the package doc). A path names the file instead: one
// that exists is appended to (and never removed) when it is the user's own
// regular file, readable by the user alone, with no other name, or a
// character device; one that does not exist is created by a crash; a
// symbolic link, a FIFO, or a file another user could read is refused. It also turns on the
// ring of crossings and callback provenance. Safe to call again (to change
// the file). When no file can be had, reports still go to stderr and the
// error says why.
func EnableCrashReports(path string) (string, error) { return diag.EnableCrashReports(path) }

// CrashReportPath is where the report file is, or will be when a crash
// writes it; "" when there is none (crash reports off).
func CrashReportPath() string { return diag.CrashReportPath() }

// SetProvenance turns the recording of callbacks' creation sites on or
// off for callbacks made from now on (on with crash reports and with
// DUET_DEBUG=callbacks; what it adds to each callback made is make bench's
// "callback provenance" row).
func SetProvenance(on bool) { diag.SetProvenance(on) }

// SetDebugCallbacks is DUET_DEBUG=callbacks from code: callbacks freed from
// now on are quarantined, and a call into one stops the process with a
// diagnosis. It turns provenance on too.
func SetDebugCallbacks(on bool) {
	diag.SetDebugCallbacks(on)
	capi.SetDebugCallbacks(on)
	if on {
		diag.SetProvenance(true)
	}
}

// A Crossing is one recorded boundary crossing.
type Crossing struct {
	Seq    uint64 // 1 for the first crossing recorded in the process
	Thread int    // the OS thread id
	Main   bool   // the process's main (UI) thread
	Kind   string // the entry point ("call", "getattr", ...), or "Python calls Go", "signal calls Go", "callback freed by ..."
	What   string // the Python type (and attribute or method), callback name, signal
}

// Crossings returns the last n recorded crossings (at most 256), oldest
// first; empty while the ring is off.
func Crossings(n int) []Crossing {
	pid := os.Getpid()
	var out []Crossing
	for _, c := range capi.Ring(min(n, 256)) {
		out = append(out, Crossing{Seq: c.Seq, Thread: int(c.Thread), Main: int(c.Thread) == pid, Kind: c.Kind, What: c.What})
	}
	return out
}

// SetRing turns the recording of crossings on or off by itself
// (EnableCrashReports turns it on).
func SetRing(on bool) { capi.SetRing(on) }

// ---- census ----------------------------------------------------------------------

// A Count is one row of a census table.
type Count struct {
	Name string `json:"name"`           // callback name, Python type or GType
	Site string `json:"site,omitempty"` // callbacks only: where it was made (file:line)
	N    int    `json:"n"`
}

func (c Count) key() string { return c.Name + "\x00" + c.Site }

// A Census is what lives now, as duet sees it.
type Census struct {
	At          time.Duration `json:"at_ns"`       // since the process started
	Callbacks   []Count       `json:"callbacks"`   // Go callbacks alive, by name and creation site
	PyObjects   []Count       `json:"python"`      // Python objects Go holds references to, by Python type
	GObjects    []Count       `json:"gobjects"`    // GObjects alive that duet tracks or watches, by GType (package widgets)
	Quarantined int           `json:"quarantined"` // freed callbacks kept in quarantine (DUET_DEBUG=callbacks)
}

// TakeCensus counts what lives now. Safe from any goroutine; the GObjects
// table is exact on the UI thread (elsewhere an object may finalise while
// it is counted: it is then counted or not).
func TakeCensus() (*Census, error) {
	c := &Census{At: time.Since(diag.Start), Quarantined: capi.Quarantined()}
	for _, l := range diag.CallbackCensus.Read() {
		c.Callbacks = append(c.Callbacks, Count{Name: l.Name, Site: l.Site, N: l.Count})
	}
	refs, err := censusRefs()
	if err != nil {
		return nil, err
	}
	c.PyObjects = table(refs)
	if g := diag.GObjectCensus.Read(); g != nil {
		c.GObjects = table(g)
	}
	return c, nil
}

func table(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Name: k, N: n})
	}
	sortCounts(out)
	return out
}

func sortCounts(t []Count) {
	slices.SortFunc(t, func(a, b Count) int {
		if a.N != b.N {
			return b.N - a.N
		}
		return cmp.Compare(a.key(), b.key())
	})
}

func censusRefs() (map[string]int, error) {
	if err := lifetime.Enter(); err != nil {
		return nil, err
	}
	defer lifetime.Exit()
	r, st, exc := capi.CensusRefs()
	switch st {
	case capi.OK:
	case capi.Err:
		return nil, pyobj.Error(exc)
	default:
		return nil, errors.New("forensics: census of references failed")
	}
	o := pyobj.Owned(r)
	defer o.Close()
	// The dict is made from the slots before Go holds it: it counts nothing
	// of its own.
	return pygi.As[map[string]int](o)
}

// A Change is a row whose count differs between two censuses.
type Change struct {
	Table string `json:"table"` // "callbacks", "python", "gobjects"
	Name  string `json:"name"`
	Site  string `json:"site,omitempty"`
	From  int    `json:"from"`
	To    int    `json:"to"`
}

// Grew lists the rows that grew since mark (an earlier census), most
// growth first.
func (c *Census) Grew(mark *Census) []Change {
	var out []Change
	for _, t := range []struct {
		name     string
		now, was []Count
	}{{"callbacks", c.Callbacks, mark.Callbacks}, {"python", c.PyObjects, mark.PyObjects}, {"gobjects", c.GObjects, mark.GObjects}} {
		was := map[string]int{}
		for _, r := range t.was {
			was[r.key()] = r.N
		}
		for _, r := range t.now {
			if r.N > was[r.key()] {
				out = append(out, Change{Table: t.name, Name: r.Name, Site: r.Site, From: was[r.key()], To: r.N})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int { return (b.To - b.From) - (a.To - a.From) })
	return out
}
