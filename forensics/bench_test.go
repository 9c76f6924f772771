package forensics_test

import (
	"testing"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
)

// The ring's cost per crossing: a Go → Python call of a trivial function
// (one crossing, recorded with its function's name) with the ring off and
// on. make bench has the same comparison in its table.
func BenchmarkCallRing(b *testing.B) {
	f, err := pygi.Eval("lambda: None", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			forensics.SetRing(on)
			defer forensics.SetRing(false)
			for b.Loop() {
				r, err := f.Call()
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}

// Provenance's cost: a callback made and freed, with and without its
// creation site recorded.
func BenchmarkCallbackProvenance(b *testing.B) {
	fn := func(*pygi.Object) {}
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			forensics.SetProvenance(on)
			defer forensics.SetProvenance(false)
			for b.Loop() {
				cb, err := callbacks.New(fn)
				if err != nil {
					b.Fatal(err)
				}
				cb.Close()
			}
		})
	}
}
