package callbacks_test

import (
	"errors"
	"fmt"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/pygi"
)

func ExampleNew() {
	g, _ := pygi.NewGlobals()
	defer g.Close()
	greet, _ := callbacks.New(func(name string) string { return "hello " + name }, callbacks.Params("name"))
	g.SetItem("greet", greet)
	greet.Close() // Python holds it now; it lives as long as Python does
	r, _ := pygi.Eval("greet('python'), greet.__text_signature__", g)
	v, _ := pygi.As[any](r)
	fmt.Println(v)
	// Output: [hello python (name, /)]
}

func ExamplePanicError() {
	g, _ := pygi.NewGlobals()
	defer g.Close()
	g.SetItem("boom", func() { panic("out of cheese") }) // Go funcs are wrapped automatically
	_, err := pygi.Eval("boom()", g)
	var pe *pygi.PanicError
	fmt.Println(errors.As(err, &pe), pe.Value)
	// Output: true out of cheese
}
