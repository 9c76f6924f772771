package kit

import (
	"embed"

	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// The kit's Python: the ready-made widgets and the census window, loaded
// on the UI thread once GTK is up (widgets.InitGTK, which also puts in
// duet's connect hook).
//
//go:embed *.py
var pyFiles embed.FS

var (
	python   = pysrc.Embed("widgets/kit", pyFiles)
	library  = newOwn(python.Module("duet_widgets", "duet_widgets.py", pysrc.UIThread(), pysrc.Before(widgets.InitGTK)))
	censusPy = newOwn(python.Module("duet_census", "census.py", pysrc.UIThread(), pysrc.Before(widgets.InitGTK)))
)

func init() { hooks.CloseCensus = closeCensus }

// newOwn is one of the kit's modules as a widgets.Module: the same Module
// for every caller while the module stays loaded.
func newOwn(m *pysrc.Module) *pysrc.Wrapped[*widgets.Module] {
	return pysrc.Wrap(m, func(mod *pygi.Object, name string) *widgets.Module {
		return &widgets.Module{Object: mod, Name: name}
	})
}
