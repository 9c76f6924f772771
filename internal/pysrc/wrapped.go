package pysrc

import (
	"sync/atomic"

	"github.com/duet-gtk/duet/pygi"
)

// Wrapped is a module as a value of the loading package's own type (a
// widgets.Module, say): the same value for every caller while the module
// stays loaded, a new one once it is loaded again (after a Reset).
type Wrapped[T any] struct {
	py   *Module
	wrap func(m *pygi.Object, name string) T
	cur  atomic.Pointer[wrapping[T]]
}

type wrapping[T any] struct {
	m *pygi.Object
	v T
}

// Wrap gives m's module as wrap makes it.
func Wrap[T any](m *Module, wrap func(mod *pygi.Object, name string) T) *Wrapped[T] {
	return &Wrapped[T]{py: m, wrap: wrap}
}

// Get loads the module (see Module.Load) and returns it wrapped.
func (w *Wrapped[T]) Get() (T, error) {
	m, err := w.py.Load()
	if err != nil {
		var zero T
		return zero, err
	}
	return w.of(m), nil
}

// Loaded returns the module wrapped, and false when it is not loaded.
func (w *Wrapped[T]) Loaded() (T, bool) {
	if m := w.py.Loaded(); m != nil {
		return w.of(m), true
	}
	var zero T
	return zero, false
}

func (w *Wrapped[T]) of(m *pygi.Object) T {
	for {
		c := w.cur.Load()
		if c != nil && c.m == m {
			return c.v
		}
		if n := (&wrapping[T]{m: m, v: w.wrap(m, w.py.Name())}); w.cur.CompareAndSwap(c, n) {
			return n.v
		}
	}
}
