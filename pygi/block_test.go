package pygi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPaths(t *testing.T) {
	g, err := NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, Exec("from types import SimpleNamespace as NS\nroot = NS(inner=NS(s='abc', n=1))\n", g))
	root, err := g.Item("root")
	require.NoError(t, err)

	s, err := root.Attr("inner.s")
	require.NoError(t, err)
	text, _ := As[string](s)
	assert.Equal(t, "abc", text)

	up, err := root.CallMethod("inner.s.upper")
	require.NoError(t, err)
	text, _ = As[string](up)
	assert.Equal(t, "ABC", text)

	require.NoError(t, root.SetAttr("inner.n", 42))
	n, err := root.Attr("inner.n")
	require.NoError(t, err)
	v, _ := As[int64](n)
	assert.Equal(t, int64(42), v)

	has, err := root.HasAttr("inner.s")
	require.NoError(t, err)
	assert.True(t, has)
	has, err = root.HasAttr("missing.s")
	require.NoError(t, err)
	assert.False(t, has, "AttributeError at any step means no")

	require.NoError(t, root.DelAttr("inner.n"))
	_, err = root.Attr("inner.n")
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Matches("AttributeError"))

	// Enums are paths too.
	e, err := Eval("__import__('enum').Enum('Color', 'RED GREEN')", nil)
	require.NoError(t, err)
	green, err := e.Attr("GREEN.value")
	require.NoError(t, err)
	gv, _ := As[int64](green)
	assert.Equal(t, int64(2), gv)
}

func TestBlockKeepsTheFirstError(t *testing.T) {
	g, err := NewGlobals()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, Exec("log = []\ndef step(x):\n    log.append(x)\n    return x\n", g))

	var b Block
	step := b.Item(g, "step")
	b.CallMethod(step, "", 1)
	b.CallMethod(g, "get", "log") // fine
	bad := b.Attr(step, "no_such_attribute")
	assert.Nil(t, bad)
	b.CallMethod(step, "", 2) // skipped
	b.SetAttr(g, "x", 3)      // skipped
	assert.Zero(t, BlockAs[int64](&b, b.Eval("40 + 2", nil)), "skipped after the error")

	err = b.Err()
	require.Error(t, err)
	var pe *Error
	require.ErrorAs(t, err, &pe, "the Python exception, with its traceback")
	assert.True(t, pe.Matches("AttributeError"))
	assert.Contains(t, err.Error(), "function.no_such_attribute", "says what was being done")
	r, err := g.Item("log")
	require.NoError(t, err)
	logged, err := As[[]int](r)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, logged, "nothing ran after the first error")
	_, err = g.Item("x")
	assert.Error(t, err, "Set was skipped")
}

func TestBlockConversionsAndGoErrors(t *testing.T) {
	var b Block
	assert.Equal(t, int64(7), BlockAs[int64](&b, b.Eval("3 + 4", nil)))
	assert.Equal(t, "ab", BlockAs[string](&b, b.Eval("'a' + 'b'", nil)))
	assert.Equal(t, []string{"x"}, BlockAs[[]string](&b, b.Eval("['x']", nil)))
	require.NoError(t, b.Err())
	assert.Zero(t, BlockAs[int64](&b, b.Eval("'not a number'", nil)))
	require.ErrorIs(t, b.Err(), ErrConversion)

	mine := errors.New("mine")
	var c Block
	assert.False(t, c.Fail(mine))
	assert.True(t, c.Fail(errors.New("second")))
	assert.ErrorIs(t, c.Err(), mine)

	var g Block
	assert.Equal(t, "a-b", BlockAs[string](&g, g.Eval("'-'.join(xs)", g.Globals(Kw{"xs": []string{"a", "b"}}))))
	require.NoError(t, g.Err())

	var d Block
	d.Import("no_such_module_anywhere")
	assert.ErrorContains(t, d.Err(), "import no_such_module_anywhere")
}
