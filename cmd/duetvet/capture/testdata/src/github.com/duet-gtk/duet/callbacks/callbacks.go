// Package callbacks is a stub of duet's callbacks for the analyzer's tests.
package callbacks

import "github.com/duet-gtk/duet/pygi"

func New(fn any, opts ...any) (*pygi.Object, error) { return nil, nil }
