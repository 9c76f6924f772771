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
	f, _ := pygi.As[float64](r)
	fmt.Println(f)
	// Output: 5
}

func ExampleObject_Call() {
	g, _ := pygi.NewGlobals()
	defer g.Close()
	_ = pygi.Exec("def greet(name, punct='.'):\n    return 'hello ' + name + punct", g)
	greet, _ := g.Item("greet")
	r, _ := greet.Call("gopher", pygi.Kw{"punct": "!"})
	s, _ := pygi.As[string](r)
	fmt.Println(s)
	// Output: hello gopher!
}

func ExampleAs() {
	o, _ := pygi.Eval("{'a': [1, 2], 'b': [3]}", nil)
	m, err := pygi.As[map[string][]int](o)
	fmt.Println(m, err)
	big, err := pygi.Eval("{'big': [300]}", nil)
	if err == nil {
		_, err = pygi.As[map[string][]int8](big)
	}
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

// A block of Python operations with one error check: the first error is
// kept with what was being done, the rest is skipped.
func ExampleBlock() {
	var b pygi.Block
	path := b.Import("os.path")
	fmt.Println(pygi.BlockAs[string](&b, b.CallMethod(path, "join", "a", "b")))
	b.CallMethod(path, "no_such_function")
	b.CallMethod(path, "join", "never", "called")
	fmt.Println(b.Err())
	// Output:
	// a/b
	// module.no_such_function(): AttributeError: module 'posixpath' has no attribute 'no_such_function'
}
