package pygi

import (
	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
)

func init() {
	bridge.WrapOwned = func(r capi.Ref) any { return wrap(r) }
	bridge.WrapBorrowed = func(r capi.Ref) any { return &Object{ref: r, kind: borrowed} }
	bridge.Invalidate = func(o any) { o.(*Object).closed.Store(true) }
	bridge.WrapLazy = func(gobj uintptr) any { return wrapLazy(gobj) }
	bridge.EndLazy = func(o any) (capi.Ref, bool) { return endLazy(o.(*Object)) }
	bridge.RefOf = func(o any) (capi.Ref, error) { return o.(*Object).get() }
	bridge.NewRef = func(v any) (capi.Ref, capi.Status, error) {
		if err := enter(); err != nil {
			return capi.Ref{}, 0, err
		}
		defer exit()
		e := getEncoder()
		defer e.release()
		if err := e.value(v); err != nil {
			return capi.Ref{}, 0, err
		}
		r, st, exc := capi.FromVals(e.vals, e.arena)
		e.done()
		if st == capi.OK || st == capi.None {
			return r, st, nil
		}
		return capi.Ref{}, st, statusErr(st, exc)
	}
	bridge.NewError = newError
	bridge.Decode = func(o any, dst any) error { return o.(*Object).decode(dst) }
	bridge.Keep = func(o any) { keep(o.(*Object)) }
	bridge.PythonFiles = pyFiles
	bridge.ExecCompiled = func(name, src, filename string, compiled []byte) (any, error) {
		m, err := execModule(name, src, filename, compiled)
		if err != nil {
			return nil, err // not a nil *Object in an interface
		}
		return m, nil
	}
}
