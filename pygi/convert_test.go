package pygi

import (
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type myInt int16
type myStrings []string

func TestConversionsRoundTrip(t *testing.T) {
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	tests := []struct {
		name string
		in   any
		repr string // repr() in Python
		want any    // what decoding into the type of in gives back (nil: in itself)
	}{
		{"nil", nil, "None", nil},
		{"true", true, "True", nil},
		{"false", false, "False", nil},
		{"int", int(-7), "-7", nil},
		{"int8", int8(-128), "-128", nil},
		{"int16", int16(32767), "32767", nil},
		{"int32", int32(math.MinInt32), "-2147483648", nil},
		{"int64 max", int64(math.MaxInt64), "9223372036854775807", nil},
		{"int64 min", int64(math.MinInt64), "-9223372036854775808", nil},
		{"uint", uint(7), "7", nil},
		{"uint8", uint8(255), "255", nil},
		{"uint16", uint16(65535), "65535", nil},
		{"uint32", uint32(math.MaxUint32), "4294967295", nil},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615", nil},
		{"uintptr", uintptr(12), "12", nil},
		{"named int", myInt(3), "3", nil},
		{"big", huge, "123456789012345678901234567890", nil},
		{"float64", 1.5, "1.5", nil},
		{"float32", float32(0.25), "0.25", nil},
		{"inf", math.Inf(-1), "-inf", nil},
		{"string", "héllo ☃", "'héllo ☃'", nil},
		{"empty string", "", "''", nil},
		{"string with NUL", "a\x00b", `'a\x00b'`, nil},
		{"bytes", []byte{0, 1, 255}, `b'\x00\x01\xff'`, nil},
		{"empty bytes", []byte{}, "b''", nil},
		{"ints", []int{1, 2, 3}, "[1, 2, 3]", nil},
		{"array", [2]string{"a", "b"}, "['a', 'b']", nil},
		{"named slice", myStrings{"x"}, "['x']", nil},
		{"any slice", []any{1, "two", nil, 3.5, []any{true}}, "[1, 'two', None, 3.5, [True]]", []any{int64(1), "two", nil, 3.5, []any{true}}},
		{"string map", map[string]int{"a": 1}, "{'a': 1}", nil},
		{"int map", map[int]string{7: "seven"}, "{7: 'seven'}", nil},
		{"nested", map[string][]map[string]bool{"k": {{"t": true}}}, "{'k': [{'t': True}]}", nil},
		{"any map", map[string]any{"n": nil, "l": []any{int64(1)}}, "{'n': None, 'l': [1]}", nil},
		{"pointer", ptr(5), "5", nil},
		{"nil pointer", (*int)(nil), "None", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := New(tc.in)
			require.NoError(t, err)
			defer o.Close()
			if tc.name != "any map" { // dict order follows Go's map order
				r, err := o.Repr()
				require.NoError(t, err)
				assert.Equal(t, tc.repr, r)
			}
			if tc.in == nil {
				assert.True(t, o.IsNone())
				return
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			dst := reflect.New(reflect.TypeOf(tc.in))
			require.NoError(t, o.decode(dst.Interface()))
			got := dst.Elem().Interface()
			if f, ok := want.(float64); ok && math.IsNaN(f) {
				assert.True(t, math.IsNaN(got.(float64)))
				return
			}
			if tc.want != nil {
				g, err := As[any](o)
				require.NoError(t, err)
				got = g
			}
			assert.Equal(t, want, got)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestNaturalForms(t *testing.T) {
	tests := []struct {
		expr string
		want any
	}{
		{"None", nil},
		{"(1, 'a')", []any{int64(1), "a"}},
		{"{1, 1}", []any{int64(1)}},
		{"frozenset()", []any{}},
		{"{'a': b'x'}", map[string]any{"a": []byte("x")}},
		{"{1: 2, 'k': None}", map[any]any{int64(1): int64(2), "k": nil}},
		{"2**64 - 1", uint64(math.MaxUint64)},
		{"bytearray(b'ab')", []byte("ab")},
		{"True", true},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			o, err := Eval(tc.expr, nil)
			require.NoError(t, err)
			got, err := As[any](o)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	o, err := Eval("2**100", nil)
	require.NoError(t, err)
	got, err := As[any](o)
	require.NoError(t, err)
	want, _ := new(big.Int).SetString("1267650600228229401496703205376", 10)
	assert.Equal(t, 0, want.Cmp(got.(*big.Int)))
	neg, err := Eval("-2**100", nil)
	require.NoError(t, err)
	b, err := As[*big.Int](neg)
	require.NoError(t, err)
	assert.Equal(t, 0, new(big.Int).Neg(want).Cmp(b))

	// Objects without a plain Go form come back as *Object.
	o, err = Eval("[object(), 1]", nil)
	require.NoError(t, err)
	got, err = As[any](o)
	require.NoError(t, err)
	items := got.([]any)
	require.IsType(t, &Object{}, items[0])
	assert.Equal(t, int64(1), items[1])
	objs, err := As[[]*Object](o)
	require.NoError(t, err)
	require.Len(t, objs, 2)
	n, err := As[int64](objs[1])
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	// Enum-like int subclasses read as ints.
	o, err = Eval("__import__('enum').IntEnum('E', 'A B').B", nil)
	require.NoError(t, err)
	n, err = As[int64](o)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
}

func TestConversionFailures(t *testing.T) {
	type unsupported struct{ A int }
	toPython := []struct {
		name string
		in   any
		msg  string
	}{
		{"struct", unsupported{1}, "pygi.unsupported"},
		{"chan", make(chan int), "chan int"},
		{"func without callbacks", func() {}, "callbacks"},
		{"complex", complex(1, 2), "complex128"},
		{"invalid utf-8", "a\xffb", "UTF-8"},
		{"struct key", map[unsupported]int{{1}: 1}, "map keys"},
		{"nested bad", []any{1, []any{make(chan int)}}, "[1]: [0]"},
		{"any key bad", map[any]int{[2]int{}: 1}, "map key"},
	}
	for _, tc := range toPython {
		t.Run("to python/"+tc.name, func(t *testing.T) {
			before := readStats()
			_, err := New(tc.in)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrConversion)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Equal(t, before.Created, readStats().Created, "nothing was made")
		})
	}

	toGo := []struct {
		name string
		expr string
		dst  any
		msg  string
	}{
		{"overflow int8", "128", new(int8), "128 does not fit"},
		{"negative uint", "-1", new(uint), "-1 does not fit"},
		{"overflow int64", "2**63", new(int64), "9223372036854775808 does not fit"},
		{"overflow uint64", "2**64", new(uint64), "18446744073709551616 does not fit"},
		{"overflow float32", "1e300", new(float32), "does not fit"},
		{"float to int", "1.5", new(int), "Python float to Go int"},
		{"bool to int", "True", new(int), "Python bool"},
		{"int to bool", "1", new(bool), "wrong type"},
		{"str to int", "'1'", new(int), "Python str"},
		{"int to string", "1", new(string), "wrong type"},
		{"list to map", "[1]", new(map[string]int), "wrong type"},
		{"array length", "[1, 2, 3]", new([2]int), "length 3, want 2"},
		{"element", "[1, 'x']", new([]int), "[1]: pygi: cannot convert Python str"},
		{"object to int", "object()", new(int), "Python object"},
		{"struct", "{}", new(struct{}), "unsupported"},
		{"unhashable key", "{(1, 2): 3}", new(map[any]any), "no comparable Go form"},
		{"surrogate", "'\\udc80'", new(string), "surrogates not allowed"},
		{"self-referential", "(lambda l: (l.append(l), l)[1])([])", new(any), "nested too deeply"},
	}
	for _, tc := range toGo {
		t.Run("to go/"+tc.name, func(t *testing.T) {
			o, err := Eval(tc.expr, nil)
			require.NoError(t, err)
			err = o.decode(tc.dst)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	o, err := Eval("1", nil)
	require.NoError(t, err)
	assert.ErrorIs(t, o.decode(nil), ErrConversion)
	var n int
	assert.ErrorIs(t, o.decode(n), ErrConversion, "Decode needs a pointer")
	_, err = As[bool](o)
	assert.Error(t, err, "Bool is strict")
	truth, err := o.Truthy()
	require.NoError(t, err)
	assert.True(t, truth)
}

// FuzzRoundTrip sends arbitrary Go values through Python and back.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(0), uint64(0), 0.0, "", []byte{}, false)
	f.Add(int64(math.MinInt64), uint64(math.MaxUint64), math.NaN(), "héllo\x00", []byte{0xff}, true)
	f.Add(int64(-1), uint64(1<<63), math.Inf(1), "\xff\xfe", []byte("abc"), false)
	f.Add(int64(42), uint64(7), math.Copysign(0, -1), "☃ snow", []byte(nil), true)
	f.Fuzz(func(t *testing.T, i int64, u uint64, fl float64, s string, b []byte, flag bool) {
		if b == nil {
			b = []byte{}
		}
		in := []any{i, u, fl, s, b, flag, map[string]any{"s": s, "i": i}}
		o, err := New(in)
		if !utf8.ValidString(s) {
			require.ErrorIs(t, err, ErrConversion, "invalid UTF-8 is refused, not mangled")
			return
		}
		require.NoError(t, err)
		defer o.Close()
		var out struct {
			i  int64
			u  uint64
			fl float64
			s  string
			b  []byte
			f  bool
			m  map[string]any
		}
		items, err := As[[]*Object](o)
		require.NoError(t, err)
		require.Len(t, items, 7)
		require.NoError(t, items[0].decode(&out.i))
		require.NoError(t, items[1].decode(&out.u))
		require.NoError(t, items[2].decode(&out.fl))
		require.NoError(t, items[3].decode(&out.s))
		require.NoError(t, items[4].decode(&out.b))
		require.NoError(t, items[5].decode(&out.f))
		require.NoError(t, items[6].decode(&out.m))
		assert.Equal(t, i, out.i)
		assert.Equal(t, u, out.u)
		assert.Equal(t, math.Float64bits(fl), math.Float64bits(out.fl))
		assert.Equal(t, s, out.s)
		assert.Equal(t, b, out.b)
		assert.Equal(t, flag, out.f)
		assert.Equal(t, map[string]any{"s": s, "i": i}, out.m)
		for _, it := range items {
			it.Close()
		}
	})
}

// Integers cross exactly at any size, both ways (decimal text used to meet
// CPython's 4300-digit limit on int/str conversions).
func TestHugeIntegersCrossExactly(t *testing.T) {
	for _, digits := range []int{1, 19, 20, 100, 4300, 5000, 20000} {
		for _, sign := range []string{"", "-"} {
			text := sign + "9" + strings.Repeat("7", digits-1)
			v, ok := new(big.Int).SetString(text, 10)
			require.True(t, ok)
			o, err := New(v)
			require.NoError(t, err, "%d digits to Python", digits)
			got, err := As[*big.Int](o)
			require.NoError(t, err, "%d digits back", digits)
			assert.Zero(t, got.Cmp(v), "%d digits round trip", digits)
			n, err := Eval("lambda x: x.bit_length()", nil)
			require.NoError(t, err)
			bl, err := n.Call(o)
			require.NoError(t, err)
			bits, _ := As[int64](bl)
			assert.Equal(t, int64(v.BitLen()), bits, "Python sees the same number")
		}
	}
	for _, v := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, -256} {
		b := big.NewInt(v)
		b.Lsh(b, 70) // past int64: through the big path
		o, err := New(b)
		require.NoError(t, err)
		got, err := As[*big.Int](o)
		require.NoError(t, err)
		assert.Zero(t, got.Cmp(b), "%v", b)
	}
}
