// Package callbacks is a stub of duet's callbacks for the analyzer's tests.
package callbacks

import "github.com/duet-gtk/duet/pygi"

func New(fn any, opts ...any) (*pygi.Object, error) { return nil, nil }

func Connect(obj *pygi.Object, signal string, fn any, data ...any) (uint64, error) { return 0, nil }
func ConnectAfter(obj *pygi.Object, signal string, fn any, data ...any) (uint64, error) {
	return 0, nil
}
