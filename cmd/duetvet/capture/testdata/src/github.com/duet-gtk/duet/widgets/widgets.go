// Package widgets is a stub of duet's widgets for the analyzer's tests.
package widgets

import (
	"io/fs"

	"github.com/duet-gtk/duet/pygi"
)

type Widget struct{ *pygi.Object }

func (w *Widget) Connect(signal string, fn any, data ...any) (uint64, error)      { return 0, nil }
func (w *Widget) ConnectAfter(signal string, fn any, data ...any) (uint64, error) { return 0, nil }
func (w *Widget) Prop(name string) (*pygi.Object, error)                          { return nil, nil }

// CallMethod stands for the bridge's call on a gotk4 object (a
// coreglib.Objector there).
func CallMethod(obj any, method string, args ...any) (*pygi.Object, error) { return nil, nil }

type WeakRef struct{}

func Weak(o *pygi.Object) (*WeakRef, error) { return nil, nil }
func (w *WeakRef) Get() (*Widget, bool)     { return nil, false }

// Weakly stands for the helper that returns a handler holding obj weakly.
func Weakly(obj any, fn any) any { return fn }

type UI struct{ Builder *pygi.Object }

func LoadUI(xml string, handlers map[string]any) (*UI, error)                { return nil, nil }
func LoadUIFS(fsys fs.FS, file string, handlers map[string]any) (*UI, error) { return nil, nil }
func (u *UI) Object(id string) (*Widget, error)                              { return nil, nil }
