package reload

import (
	"slices"
	"strings"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

// The banner: while a watcher runs and the last reload of some file kept
// the old code, each visible window shows a small banner with the error
// line, over its content (banner.py says how), until the file is fixed.

var bannerHelper = pyEmbed.Module("duet_reload_banner", "banner.py", pysrc.UIThread())

// failing is the line of each file whose last reload failed (UI thread).
var failing = map[string]string{}

func banner(res *Result) {
	if !Watching() {
		return
	}
	before := len(failing)
	switch res.Outcome {
	case KeptOld:
		failing[res.Path] = strings.TrimSuffix(res.Line, " (traceback follows)")
	case Applied, Restart:
		delete(failing, res.Path)
	default:
		return
	}
	if before == 0 && len(failing) == 0 {
		return
	}
	showBanner()
}

func showBanner() {
	lines := make([]string, 0, len(failing))
	for _, l := range failing {
		lines = append(lines, l)
	}
	slices.Sort(lines)
	pygi.WithGIL(func() error {
		m, err := bannerHelper.Load()
		if err != nil {
			return err
		}
		o, err := m.CallMethod("update", lines)
		if err == nil {
			o.Close()
		}
		return err
	})
}

// clearBanner forgets the failures and takes the banners away (the
// watcher closes), on the loop if it runs.
func clearBanner() {
	eventloop.Invoke(func() {
		if len(failing) == 0 {
			return
		}
		clear(failing)
		showBanner()
	})
}
