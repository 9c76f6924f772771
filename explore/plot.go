package explore

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The plot's colours, the stress harness's (stress/harness Plot): RSS
// blue, live callbacks orange, trouble red; actions green.
const (
	plotActions   = "#2e7d32"
	plotCallbacks = "#e0601f"
	plotRSS       = "#1f6fd1"
	plotFinding   = "#c0392b"
	plotMuted     = "#555"
)

// findingsListed bounds the findings the plot lists in words under the
// timeline (all of them are marked on it).
const findingsListed = 8

// WritePlot draws the run as SVG, on one timeline: the actions so far,
// the live Go callbacks and the RSS (MB) in three lanes, each with its
// axis labelled, and each finding as a vertical mark labelled with its
// number and kind (listed in words under it), under a title with the seed,
// the duration, the actions per second and the coverage. The lines come
// from the report's Samples; without samples (a process that died before
// its report) the actions come from the trace. A finding without a time
// (a crash a parent saw) is marked at its trace's last action.
func (r *Report) WritePlot(w io.Writer) error {
	_, err := io.WriteString(w, r.plot())
	return err
}

type plotLane struct {
	name, color string
	unit        string                              // after the axis's numbers
	format      string                              // the numbers' format
	value       func(s Sample) float64              // the lane's value in a sample
	bounds      func(lo, hi float64) (l, h float64) // the axis from the values' extremes
}

