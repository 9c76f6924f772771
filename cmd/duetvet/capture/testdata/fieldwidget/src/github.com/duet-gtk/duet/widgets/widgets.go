// Package widgets is a stub of duet's widgets for the analyzer's tests, in
// the shape where Widget holds its object in a field and has a CallMethod
// of its own instead of the embedded object's.
package widgets

import "github.com/duet-gtk/duet/pygi"

type Widget struct{ Object *pygi.Object }

func (w *Widget) CallMethod(name string, args ...any) (*pygi.Object, error)  { return nil, nil }
func (w *Widget) Connect(signal string, fn any, data ...any) (uint64, error) { return 0, nil }
