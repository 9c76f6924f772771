package kit

import (
	"embed"
	"sync/atomic"

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

// ownModule is one of the kit's modules as a widgets.Module: the same
// Module for every caller while the module stays loaded.
type ownModule struct {
	py  *pysrc.Module
	mod atomic.Pointer[widgets.Module]
}

func newOwn(m *pysrc.Module) *ownModule { return &ownModule{py: m} }

func (o *ownModule) get() (*widgets.Module, error) {
	m, err := o.py.Load()
	if err != nil {
		return nil, err
	}
	return o.wrap(m), nil
}

// loaded returns the module if it was loaded, else nil.
func (o *ownModule) loaded() *widgets.Module {
	if m := o.py.Loaded(); m != nil {
		return o.wrap(m)
	}
	return nil
}

func (o *ownModule) wrap(m *pygi.Object) *widgets.Module {
	for {
		w := o.mod.Load()
		if w != nil && w.Object == m {
			return w
		}
		if nw := (&widgets.Module{Object: m, Name: o.py.Name()}); o.mod.CompareAndSwap(w, nw) {
			return nw
		}
	}
}