func (r *Report) plot() string {
	const W, padL, padR, laneH, lineH = 960, 70, 80, 110, 16
	pw := W - padL - padR

	samples := r.Samples
	fromTrace := len(samples) < 2
	if fromTrace {
		// The actions alone, from the times the trace recorded.
		samples = []Sample{{}}
		for i, a := range r.Trace {
			samples = append(samples, Sample{At: a.At, Actions: i + 1})
		}
	}
	// The timeline's end: the run's, or the last thing known to happen.
	end := r.Elapsed
	for _, s := range samples {
		end = max(end, s.At)
	}
	marks := make([]time.Duration, len(r.Findings))
	for i, f := range r.Findings {
		marks[i] = f.At
		if f.At == 0 && len(f.Trace) > 0 {
			marks[i] = f.Trace[len(f.Trace)-1].At
		}
		end = max(end, marks[i])
	}
	t1 := max(end.Seconds(), 1e-9)
	xOf := func(d time.Duration) float64 { return padL + float64(pw)*d.Seconds()/t1 }

	// The marks' labels, in rows above the timeline, so that close ones do
	// not overlap (a few rows; after that they may).
	const maxRows = 4
	labels := make([]string, len(r.Findings))
	rowOf := make([]int, len(r.Findings))
	var rowEnd []float64
	for i, f := range r.Findings {
		labels[i] = fmt.Sprintf("%d %s", i+1, f.Kind)
		x := xOf(marks[i])
		row := -1
		for j, e := range rowEnd {
			if e < x-4 {
				row = j
				break
			}
		}
		if row < 0 && len(rowEnd) < maxRows {
			row = len(rowEnd)
			rowEnd = append(rowEnd, 0)
		}
		if row < 0 {
			row = 0
			for j, e := range rowEnd {
				if e < rowEnd[row] {
					row = j
				}
			}
		}
		rowOf[i] = row
		rowEnd[row] = x + 7*float64(utf8.RuneCountInString(labels[i]))
	}

	lanes := []plotLane{
		{name: "actions so far", color: plotActions, format: "%.0f",
			value:  func(s Sample) float64 { return float64(s.Actions) },
			bounds: func(_, hi float64) (float64, float64) { return 0, max(hi, 1) * 1.05 }},
		{name: "live Go callbacks", color: plotCallbacks, format: "%.0f",
			value:  func(s Sample) float64 { return float64(s.Callbacks) },
			bounds: func(_, hi float64) (float64, float64) { return 0, max(hi, 1) * 1.1 }},
		{name: "RSS (MB)", color: plotRSS, format: "%.1f", unit: " MB",
			value:  func(s Sample) float64 { return float64(s.RSS) / (1 << 20) },
			bounds: func(lo, hi float64) (float64, float64) { return lo * 0.95, max(hi*1.02, lo*0.95+0.1) }},
	}

	top := 56 + 14*len(rowEnd) // the timeline's top
	bottom := top + len(lanes)*laneH
	listed := min(len(r.Findings), findingsListed)
	H := bottom + 34 + lineH*listed
	if len(r.Findings) > listed {
		H += lineH
	}
	H += 10

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`)
	title := fmt.Sprintf("duet explore, seed %d: %.1f s, %d actions (%.1f/s), %.0f%% coverage (%d of %d), %s",
		r.Seed, r.Elapsed.Seconds(), len(r.Trace), r.rate(), 100*r.share(), r.Reached, r.Seen, findingsWords(len(r.Findings)))
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`, padL, plotText(title, 110))
	sub := "actions so far (green), live Go callbacks (orange) and RSS (blue) against time; findings as red marks"
	if r.Recorded > 0 || r.ReplayError != "" {
		sub += fmt.Sprintf("; a replay: %d of %d recorded actions", r.Replayed, r.Recorded)
	}
	fmt.Fprintf(&b, `<text x="%d" y="42" fill="%s">%s</text>`, padL, plotMuted, plotText(sub, 140))

	// The time axis: a light grid at round seconds, the ends labelled.
	step := niceStep(t1 / 8)
	for t := step; t < t1*0.97; t += step {
		x := padL + float64(pw)*t/t1
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`, x, top, x, bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#999">%s s</text>`, x, bottom+14, trimFloat(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">0 s</text><text x="%d" y="%d" text-anchor="end" fill="%s">%.1f s</text>`,
		padL, bottom+14, plotMuted, padL+pw, bottom+14, plotMuted, t1)

	var names strings.Builder // drawn last, over the findings' marks
	for i, lane := range lanes {
		y0 := top + i*laneH
		if i > 0 {
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd" stroke-dasharray="3,3"/>`, padL, y0, padL+pw, y0)
		}
		fmt.Fprintf(&names, `<text x="%d" y="%d" fill="%s" font-weight="bold" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`, padL+6, y0+16, lane.color, lane.name)
		if fromTrace && i > 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#999">no samples (the process ended before its report)</text>`, padL+6, y0+32)
			continue
		}
		if fromTrace && len(samples) < 2 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#999">no actions</text>`, padL+6, y0+32)
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range samples {
			lo, hi = min(lo, lane.value(s)), max(hi, lane.value(s))
		}
		lo, hi = lane.bounds(lo, hi)
		// Under the lane's name, and 6 px above its bottom, so that
		// neither the name nor a neighbour's line touches it.
		yTop, yBot := float64(y0+24), float64(y0+laneH-6)
		yOf := func(v float64) float64 { return yBot - (yBot-yTop)*(v-lo)/max(hi-lo, 1e-9) }
		pts := make([]string, 0, len(samples))
		for _, s := range samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(s.At), yOf(lane.value(s))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`, lane.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end" fill="%s">`+lane.format+`%s</text>`, padL-6, yTop+8, lane.color, hi, lane.unit)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end" fill="%s">`+lane.format+`%s</text>`, padL-6, yBot, lane.color, lo, lane.unit)
		last := samples[len(samples)-1]
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" fill="%s">`+lane.format+`%s</text>`, padL+pw+6, min(max(yOf(lane.value(last))+4, yTop+8), yBot), lane.color, lane.value(last), lane.unit)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#bbb"/>`, padL, top, pw, bottom-top)

	// The marks, then their labels over them.
	for i := range r.Findings {
		x := xOf(marks[i])
		fmt.Fprintf(&b, `<line class="finding" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.4" stroke-dasharray="5,3"/>`,
			x, top-6-14*rowOf[i], x, bottom, plotFinding)
	}
	for i, f := range r.Findings {
		x := xOf(marks[i])
		// A white halo, so that a neighbour's mark does not cross it out.
		fmt.Fprintf(&b, `<text class="finding-label" x="%.1f" y="%d" fill="%s" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`, x+2, top-4-14*rowOf[i], plotFinding, plotText(labels[i], 40))
		if i >= listed {
			continue
		}
		line := fmt.Sprintf("%d. %s at %.1f s, after %d actions: %s", i+1, f.Kind, marks[i].Seconds(), len(f.Trace), f.Message)
		if f.Where != "" {
			line += " (" + f.Where + ")"
		}
		if f.Repeats > 0 {
			line += fmt.Sprintf(" [seen %d more times]", f.Repeats)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`, padL, bottom+34+lineH*i, plotFinding, plotText(line, 130))
	}
	b.WriteString(names.String())
	if n := len(r.Findings) - listed; n > 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">… and %d more (the report lists them all)</text>`, padL, bottom+34+lineH*listed, plotMuted, n)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func findingsWords(n int) string {
	switch n {
	case 0:
		return "nothing found"
	case 1:
		return "1 finding"
	}
	return fmt.Sprintf("%d findings", n)
}

// plotText is s for an SVG text element: what XML cannot hold (control
// characters, invalid UTF-8) as spaces, clipped to n characters, escaped.
func plotText(s string, n int) string {
	var b strings.Builder
	count := 0
	for _, c := range s {
		if count == n {
			b.WriteString("…")
			break
		}
		if c == utf8.RuneError || unicode.IsControl(c) || c == 0xFFFE || c == 0xFFFF {
			c = ' '
		}
		b.WriteRune(c)
		count++
	}
	return html.EscapeString(b.String())
}

// niceStep is the smallest of 1, 2 and 5 times a power of ten that is at
// least d (seconds).
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

// trimFloat writes a grid line's time without trailing zeros.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
