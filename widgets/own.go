package widgets

import (
	"embed"
	"sync/atomic"

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

// ownModule is one of widgets' own modules, as a Module: the same Module
// for every caller while the module stays loaded.
type ownModule struct {
	py  *pysrc.Module
	mod atomic.Pointer[Module]
}

func newOwn(m *pysrc.Module) *ownModule { return &ownModule{py: m} }

func (o *ownModule) get() (*Module, error) {
	m, err := o.py.Load()
	if err != nil {
		return nil, err
	}
	return o.wrap(m), nil
}

// loaded returns the module if it was loaded, else nil.
func (o *ownModule) loaded() *Module {
	if m := o.py.Loaded(); m != nil {
		return o.wrap(m)
	}
	return nil
}

func (o *ownModule) wrap(m *pygi.Object) *Module {
	for {
		w := o.mod.Load()
		if w != nil && w.Object == m {
			return w
		}
		if nw := (&Module{Object: m, Name: o.py.Name()}); o.mod.CompareAndSwap(w, nw) {
			return nw
		}
	}
}
