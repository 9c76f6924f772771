// Package gtk is a stub of gotk4's gtk for the analyzer's tests.
package gtk

type Button struct{}

func (b *Button) ConnectClicked(f func()) uint { return 0 }
func (b *Button) SetLabel(s string)            {}

type Label struct{}

func (l *Label) SetText(s string) {}
