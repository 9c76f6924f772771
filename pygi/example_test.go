package pygi_test

import (
	"errors"
	"fmt"

	"github.com/duet-gtk/duet/pygi"
)

func Example() {
	math, err := pygi.Import("math")
	if err != nil {
		panic(err)
	}
	defer math.Close()
	r, err := math.CallMethod("hypot", 3, 4)
	if err != nil {
		panic(err)
	}
	f, _ := r.Float()
	fmt.Println(f)
	// Output: 5
}

func ExampleObject_Call() {
	g, _ := pygi.NewGlobals()
	defer g.Close()
	_ = pygi.Exec("def greet(name, punct='.'):\n    return 'hello ' + name + punct", g)
	greet, _ := g.Item("greet")
	r, _ := greet.Call("gopher", pygi.Kw{"punct": "!"})
	s, _ := r.Text()
	fmt.Println(s)
	// Output: hello gopher!
}

func ExampleAs() {
	o, _ := pygi.Eval("{'a': [1, 2], 'b': [3]}", nil)
	m, err := pygi.As[map[string][]int](o)
	fmt.Println(m, err)
	_, err = pygi.As[map[string][]int8](pygi.Must(pygi.Eval("{'big': [300]}", nil)))
	fmt.Println(err)
	// Output:
	// map[a:[1 2] b:[3]] <nil>
	// [big]: [0]: pygi: cannot convert Python int to Go int8: 300 does not fit
}

func ExampleError() {
	_, err := pygi.Eval("int('x')", nil)
	var pe *pygi.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Type, "|", pe.Message, "|", pe.Matches("Exception"))
	}
	// Output: ValueError | invalid literal for int() with base 10: 'x' | true
}
