// Package pygi is a stub of duet's pygi for the analyzer's tests.
package pygi

type Object struct{}

func (o *Object) CallMethod(name string, args ...any) (*Object, error) { return nil, nil }
