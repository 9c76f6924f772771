// Package widgets is a stub of duet's widgets for the analyzer's tests.
package widgets

import "github.com/duet-gtk/duet/pygi"

type Widget struct{ *pygi.Object }

func (w *Widget) Connect(signal string, fn any, data ...any) (uint64, error) { return 0, nil }
func (w *Widget) Prop(name string) (*pygi.Object, error)                     { return nil, nil }

type WeakRef struct{}

func Weak(o *pygi.Object) (*WeakRef, error) { return nil, nil }
func (w *WeakRef) Get() (*Widget, bool)     { return nil, false }

func Weakly(obj any, fn any) any { return fn }
