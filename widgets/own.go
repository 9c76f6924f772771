package widgets

import (
	"embed"

	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

// widgets' own Python: one file per module, loaded through pysrc on the UI
// thread when first needed (widget code may make widgets as it loads).
// Each needs GTK 4 pinned first and, but for the teardown module that does
// the hooking, every connect path hooked (so that handlers its code
// connects are recorded).
//
//go:embed *.py
var pyFiles embed.FS

var python = pysrc.Embed("widgets", pyFiles)

var (
	teardownPy = python.Module(teardownModule, "teardown.py",
		pysrc.UIThread(), pysrc.Before(requireGtk), pysrc.Setup(startMonitor))

	classPy  = newOwn(python.Module("duet_classes", "class.py", own()...))
	uiHelper = newOwn(python.Module("duet_ui", "ui.py", own()...))
)

func own() []pysrc.Option {
	return []pysrc.Option{pysrc.UIThread(), pysrc.Before(func() error {
		if err := requireGtk(); err != nil {
			return err
		}
		return hookConnect()
	})}
}

// newOwn is one of widgets' own modules, as a Module: the same Module for
// every caller while the module stays loaded.
func newOwn(m *pysrc.Module) *pysrc.Wrapped[*Module] {
	return pysrc.Wrap(m, func(mod *pygi.Object, name string) *Module { return &Module{Object: mod, Name: name} })
}
