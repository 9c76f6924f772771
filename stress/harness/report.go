package harness

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// Summary is what report.json holds.
type Summary struct {
	Verdict string    `json:"verdict"`
	OK      bool      `json:"ok"`
	Runs    []*Report `json:"runs"`
}

// WriteReport writes report.json and plot.svg (RSS and live callbacks over
// time, one row per scenario) into dir and returns their paths.
func WriteReport(dir string, sum Summary) (string, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	js := filepath.Join(dir, "report.json")
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(js, b, 0o644); err != nil {
		return "", "", err
	}
	svg := filepath.Join(dir, "plot.svg")
	return js, svg, os.WriteFile(svg, []byte(Plot(sum.Runs)), 0o644)
}

// Plot draws each run's RSS (MB) and live callbacks against time as SVG.
func Plot(runs []*Report) string {
	const W, rowH, padL, padR, padT, gap = 960, 220, 70, 70, 40, 30
	H := padT + len(runs)*(rowH+gap) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">duet stress: RSS (blue, left axis) and live callbacks (orange, right axis)</text>`, padL)
	for i, r := range runs {
		y0 := padT + i*(rowH+gap)
		pw, ph := W-padL-padR, rowH-40
		top := y0 + 24
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text><text x="%d" y="%d" fill="#555">%s</text>`,
			padL, y0+14, html.EscapeString(r.Scenario+" ("+r.Ownership+")"), padL+200, y0+14, html.EscapeString(clip(r.Verdict, 90)))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#bbb"/>`, padL, top, pw, ph)
		if len(r.Samples) < 2 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#999">no samples</text>`, padL+10, top+20)
			continue
		}
		t1 := r.Samples[len(r.Samples)-1].T
		var rssMax, cbMax float64 = 1, 1
		rssMin := float64(r.Samples[0].RSS) / (1 << 20)
		for _, s := range r.Samples {
			rssMax = max(rssMax, float64(s.RSS)/(1<<20))
			rssMin = min(rssMin, float64(s.RSS)/(1<<20))
			cbMax = max(cbMax, float64(s.CbLive))
		}
		rssLo := rssMin * 0.95
		line := func(color string, val func(Sample) float64, lo, hi float64) {
			var pts []string
			for _, s := range r.Samples {
				x := float64(padL) + float64(pw)*s.T/max(t1, 1e-9)
				y := float64(top+ph) - float64(ph)*(val(s)-lo)/max(hi-lo, 1e-9)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`, color, strings.Join(pts, " "))
		}
		if tw := r.Twin; tw != nil && len(tw.Samples) > 1 {
			// The pure PyGObject twin's RSS, dashed, on the same axes (its
			// own start moved to duet's, so the slopes compare by eye).
			off := float64(r.Samples[0].RSS-tw.Samples[0].RSS) / (1 << 20)
			var pts []string
			for _, s := range tw.Samples {
				v := float64(s.RSS)/(1<<20) + off
				x := float64(padL) + float64(pw)*min(s.T/max(t1, 1e-9), 1)
				y := float64(top+ph) - float64(ph)*(v-rssLo)/max(rssMax*1.02-rssLo, 1e-9)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, max(float64(top), min(y, float64(top+ph)))))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="#777" stroke-dasharray="5,4" stroke-width="1.4" points="%s"/>`, strings.Join(pts, " "))
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#777">dashed: pure PyGObject twin, %.2f MB/min</text>`, padL+pw-4, top+14, tw.RSS.SlopeMBPerMin)
		}
		line("#1f6fd1", func(s Sample) float64 { return float64(s.RSS) / (1 << 20) }, rssLo, rssMax*1.02)
		line("#e0601f", func(s Sample) float64 { return float64(s.CbLive) }, 0, cbMax*1.1)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#1f6fd1">%.1f MB</text>`, padL-6, top+10, rssMax*1.02)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#1f6fd1">%.1f MB</text>`, padL-6, top+ph, rssLo)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#e0601f">%.0f</text>`, padL+pw+6, top+10, cbMax*1.1)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#e0601f">0</text>`, padL+pw+6, top+ph)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">0 s</text><text x="%d" y="%d" text-anchor="end" fill="#555">%.0f s</text>`,
			padL, top+ph+14, padL+pw, top+ph+14, t1)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">%d iterations, GC %d (Go) / %d (Python), RSS slope %.2f MB/min</text>`,
			padL+pw/2, top+ph+14, r.Iterations, r.GoGC, r.PyGC, r.RSS.SlopeMBPerMin)
		// What the census saw grow, start to end: the first suspects of a leak.
		switch {
		case len(r.Census.Grew) > 0:
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#c0392b">census grew: %s</text>`, padL, top+ph+28, html.EscapeString(clip(growthLine(r.Census.Grew, 4), 140)))
		case r.Census.Start != nil && r.Census.End != nil:
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#2e7d32">census: nothing grew from start to end</text>`, padL, top+ph+28)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
