package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/duet-gtk/duet/internal/diag"
)

// A twin is a scenario's workload written in pure PyGObject, run by python3
// beside the scenario in the same run: growth both show (GTK's, Xvfb's) is
// not duet's. The report gives both RSS slopes, and the judge holds duet to
// the bound over what its twin grows.

// TwinRun is what the twin did.
type TwinRun struct {
	Iterations int64    `json:"iterations"`
	RSS        RSS      `json:"rss"`
	Samples    []Sample `json:"samples"`
	Err        string   `json:"error,omitempty"`
}

// twin runs sc's twin for the scenario's duration; done gets its outcome.
func startTwin(sc Scenario, o Options) (done <-chan *TwinRun, stop func()) {
	ch := make(chan *TwinRun, 1)
	tr := &TwinRun{}
	fail := func(err error) (<-chan *TwinRun, func()) {
		tr.Err = err.Error()
		ch <- tr
		return ch, func() {}
	}
	dir, err := diag.PrivateDir("stress")
	if err != nil {
		return fail(err)
	}
	script := filepath.Join(dir, sc.Name+"-twin.py")
	if err := os.WriteFile(script, []byte(sc.Twin), 0o600); err != nil {
		return fail(err)
	}
	args := append([]string{script}, sc.TwinArgs...)
	args = append(args, fmt.Sprintf("%g", o.GCInterval.Seconds()))
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Env = append(os.Environ(), "GTK_A11Y=none")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	go func() {
		defer os.Remove(script)
		sc := bufio.NewScanner(stdout)
		var final *Sample
		for sc.Scan() {
			var s Sample
			if json.Unmarshal(sc.Bytes(), &s) != nil {
				continue
			}
			if s.Final {
				final = &s
				continue
			}
			tr.Samples = append(tr.Samples, s)
		}
		if err := cmd.Wait(); err != nil {
			tr.Err = fmt.Sprintf("%v: %s", err, clip(stderr.String(), 2000))
		}
		all := tr.Samples
		if final != nil {
			all = append(all[:len(all):len(all)], *final)
			tr.Iterations = final.Iterations
		}
		if len(all) > 0 {
			tr.RSS.Start, tr.RSS.End = all[0].RSS, all[len(all)-1].RSS
			for _, s := range all {
				tr.RSS.Peak = max(tr.RSS.Peak, s.RSS)
			}
			tr.RSS.SlopeMBPerMin = slope(tr.Samples)
		}
		ch <- tr
	}()
	return ch, func() { stdin.Close() }
}

// twinWait waits for the twin after it was told to stop.
func twinWait(done <-chan *TwinRun) *TwinRun {
	select {
	case tr := <-done:
		return tr
	case <-time.After(60 * time.Second):
		return &TwinRun{Err: "the twin did not stop"}
	}
}
