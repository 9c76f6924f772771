// Package pygi is a stub of duet's pygi for the analyzer's tests.
package pygi

type Object struct{}

func (o *Object) CallMethod(name string, args ...any) (*Object, error) { return nil, nil }

type Block struct{}

func (b *Block) CallMethod(o *Object, path string, args ...any) *Object { return nil }
func (b *Block) Err() error                                             { return nil }
