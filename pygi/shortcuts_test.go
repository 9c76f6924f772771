package pygi

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attribute and method names are kept, interned, in a table of their own
// (internal/capi/ops.c, attr_name): far more names than the table has
// entries, each used twice, still reach the attribute they name, and the
// ones the table cannot keep (long, non-ASCII) work as before.
func TestAttributeNamesReachTheirAttribute(t *testing.T) {
	g := globals(t, `
class Echo:
    def __getattr__(self, name):
        return "got " + name
    def method(self, *a):
        return "method"
echo = Echo()
`)
	echo, err := g.Item("echo")
	require.NoError(t, err)
	names := make([]string, 0, 3000)
	for i := range 3000 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	names = append(names, "é", "naïve_name", "long_"+strings.Repeat("x", 100))
	for round := range 2 {
		for _, n := range names {
			v, err := echo.Attr(n)
			require.NoError(t, err, n)
			s, err := As[string](v)
			require.NoError(t, err)
			assert.Equal(t, "got "+n, s, "round %d", round)
			require.NoError(t, v.Close()) // nothing left for the collector: later tests count what it queues
		}
	}
	// A method path's last step goes through the same table.
	for range 2 {
		r, err := echo.CallMethod("method", 1)
		require.NoError(t, err)
		s, err := As[string](r)
		require.NoError(t, err)
		assert.Equal(t, "method", s)
	}
}

func TestAttributeNamesThatAreNotUTF8AreAnError(t *testing.T) {
	o, err := Eval("object()", nil)
	require.NoError(t, err)
	for range 2 {
		_, err = o.Attr("bad\xffname")
		var pe *Error
		require.ErrorAs(t, err, &pe)
		assert.True(t, pe.Matches("UnicodeDecodeError"), "%v", err)
	}
}

// The table holds one reference to a name, however often it is used.
func TestAttributeNamesDoNotLeak(t *testing.T) {
	g := globals(t, `
import sys
class C:
    def a_method_name_for_counting(self):
        return None
c = C()
name = sys.intern("a_method_name_for_counting")
`)
	c, err := g.Item("c")
	require.NoError(t, err)
	_, err = c.CallMethod("a_method_name_for_counting") // the table's reference, once
	require.NoError(t, err)
	before := refs(t, g, "name")
	for range 10000 {
		_, err := c.CallMethod("a_method_name_for_counting") // None
		require.NoError(t, err)
		m, err := c.Attr("a_method_name_for_counting")
		require.NoError(t, err)
		require.NoError(t, m.Close())
	}
	assert.Equal(t, before, refs(t, g, "name"))
}

// wrap allocates an owned Object padded into the 128-byte size class (see
// ownedObject): a field added to Object that moves it out of that class
// should change the padding with it.
func TestOwnedObjectsSizeClass(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the padding is measured on 64-bit platforms")
	}
	assert.Equal(t, uintptr(128), unsafe.Sizeof(ownedObject{}))
	assert.Zero(t, unsafe.Offsetof(ownedObject{}.Object), "the cleanup is registered on the start of the allocation")
}

// Results left to Go's collector are released, padded or not: every
// instance a loop of calls made is gone after both collectors ran.
func TestResultsLeftToTheCollectorAreReleased(t *testing.T) {
	g := globals(t, `
live = 0
class Counted:
    def __init__(self):
        global live
        live += 1
    def __del__(self):
        global live
        live -= 1
`)
	mk, err := g.Item("Counted")
	require.NoError(t, err)
	for range 5000 {
		_, err := mk.Call()
		require.NoError(t, err)
	}
	// Each look at live is an entry, which releases what the cleanups
	// queued so far.
	collectUntil(t, func() bool { return evalInt(t, g, "live") == 0 })
	assert.Zero(t, evalInt(t, g, "live"))
}

// Keyword names go through the same table: each reaches its parameter, or
// **kwargs under its own name, however many there are and whatever their
// text.
func TestKeywordNamesReachTheirParameters(t *testing.T) {
	f, err := Eval("lambda a=None, *, naïve=None, **rest: (a, naïve, sorted(rest.items()))", nil)
	require.NoError(t, err)
	for round := range 2 {
		for i := range 1200 {
			name := fmt.Sprintf("kw%d", i)
			r, err := f.Call(Kw{"a": i, "naïve": round, name: "v"})
			require.NoError(t, err)
			got, err := As[[]any](r)
			require.NoError(t, err)
			require.Len(t, got, 3)
			assert.EqualValues(t, i, got[0])
			assert.EqualValues(t, round, got[1])
			assert.Equal(t, []any{[]any{name, "v"}}, got[2])
			require.NoError(t, r.Close())
		}
	}
	_, err = f.Call(Kw{"bad\xffname": 1})
	var ce *ConversionError
	assert.ErrorAs(t, err, &ce, "a keyword name that is not UTF-8 is refused in Go, as before")
}

// Calls that return True or False hand out two permanent Objects, as
// calls returning None hand out one: no Object is made per call, the
// Objects behave as any other (Is, As, Truthy; Close does nothing), and
// True's and False's reference counts are what they were.
func TestCallsReturningBooleans(t *testing.T) {
	g := globals(t, `
class C:
    def yes(self): return True
    def no(self, x=None): return False
c = C()
f = lambda b: b
`)
	c, err := g.Item("c")
	require.NoError(t, err)
	f, err := g.Item("f")
	require.NoError(t, err)
	bools := func() [2]int64 { return [2]int64{refs(t, g, "True"), refs(t, g, "False")} }
	before, made := bools(), stats.created.Load()
	for i := range 5000 {
		y, err := c.CallMethod("yes")
		require.NoError(t, err)
		n, err := c.CallMethod("no", i)
		require.NoError(t, err)
		b, err := f.Call(i%2 == 0)
		require.NoError(t, err)
		if i == 0 {
			for _, tc := range []struct {
				o    *Object
				want bool
			}{{y, true}, {n, false}, {b, true}} {
				v, err := As[bool](tc.o)
				require.NoError(t, err)
				assert.Equal(t, tc.want, v)
				truthy, err := tc.o.Truthy()
				require.NoError(t, err)
				assert.Equal(t, tc.want, truthy)
				tn, err := tc.o.TypeName()
				require.NoError(t, err)
				assert.Equal(t, "bool", tn)
			}
		}
		require.NoError(t, y.Close())
		require.NoError(t, n.Close())
		assert.False(t, y.Closed(), "True is permanent: Close does nothing")
	}
	runtime.GC()
	require.NoError(t, Drain())
	assert.Equal(t, made, stats.created.Load(), "no Object made for a boolean result")
	assert.Equal(t, before, bools())
	var b Block
	v := BlockAs[bool](&b, b.CallMethod(c, "yes"))
	require.NoError(t, b.Err())
	assert.True(t, v)
}
