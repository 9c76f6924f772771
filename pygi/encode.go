// encode.go: Go values to Python (New, call arguments, attributes, items).

package pygi

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/capi"
)

// Kw holds keyword arguments for Call and CallMethod. Each map's reach
// Python in the order of their names (a Go map has none of its own), maps
// in the order given, so a callee that reads **kwargs in order sees the
// same order on every run.
type Kw map[string]any

type kwArg struct {
	Name  string
	Value any
}

// Tuple converts to a Python tuple (other slices become lists), for
// example for a callback that must return several values to PyGObject.
type Tuple []any

// Converter lets a Go type choose its own Python form. The Object
// PyObject returns is used for the conversion and not closed: the type
// keeps owning it.
type Converter interface {
	PyObject() (*Object, error)
}

// New converts a Go value to a new Python object:
//
//	nil                         None
//	bool                        bool
//	int*, uint*, *big.Int       int (exact)
//	float32, float64            float
//	string                      str (must be valid UTF-8)
//	[]byte                      bytes
//	Tuple                       tuple
//	other slices, arrays        list
//	maps with string, integer, bool or float keys (or any holding those)  dict
//	*Object                     the same object (a new reference)
//	Converter                   whatever PyObject returns
//	pointers                    the value pointed to (nil: None)
//
// Go funcs become Python callables once the callbacks package is linked in.
// Any other type is an error naming it.
func New(v any) (*Object, error) {
	if err := enter(); err != nil {
		return nil, err
	}
	defer exit()
	e := getEncoder()
	defer e.release()
	if err := e.value(v); err != nil {
		return nil, err
	}
	r, err := result(capi.FromVals(e.vals, e.arena))
	e.done()
	return r, err
}

