// decode.go: Python values to Go (Decode, As and the typed accessors).

package pygi

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"runtime"
	"strconv"

	"github.com/duet-gtk/duet/internal/capi"
)

// decoded is a Python value encoded by capi.ToVals, with its object leaves
// already wrapped (so nothing leaks whatever the decoder does with them).
// vals and arena are Go memory of this decode's own, valid during use,
// whatever Python code runs meanwhile (see capi's "Re-entry").
type decoded struct {
	vals  []capi.Val
	arena []byte
	objs  map[int]*Object // leaf index -> Object
	used  map[int]bool
}

func (d *decoded) text(x capi.Val) string { return string(d.arena[x.I : x.I+x.N]) }

// bigInt reads a KindBigInt: big-endian two's complement bytes.
func (d *decoded) bigInt(x capi.Val) *big.Int {
	b := d.arena[x.I : x.I+x.N]
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// clipDigits is v in decimal for a message: a huge one by its size.
func clipDigits(v *big.Int) string {
	if v.BitLen() > 200 {
		return fmt.Sprintf("an integer of %d bits", v.BitLen())
	}
	return v.String()
}

// withDecoded encodes o and runs use on the encoding, valid during use.
// Must run inside an operation.
func withDecoded(o *Object, use func(d *decoded) error) error {
	r, err := o.get()
	if err != nil {
		return err
	}
	var useErr error
	st, exc := capi.ToVals(r, func(vals []capi.Val, arena []byte) {
		d := &decoded{vals: vals, arena: arena}
		// Wrap every object leaf first, so none leaks whatever use does.
		for i, x := range vals {
			if x.Kind == capi.KindSlot {
				if d.objs == nil {
					d.objs = make(map[int]*Object)
					d.used = make(map[int]bool)
				}
				d.objs[i] = wrap(x.Ref())
			}
		}
		defer d.finish()
		useErr = use(d)
	})
	runtime.KeepAlive(o)
	if st != capi.OK {
		return statusErr(st, exc)
	}
	return useErr
}

// finish closes leaves nobody took.
func (d *decoded) finish() {
	for i, o := range d.objs {
		if !d.used[i] {
			o.Close()
		}
	}
}

// skip returns the index just after the value at i.
func (d *decoded) skip(i int) int {
	x := d.vals[i]
	i++
	switch x.Kind {
	case capi.KindList, capi.KindTuple, capi.KindSet:
		for range x.N {
			i = d.skip(i)
		}
	case capi.KindDict:
		for range 2 * x.N {
			i = d.skip(i)
		}
	}
	return i
}

var pyKindNames = map[int32]string{
	capi.KindNone: "None", capi.KindBool: "bool", capi.KindInt: "int", capi.KindUint: "int",
	capi.KindBigInt: "int", capi.KindFloat: "float", capi.KindStr: "str", capi.KindBytes: "bytes",
	capi.KindList: "list", capi.KindTuple: "tuple", capi.KindDict: "dict", capi.KindSet: "set",
}

func (d *decoded) pyName(i int) string {
	if n, ok := pyKindNames[d.vals[i].Kind]; ok {
		return n
	}
	if o := d.objs[i]; o != nil {
		if n, err := o.TypeName(); err == nil {
			return n
		}
	}
	return "object"
}

// natural decodes the value at i to its natural Go form; returns the next index.
func (d *decoded) natural(i int) (any, int, error) {
	x := d.vals[i]
	switch x.Kind {
	case capi.KindNone:
		return nil, i + 1, nil
	case capi.KindBool:
		return x.I != 0, i + 1, nil
	case capi.KindInt:
		return x.I, i + 1, nil
	case capi.KindUint:
		return uint64(x.I), i + 1, nil
	case capi.KindBigInt:
		return d.bigInt(x), i + 1, nil
	case capi.KindFloat:
		return x.F, i + 1, nil
	case capi.KindStr:
		return d.text(x), i + 1, nil
	case capi.KindBytes:
		return []byte(d.text(x)), i + 1, nil
	case capi.KindList, capi.KindTuple, capi.KindSet:
		out := make([]any, 0, x.N)
		j := i + 1
		for range x.N {
			v, next, err := d.natural(j)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, v)
			j = next
		}
		return out, j, nil
	case capi.KindDict:
		allStr := true
		j := i + 1
		for range x.N {
			if d.vals[j].Kind != capi.KindStr {
				allStr = false
			}
			j = d.skip(d.skip(j))
		}
		j = i + 1
		if allStr {
			m := make(map[string]any, x.N)
			for range x.N {
				k := d.text(d.vals[j])
				v, next, err := d.natural(j + 1)
				if err != nil {
					return nil, 0, err
				}
				m[k] = v
				j = next
			}
			return m, j, nil
		}
		m := make(map[any]any, x.N)
		for range x.N {
			k, next, err := d.natural(j)
			if err != nil {
				return nil, 0, err
			}
			if k != nil && !reflect.TypeOf(k).Comparable() {
				return nil, 0, &ConversionError{Python: "dict", GoType: "map[any]any", Reason: fmt.Sprintf("key of Python type %s has no comparable Go form", d.pyName(j))}
			}
			v, next2, err := d.natural(next)
			if err != nil {
				return nil, 0, err
			}
			m[k] = v
			j = next2
		}
		return m, j, nil
	case capi.KindSlot:
		d.used[i] = true
		return d.objs[i], i + 1, nil
	}
	return nil, 0, &ConversionError{Reason: fmt.Sprintf("unknown value kind %d", x.Kind)}
}

