package forensics_test

import (
	"fmt"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/pygi"
)

// A census counts what lives by name (and, for callbacks, by where each
// was made); Grew says what grew since a mark.
func ExampleTakeCensus() {
	mark, err := forensics.TakeCensus()
	if err != nil {
		fmt.Println(err)
		return
	}
	var held []*pygi.Object
	for range 3 {
		cb, err := callbacks.New(func() {}, callbacks.Name("example_handler"))
		if err != nil {
			fmt.Println(err)
			return
		}
		held = append(held, cb)
	}
	now, err := forensics.TakeCensus()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range now.Grew(mark) {
		if c.Name == "example_handler" {
			fmt.Printf("%s %s: %d -> %d\n", c.Table, c.Name, c.From, c.To)
		}
	}
	for _, cb := range held {
		cb.Close()
	}
	// Output: callbacks example_handler: 0 -> 3
}