// encoder flattens Go values into capi.Val prefix encoding.
type encoder struct {
	vals  []capi.Val
	arena []byte
	keep  []*Object // Objects whose slots vals refer to: kept alive, temporaries closed
	temps []*Object
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

func getEncoder() *encoder { return encoders.Get().(*encoder) }

// done must follow the capi call that consumed the encoding: it keeps the
// referenced Objects alive until then and closes temporaries.
func (e *encoder) done() {
	runtime.KeepAlive(e.keep)
	for _, t := range e.temps {
		t.Close()
	}
	e.temps = e.temps[:0]
}

func (e *encoder) release() {
	if len(e.temps) > 0 {
		e.done()
	}
	clear(e.keep)
	e.keep = e.keep[:0]
	e.vals = e.vals[:0]
	if cap(e.arena) > 1<<20 { // don't pin a huge buffer in the pool
		e.arena = nil
	}
	e.arena = e.arena[:0]
	if cap(e.vals) > 1<<16 {
		e.vals = nil
	}
	encoders.Put(e)
}

func (e *encoder) push(kind int32) *capi.Val {
	e.vals = append(e.vals, capi.Val{Kind: kind})
	return &e.vals[len(e.vals)-1]
}

func (e *encoder) text(kind int32, s string) {
	off := len(e.arena)
	e.arena = append(e.arena, s...)
	x := e.push(kind)
	x.I, x.N = int64(off), int64(len(s))
}

func (e *encoder) str(s string) error {
	if !utf8.ValidString(s) {
		return &ConversionError{GoType: "string", Reason: fmt.Sprintf("not valid UTF-8 (use []byte for binary data): %q", clip(s))}
	}
	e.text(capi.KindStr, s)
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func (e *encoder) object(o *Object) error {
	s, err := o.get()
	if err != nil {
		return err
	}
	e.vals = append(e.vals, capi.SlotVal(s))
	e.keep = append(e.keep, o)
	return nil
}

// args encodes call arguments: positional values, then keyword pairs.
func (e *encoder) args(args []any) (nargs, nkw int, err error) {
	var small [8]kwArg // most calls pass a few keywords: no allocation for them
	kws := small[:0]
	for _, a := range args {
		switch a := a.(type) {
		case Kw:
			from := len(kws)
			for k, v := range a {
				kws = append(kws, kwArg{k, v})
			}
			slices.SortFunc(kws[from:], func(x, y kwArg) int { return strings.Compare(x.Name, y.Name) })
		default:
			if len(kws) > 0 {
				return 0, 0, &ConversionError{Reason: "positional argument after keyword arguments"}
			}
			if err := e.value(a); err != nil {
				return 0, 0, fmt.Errorf("argument %d: %w", nargs+1, err)
			}
			nargs++
		}
	}
	for i, kw := range kws {
		// Names are few and sorted within each Kw: a repeat is a later
		// one equal to an earlier one (no map to make on every call).
		repeated := false
		for _, before := range kws[:i] {
			repeated = repeated || before.Name == kw.Name
		}
		if kw.Name == "" || repeated {
			return 0, 0, &ConversionError{Reason: fmt.Sprintf("keyword argument %q is empty or repeated", kw.Name)}
		}
		if err := e.str(kw.Name); err != nil {
			return 0, 0, err
		}
		if err := e.value(kw.Value); err != nil {
			return 0, 0, fmt.Errorf("keyword argument %s: %w", kw.Name, err)
		}
	}
	return nargs, len(kws), nil
}

func (e *encoder) value(v any) error { return e.val(v, 0) }

// val encodes v, depth containers down: a value that holds itself is an
// error, not a stack overflow.
func (e *encoder) val(v any, depth int) error {
	switch v := v.(type) {
	case nil:
		e.push(capi.KindNone)
	case *Object:
		if v == nil {
			e.push(capi.KindNone)
			return nil
		}
		return e.object(v)
	case bool:
		x := e.push(capi.KindBool)
		if v {
			x.I = 1
		}
	case int:
		e.push(capi.KindInt).I = int64(v)
	case int64:
		e.push(capi.KindInt).I = v
	case int32:
		e.push(capi.KindInt).I = int64(v)
	case uint8:
		e.push(capi.KindInt).I = int64(v)
	case uint64:
		e.push(capi.KindUint).I = int64(v)
	case float64:
		e.push(capi.KindFloat).F = v
	case string:
		return e.str(v)
	case []byte:
		if v == nil {
			e.push(capi.KindNone)
			return nil
		}
		e.text(capi.KindBytes, string(v))
	case []int:
		e.push(capi.KindList).N = int64(len(v))
		for _, x := range v {
			e.push(capi.KindInt).I = int64(x)
		}
	case []int64:
		e.push(capi.KindList).N = int64(len(v))
		for _, x := range v {
			e.push(capi.KindInt).I = x
		}
	case []float64:
		e.push(capi.KindList).N = int64(len(v))
		for _, x := range v {
			e.push(capi.KindFloat).F = x
		}
	case []string:
		e.push(capi.KindList).N = int64(len(v))
		for _, x := range v {
			if err := e.str(x); err != nil {
				return err
			}
		}
	case Tuple:
		if depth > maxDepth {
			return tooDeep("pygi.Tuple")
		}
		e.push(capi.KindTuple).N = int64(len(v))
		for i, x := range v {
			if err := e.val(x, depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case []any:
		if depth > maxDepth {
			return tooDeep("[]interface {}")
		}
		e.push(capi.KindList).N = int64(len(v))
		for i, x := range v {
			if err := e.val(x, depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case map[string]any:
		if depth > maxDepth {
			return tooDeep("map[string]interface {}")
		}
		e.push(capi.KindDict).N = int64(len(v))
		for k, x := range v {
			if err := e.str(k); err != nil {
				return err
			}
			if err := e.val(x, depth+1); err != nil {
				return fmt.Errorf("[%q]: %w", k, err)
			}
		}
	case *big.Int:
		if v == nil {
			e.push(capi.KindNone)
			return nil
		}
		e.text(capi.KindBigInt, string(twosComplement(v)))
	case Converter:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			// Its PyObject would dereference it (a method promoted
			// through an embedded pointer, say).
			return &ConversionError{GoType: fmt.Sprintf("%T", v), Reason: "a nil pointer"}
		}
		o, err := v.PyObject()
		if err != nil {
			return err
		}
		return e.object(o)
	default:
		return e.reflect(reflect.ValueOf(v), depth)
	}
	return nil
}

const maxDepth = 100

func tooDeep(goType string) error {
	return &ConversionError{GoType: goType, Reason: "nested too deeply (or a cycle)"}
}

func (e *encoder) reflect(v reflect.Value, depth int) error {
	if depth > maxDepth {
		return tooDeep(v.Type().String())
	}
	if !v.IsValid() {
		e.push(capi.KindNone)
		return nil
	}
	if t := v.Type(); (t == objectType || t == bigIntType || t.Implements(converterType)) && v.CanInterface() {
		return e.val(v.Interface(), depth)
	}
	switch v.Kind() {
	case reflect.Bool:
		x := e.push(capi.KindBool)
		if v.Bool() {
			x.I = 1
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.push(capi.KindInt).I = v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := v.Uint()
		if u > math.MaxInt64 {
			e.push(capi.KindUint).I = int64(u)
		} else {
			e.push(capi.KindInt).I = int64(u)
		}
	case reflect.Float32, reflect.Float64:
		e.push(capi.KindFloat).F = v.Float()
	case reflect.String:
		return e.str(v.String())
	case reflect.Slice:
		if v.IsNil() {
			e.push(capi.KindNone)
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			e.text(capi.KindBytes, string(v.Bytes()))
			return nil
		}
		fallthrough
	case reflect.Array:
		n := v.Len()
		e.push(capi.KindList).N = int64(n)
		for i := range n {
			if err := e.reflect(v.Index(i), depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			e.push(capi.KindNone)
			return nil
		}
		if !validKeyKind(v.Type().Key().Kind()) {
			return &ConversionError{GoType: v.Type().String(), Reason: "map keys must be strings, integers, floats or bools"}
		}
		e.push(capi.KindDict).N = int64(v.Len())
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			if k.Kind() == reflect.Interface {
				k = k.Elem()
				if !k.IsValid() || !validKeyKind(k.Kind()) {
					return &ConversionError{GoType: v.Type().String(), Reason: fmt.Sprintf("map key of type %v is not a string, integer, float or bool", k.Type())}
				}
			}
			if err := e.reflect(k, depth+1); err != nil {
				return err
			}
			if err := e.reflect(it.Value(), depth+1); err != nil {
				return fmt.Errorf("[%v]: %w", k, err)
			}
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.push(capi.KindNone)
			return nil
		}
		return e.reflect(v.Elem(), depth+1)
	default:
		return e.custom(v)
	}
	return nil
}

func validKeyKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64, reflect.Interface,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// custom converts what only a higher package can: Go funcs, which package
// callbacks makes into callables (through internal/bridge, the
// database/sql driver idiom: it plugs in without pygi importing it).
func (e *encoder) custom(v reflect.Value) error {
	if f := bridge.FuncToPython; f != nil && v.Kind() == reflect.Func {
		o, err := f(v)
		if err != nil {
			return err
		}
		obj := o.(*Object)
		e.temps = append(e.temps, obj)
		return e.object(obj)
	}
	reason := "no conversion for this type"
	if v.Kind() == reflect.Func {
		reason = "Go funcs need the callbacks package (import github.com/duet-gtk/duet/callbacks)"
	}
	return &ConversionError{GoType: v.Type().String(), Reason: reason}
}

// twosComplement is v as big-endian two's complement bytes, as few as hold
// it with its sign (how a *big.Int crosses, exactly, at any size).
func twosComplement(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	n := v.BitLen()/8 + 1
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	m.Add(m, v)
	return m.FillBytes(make([]byte, n))
}
