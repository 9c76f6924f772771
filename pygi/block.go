package pygi

import (
	"fmt"
	"runtime"
)

// A Block runs a block of Python operations that reads like its Python
// twin and ends with one error check, in the manner of bufio.Scanner's Err:
// the first error is kept, wrapped with what was being done (a Python
// exception stays an *Error with its traceback, for errors.As), and every
// operation after it does nothing and returns nil. Nothing panics.
//
//	var b pygi.Block
//	Gtk := b.Import("gi.repository.Gtk")
//	box := b.CallMethod(Gtk, "Box", pygi.Kw{"orientation": b.Attr(Gtk, "Orientation.VERTICAL"), "spacing": 6})
//	b.CallMethod(box, "append", b.CallMethod(Gtk, "Label", pygi.Kw{"label": "hi"}))
//	if err := b.Err(); err != nil { ... }
//
// Names are paths: "Orientation.VERTICAL" is two attribute steps, and
// CallMethod(o, "props.label.upper") calls the method upper of o.props.label, each
// in one crossing into Python. Objects a Block returns are released by Go's
// garbage collector like any Object (Close them early if you like).
//
// A Block is for one goroutine at a time. Its zero value is ready to use.
type Block struct {
	err error
}

// Err returns the first error, or nil.
func (b *Block) Err() error { return b.err }

// Fail records err (a Go error of your own, say) unless an earlier error is
// kept already; it reports whether the block had failed before.
func (b *Block) Fail(err error) bool {
	if b.err != nil {
		return true
	}
	b.err = err
	return false
}

// fail records the first error with what was being done (what runs only
// when there is an error: naming the target costs a call into Python).
func (b *Block) fail(err error, what func() string) {
	if b.err == nil && err != nil {
		b.err = fmt.Errorf("%s: %w", what(), err)
	}
}

// Import returns a module, e.g. "gi.repository.Gtk".
func (b *Block) Import(name string) *Object {
	if b.err != nil {
		return nil
	}
	o, err := Import(name)
	b.fail(err, func() string { return "import " + name })
	return o
}

// Attr returns the attribute path of o, e.g. "Orientation.VERTICAL".
func (b *Block) Attr(o *Object, path string) *Object {
	if b.err != nil {
		return nil
	}
	r, err := o.Attr(path)
	b.fail(err, func() string { return describe(o, path) })
	return r
}

// SetAttr sets the attribute path of o to v (converted as by New).
func (b *Block) SetAttr(o *Object, path string, v any) {
	if b.err != nil {
		return
	}
	b.fail(o.SetAttr(path, v), func() string { return describe(o, path) + " = ..." })
}

// CallMethod calls the method path of o with args (positional values, then
// Kw keyword arguments, as Object.CallMethod takes them), or o itself when
// path is empty, and returns the result (None as the None Object).
func (b *Block) CallMethod(o *Object, path string, args ...any) *Object {
	if b.err != nil {
		return nil
	}
	var r *Object
	var err error
	if path == "" {
		r, err = o.Call(args...)
	} else {
		r, err = o.CallMethod(path, args...)
	}
	b.fail(err, func() string { return describe(o, path) + "()" })
	return r
}

// Item returns o[key].
func (b *Block) Item(o *Object, key any) *Object {
	if b.err != nil {
		return nil
	}
	r, err := o.Item(key)
	b.fail(err, func() string { return fmt.Sprintf("%s[%v]", describe(o, ""), key) })
	return r
}

// Eval evaluates a Python expression (with globals, or fresh ones when nil).
func (b *Block) Eval(expr string, globals *Object) *Object {
	if b.err != nil {
		return nil
	}
	r, err := Eval(expr, globals)
	b.fail(err, func() string { return "eval" })
	return r
}

// Globals returns fresh globals for Eval and Exec holding vars.
func (b *Block) Globals(vars Kw) *Object {
	if b.err != nil {
		return nil
	}
	g, err := NewGlobals()
	for k, v := range vars {
		if err == nil {
			err = g.SetItem(k, v)
		}
	}
	b.fail(err, func() string { return "globals" })
	if err != nil {
		return nil
	}
	return g
}

// Exec runs Python statements (with globals, or fresh ones when nil).
func (b *Block) Exec(src string, globals *Object) {
	if b.err != nil {
		return
	}
	b.fail(Exec(src, globals), func() string { return "exec" })
}

// BlockAs converts o to T inside a block, as As does; after an error, or
// on a failed conversion, it returns T's zero value.
func BlockAs[T any](b *Block, o *Object) T {
	var zero T
	if b.err != nil {
		return zero
	}
	v, err := As[T](o)
	b.fail(err, func() string { return fmt.Sprintf("converting %s to %T", describe(o, ""), zero) })
	return v
}

// describe names an operation's target for error messages without running
// Python code of the object's own (repr could fail or be slow): its type.
func describe(o *Object, path string) string {
	t := "<nil>"
	if o != nil {
		if n, err := o.TypeName(); err == nil {
			t = n
		}
		runtime.KeepAlive(o)
	}
	if path == "" {
		return t
	}
	return t + "." + path
}