var (
	objectType    = reflect.TypeFor[*Object]()
	bigIntType    = reflect.TypeFor[*big.Int]()
	converterType = reflect.TypeFor[Converter]()
)

// into decodes the value at i into dst; returns the next index.
func (d *decoded) into(i int, dst reflect.Value) (int, error) {
	x := d.vals[i]
	t := dst.Type()
	bad := func(reason string) error {
		return &ConversionError{Python: d.pyName(i), GoType: t.String(), Reason: reason}
	}
	wrong := func() (int, error) { return 0, bad("wrong type") }

	if t.Kind() == reflect.Pointer && t == objectType {
		if x.Kind == capi.KindSlot {
			d.used[i] = true
			dst.Set(reflect.ValueOf(d.objs[i]))
			return i + 1, nil
		}
		if x.Kind == capi.KindNone {
			dst.Set(reflect.ValueOf(interp.none))
			return i + 1, nil
		}
		// A plain value was encoded: rebuild it as an object.
		end := d.skip(i)
		r, err := result(capi.FromVals(d.sub(i, end)))
		if err != nil {
			return 0, err
		}
		dst.Set(reflect.ValueOf(r))
		return end, nil
	}
	if t.Kind() == reflect.Pointer && t == bigIntType {
		switch x.Kind {
		case capi.KindInt:
			dst.Set(reflect.ValueOf(big.NewInt(x.I)))
		case capi.KindUint:
			dst.Set(reflect.ValueOf(new(big.Int).SetUint64(uint64(x.I))))
		case capi.KindBigInt:
			v, _, err := d.natural(i)
			if err != nil {
				return 0, err
			}
			dst.Set(reflect.ValueOf(v))
		default:
			return wrong()
		}
		return i + 1, nil
	}
	if x.Kind == capi.KindSlot && t.Kind() != reflect.Interface {
		// An object the encoder could not flatten (a subclass, a GObject...).
		return wrong()
	}
	switch t.Kind() {
	case reflect.Interface:
		v, next, err := d.natural(i)
		if err != nil {
			return 0, err
		}
		if v == nil {
			dst.SetZero()
			return next, nil
		}
		rv := reflect.ValueOf(v)
		if !rv.Type().AssignableTo(t) {
			return 0, bad("does not implement " + t.String())
		}
		dst.Set(rv)
		return next, nil
	case reflect.Bool:
		if x.Kind != capi.KindBool {
			return wrong()
		}
		dst.SetBool(x.I != 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		switch x.Kind {
		case capi.KindInt:
			if dst.OverflowInt(x.I) {
				return 0, bad(fmt.Sprintf("%d does not fit", x.I))
			}
			dst.SetInt(x.I)
		case capi.KindUint:
			return 0, bad(fmt.Sprintf("%d does not fit", uint64(x.I)))
		case capi.KindBigInt:
			return 0, bad(clipDigits(d.bigInt(x)) + " does not fit")
		default:
			return wrong()
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		switch x.Kind {
		case capi.KindInt:
			if x.I < 0 || dst.OverflowUint(uint64(x.I)) {
				return 0, bad(fmt.Sprintf("%d does not fit", x.I))
			}
			dst.SetUint(uint64(x.I))
		case capi.KindUint:
			if dst.OverflowUint(uint64(x.I)) {
				return 0, bad(fmt.Sprintf("%d does not fit", uint64(x.I)))
			}
			dst.SetUint(uint64(x.I))
		case capi.KindBigInt:
			return 0, bad(clipDigits(d.bigInt(x)) + " does not fit")
		default:
			return wrong()
		}
	case reflect.Float32, reflect.Float64:
		switch x.Kind {
		case capi.KindFloat:
			if t.Kind() == reflect.Float32 && !math.IsInf(x.F, 0) && !math.IsNaN(x.F) && math.Abs(x.F) > math.MaxFloat32 {
				return 0, bad(strconv.FormatFloat(x.F, 'g', -1, 64) + " does not fit")
			}
			dst.SetFloat(x.F)
		case capi.KindInt:
			dst.SetFloat(float64(x.I))
		case capi.KindUint:
			dst.SetFloat(float64(uint64(x.I)))
		default:
			return wrong()
		}
	case reflect.String:
		if x.Kind != capi.KindStr && x.Kind != capi.KindBytes {
			return wrong()
		}
		dst.SetString(d.text(x))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && (x.Kind == capi.KindBytes || x.Kind == capi.KindStr) {
			dst.SetBytes([]byte(d.text(x)))
			return i + 1, nil
		}
		if x.Kind == capi.KindNone {
			dst.SetZero()
			return i + 1, nil
		}
		if x.Kind != capi.KindList && x.Kind != capi.KindTuple && x.Kind != capi.KindSet {
			return wrong()
		}
		if next, ok := d.fastSlice(i, dst); ok {
			return next, nil
		}
		s := reflect.MakeSlice(t, int(x.N), int(x.N))
		j := i + 1
		for k := range int(x.N) {
			next, err := d.into(j, s.Index(k))
			if err != nil {
				return 0, fmt.Errorf("[%d]: %w", k, err)
			}
			j = next
		}
		dst.Set(s)
		return j, nil
	case reflect.Array:
		if x.Kind != capi.KindList && x.Kind != capi.KindTuple {
			return wrong()
		}
		if int(x.N) != t.Len() {
			return 0, bad(fmt.Sprintf("length %d, want %d", x.N, t.Len()))
		}
		j := i + 1
		for k := range int(x.N) {
			next, err := d.into(j, dst.Index(k))
			if err != nil {
				return 0, fmt.Errorf("[%d]: %w", k, err)
			}
			j = next
		}
		return j, nil
	case reflect.Map:
		if x.Kind == capi.KindNone {
			dst.SetZero()
			return i + 1, nil
		}
		if x.Kind != capi.KindDict {
			return wrong()
		}
		m := reflect.MakeMapWithSize(t, int(x.N))
		j := i + 1
		for range int(x.N) {
			k := reflect.New(t.Key()).Elem()
			next, err := d.into(j, k)
			if err != nil {
				return 0, fmt.Errorf("key: %w", err)
			}
			if !k.Comparable() {
				return 0, bad("key has no comparable Go form")
			}
			v := reflect.New(t.Elem()).Elem()
			next, err = d.into(next, v)
			if err != nil {
				return 0, fmt.Errorf("[%v]: %w", k, err)
			}
			m.SetMapIndex(k, v)
			j = next
		}
		dst.Set(m)
		return j, nil
	case reflect.Pointer:
		if x.Kind == capi.KindNone {
			dst.SetZero()
			return i + 1, nil
		}
		p := reflect.New(t.Elem())
		next, err := d.into(i, p.Elem())
		if err != nil {
			return 0, err
		}
		dst.Set(p)
		return next, nil
	default:
		return 0, bad("unsupported Go type")
	}
	return i + 1, nil
}

// fastSlice decodes a flat list into the common slice types without
// reflection per element. It declines (ok false) on anything unusual, and
// the general path then produces the precise error.
func (d *decoded) fastSlice(i int, dst reflect.Value) (int, bool) {
	n := int(d.vals[i].N)
	items := d.vals[i+1:]
	if len(items) < n {
		return 0, false
	}
	items = items[:n]
	all := func(kind int32) bool {
		for _, x := range items {
			if x.Kind != kind {
				return false
			}
		}
		return true
	}
	if !dst.CanAddr() {
		return 0, false
	}
	switch p := dst.Addr().Interface().(type) {
	case *[]int:
		if !all(capi.KindInt) {
			return 0, false
		}
		out := make([]int, n)
		for k, x := range items {
			out[k] = int(x.I)
		}
		*p = out
	case *[]int64:
		if !all(capi.KindInt) {
			return 0, false
		}
		out := make([]int64, n)
		for k, x := range items {
			out[k] = x.I
		}
		*p = out
	case *[]float64:
		if !all(capi.KindFloat) {
			return 0, false
		}
		out := make([]float64, n)
		for k, x := range items {
			out[k] = x.F
		}
		*p = out
	case *[]string:
		if !all(capi.KindStr) {
			return 0, false
		}
		out := make([]string, n)
		for k, x := range items {
			out[k] = d.text(x)
		}
		*p = out
	default:
		return 0, false
	}
	return i + 1 + n, true
}

// sub returns the encoding of values [i, end) as a standalone value list.
func (d *decoded) sub(i, end int) ([]capi.Val, []byte) {
	return d.vals[i:end], d.arena
}

// decodeTop converts o to its natural Go form. Must run inside an operation.
func decodeTop(o *Object) (any, error) {
	var v any
	err := withDecoded(o, func(d *decoded) error {
		var err error
		v, _, err = d.natural(0)
		return err
	})
	return v, err
}

// decode converts o into the value dst points to (see As).
func (o *Object) decode(dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &ConversionError{GoType: fmt.Sprintf("%T", dst), Reason: "decoding needs a non-nil pointer"}
	}
	if err := enter(); err != nil {
		return err
	}
	defer exit()
	return withDecoded(o, func(d *decoded) error {
		_, err := d.into(0, rv.Elem())
		return err
	})
}

// As converts o to a T, which may be of any type New accepts, plus *Object
// anywhere, and any: o's natural Go form, which is nil, bool, int64
// (uint64 or *big.Int when it does not fit), float64, string, []byte, []any
// for lists, tuples and sets, map[string]any for dicts with only string
// keys (map[any]any otherwise), and *Object for anything else. Integers
// must fit an integer T exactly: nothing is truncated (an integer asked
// for as a float is rounded to the nearest float, as Python's float() does).
// A string T takes a str, or bytes as they are. On an error As returns T's
// zero value.
//
// As[*Object] is o itself (a new reference: Clone). Deeper in a value
// (As[[]*Object], a struct field), an *Object is the element itself when
// it is not a plain value (a GObject, an instance of a class of yours) and
// an equal copy when it is (a list, a dict, a number, a string): the value
// crosses as a whole.
func As[T any](o *Object) (T, error) {
	var v T
	switch t := reflect.TypeFor[T](); {
	case t == objectType:
		c, err := o.Clone()
		if err != nil {
			return v, err
		}
		return any(c).(T), nil
	case t.Kind() == reflect.Interface && t.NumMethod() == 0:
		if err := enter(); err != nil {
			return v, err
		}
		defer exit()
		g, err := decodeTop(o)
		if err != nil {
			return v, err
		}
		if g != nil {
			v = g.(T)
		}
		return v, nil
	}
	if err := o.decode(&v); err != nil {
		var zero T // not what was decoded before the error
		return zero, err
	}
	return v, nil
}
