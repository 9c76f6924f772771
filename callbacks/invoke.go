package callbacks

import (
	"fmt"
	"math/big"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

var (
	blockType  = reflect.TypeFor[*pygi.Block]()
	objectType = reflect.TypeFor[*pygi.Object]()
	kwType     = reflect.TypeFor[pygi.Kw]()
	errorType  = reflect.TypeFor[error]()
	bigIntType = reflect.TypeFor[*big.Int]()
)

// shape is how a func type is adapted to Python's calling convention. It is
// worked out once per type and shared by every callback of that type.
type shape struct {
	typ   reflect.Type
	fixed []reflect.Type // positional parameters before any variadic tail
	rest  reflect.Type   // element type of the variadic tail, or nil
	kwAt  int            // index of the pygi.Kw parameter, or -1
	block bool           // the first parameter is a *pygi.Block the call provides
	nin   int            // number of Go parameters
	// results
	hasValue, hasErr bool
	// lazy: the parameters are *pygi.Object (after an optional Block), one
	// to maxLazy of them, and the only result is an error, if any: on a
	// signal it runs lazily (see runOf)
	lazy bool

	lastDoc atomic.Pointer[docEntry] // the doc last built for this shape
}

// docEntry is one built doc with what it was built from.
type docEntry struct {
	key docKey
	doc string
}

// signature is one callback's function with its shape.
type signature struct {
	*shape
	fn   reflect.Value
	name string
	// fast paths that skip reflection for the commonest shapes
	fast0    func()
	fast0err func() error
	fastObj  func(*pygi.Object)
	fastObjs func(...*pygi.Object)
	// the shapes of handlers written with a Block (a list factory's setup
	// and bind, a widget's map)
	fastBlock1 func(*pygi.Block, *pygi.Object)
	fastBlock2 func(*pygi.Block, *pygi.Object, *pygi.Object)
}

var shapes sync.Map // reflect.Type -> *shape (memoised; an error is not cached)

// analyze returns the signature by value: it lives inside its entry, one
// allocation fewer per callback.
func analyze(v reflect.Value, cfg config) (signature, error) {
	t := v.Type()
	sh, ok := shapes.Load(t)
	if !ok {
		s, err := analyzeType(t, cfg.name)
		if err != nil {
			return signature{}, err
		}
		sh, _ = shapes.LoadOrStore(t, s)
	}
	s := signature{shape: sh.(*shape), fn: v, name: cfg.name}
	switch f := v.Interface().(type) {
	case func():
		s.fast0 = f
	case func() error:
		s.fast0err = f
	case func(*pygi.Object):
		s.fastObj = f
	case func(...*pygi.Object):
		s.fastObjs = f
	case func(*pygi.Block, *pygi.Object):
		s.fastBlock1 = f
	case func(*pygi.Block, *pygi.Object, *pygi.Object):
		s.fastBlock2 = f
	}
	return s, nil
}

func analyzeType(t reflect.Type, name string) (*shape, error) {
	s := &shape{typ: t, kwAt: -1, nin: t.NumIn()}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("callbacks: %s (%v): %s", name, t, fmt.Sprintf(format, args...))
	}
	n := t.NumIn()
	if t.IsVariadic() {
		s.rest = t.In(n - 1).Elem()
		n--
	}
	for i := range n {
		p := t.In(i)
		if p == blockType {
			if i != 0 {
				return nil, bad("the *pygi.Block parameter must come first")
			}
			s.block = true
			continue
		}
		if p == kwType {
			if i != n-1 {
				return nil, bad("the pygi.Kw parameter must come last (or just before a variadic one)")
			}
			s.kwAt = i
			continue
		}
		if err := convertible(p); err != nil {
			return nil, bad("parameter %d: %v", i+1, err)
		}
		s.fixed = append(s.fixed, p)
	}
	if s.rest != nil {
		if err := convertible(s.rest); err != nil {
			return nil, bad("variadic parameter: %v", err)
		}
	}
	switch t.NumOut() {
	case 0:
	case 1:
		if t.Out(0) == errorType {
			s.hasErr = true
		} else {
			s.hasValue = true
		}
	case 2:
		if t.Out(1) != errorType {
			return nil, bad("with two results the second must be error")
		}
		s.hasValue, s.hasErr = true, true
	default:
		return nil, bad("at most two results (a value and an error)")
	}
	if s.hasValue {
		if err := convertible(t.Out(0)); err != nil {
			return nil, bad("result: %v", err)
		}
	}
	s.lazy = s.rest == nil && s.kwAt < 0 && !s.hasValue && len(s.fixed) > 0 && len(s.fixed) <= maxLazy
	for _, p := range s.fixed {
		s.lazy = s.lazy && p == objectType
	}
	return s, nil
}

// maxLazy is how many GObjects a lazy handler may take (the marshal's
// array in internal/capi/gobject.c).
const maxLazy = 8

// convertible reports whether pygi can convert values of type t both ways.
func convertible(t reflect.Type) error {
	return convertibleDepth(t, 0)
}

func convertibleDepth(t reflect.Type, depth int) error {
	if depth > 20 {
		return fmt.Errorf("type %v nests too deeply", t)
	}
	if t == objectType || t == bigIntType || t == kwType {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64, reflect.Interface,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return nil
	case reflect.Slice, reflect.Array, reflect.Pointer:
		return convertibleDepth(t.Elem(), depth+1)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64, reflect.Interface,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			return fmt.Errorf("map key type %v is not a string, number or bool", t.Key())
		}
		return convertibleDepth(t.Elem(), depth+1)
	}
	return fmt.Errorf("type %v has no Python conversion", t)
}

type docKey struct {
	t                   reflect.Type
	name, module, given string
	method              bool
}

var docs sync.Map // docKey -> string, for callbacks without Params

// doc builds the PyMethodDef doc: CPython reads __text_signature__ from a
// leading "name(signature)\n--\n\n".
func (s *shape) doc(cfg config) string {
	if len(cfg.params) > 0 {
		return s.buildDoc(cfg)
	}
	k := docKey{s.typ, cfg.name, cfg.module, cfg.doc, cfg.method}
	// A handler connected again and again (a list factory's, a window's
	// built anew) asks for the same doc each time: comparing with the
	// shape's last one is cheaper than hashing the key into docs.
	if last := s.lastDoc.Load(); last != nil && last.key == k {
		return last.doc
	}
	var d string
	if v, ok := docs.Load(k); ok {
		d = v.(string)
	} else {
		d = s.buildDoc(cfg)
		docs.Store(k, d)
	}
	s.lastDoc.Store(&docEntry{k, d})
	return d
}

func (s *shape) buildDoc(cfg config) string {
	var ps []string
	for i := range s.fixed {
		name := fmt.Sprintf("arg%d", i)
		if i < len(cfg.params) {
			name = cfg.params[i]
		} else if cfg.method && i == 0 {
			name = "self"
		}
		ps = append(ps, name)
	}
	if len(ps) > 0 {
		ps = append(ps, "/")
	}
	if s.rest != nil {
		ps = append(ps, "*args")
	}
	if s.kwAt >= 0 {
		ps = append(ps, "**kwargs")
	}
	doc := cfg.doc
	if doc == "" {
		doc = fmt.Sprintf("Go function %s.%s %v.", strings.TrimSuffix(cfg.module, "."), cfg.name, s.typ)
	}
	return fmt.Sprintf("%s(%s)\n--\n\n%s", cfg.name, strings.Join(ps, ", "), doc)
}

// typeError is a Python TypeError to raise.
type typeError string

// invoke is the Go side of the C trampoline. It looks the handle up outside
// the recover: an unknown handle means the native state outlived its Go side
// (only the broken ownership mode does that), and it must crash loudly, not
// turn into a Python exception. The C caller does the crashing (see
// capi.ResultGone), because it knows whether a signal or Python called; not
// a panic here: a recover further up the goroutine (the loop's panic
// handler) would unwind through Python's C frames with the GIL held, and
// the app would hang instead of crashing.
func invoke(h uintptr, args []capi.Ref, nargs, nkw int, kwnames capi.Ref) (res capi.Ref, rc capi.CallbackResult) {
	e := registry.handles.get(h)
	if e == nil {
		return capi.Ref{}, capi.ResultGone
	}
	returned := false
	defer func() {
		if !returned {
			escaped(e.name, recover())
		}
	}()
	res, rc = e.sig.call(args, nargs, nkw, kwnames)
	returned = true
	return res, rc
}

// invokeBare is the Go side of a bare signal closure (see
// internal/capi/gobject.c): a function taking nothing and returning nothing
// or an error, run without the GIL. A failure attaches, raises and prints,
// as the GIL path's marshal prints what a handler raised.
//
// It runs as an entry of the lifetime gate, as the GIL held Finalize back
// on the GIL path: Finalize waits for a bare handler running (and the pygi
// calls it makes are nested in it), so its failure is raised in a live
// interpreter. One that begins while Finalize decides waits until the
// gate opens again, as any entry does (holding no GIL): it runs when
// Finalize gives up or reopens the gate for threading's shutdown; unless
// it is nested in an entry or callback of this thread, which Finalize
// waits for already; one that finds Python finalised does not run, as a
// GIL-path emission on another thread does not. Like any entry, one that
// waits for another goroutine's call into Python while Finalize decides
// holds Finalize up until Finalize's context ends. (What the emission runs after the
// handler, a Python class's default handler say, is GLib's: nothing here
// holds Finalize back for it.)
//
// A lazy handler (gobjs not empty: it takes only GObjects) is given them as
// Objects that make their Python wrappers when first used; they end when
// it returns, still inside its entry, and the wrappers made go back to
// the marshal in made (which releases them, still counted in flight).
func invokeBare(h uintptr, nested bool, gobjs []uintptr, made []capi.Ref) (rc capi.CallbackResult) {
	e := registry.handles.get(h)
	if e == nil {
		return capi.ResultGone
	}
	if lifetime.EnterNested(nested) != nil {
		return capi.ResultNotRun
	}
	defer lifetime.Exit()
	returned := false
	defer func() {
		if !returned {
			escaped(e.name, recover())
		}
	}()
	if len(gobjs) > 0 {
		rc = e.sig.callLazy(gobjs, made)
	} else {
		rc = e.sig.callBare()
	}
	returned = true
	return rc
}

// callLazy runs a lazy handler (see runOf) given its GObjects; the
// references of the wrappers it made for them go into made, for the
// marshal to release. The commonest shapes take one or two, each in a
// function of its own (the compiler open-codes small functions' defers:
// see call).
func (s *signature) callLazy(gobjs []uintptr, made []capi.Ref) capi.CallbackResult {
	switch {
	case len(gobjs) == 1 && (s.fastObj != nil || s.fastBlock1 != nil):
		return s.lazy1(gobjs[0], made)
	case len(gobjs) == 2 && s.fastBlock2 != nil:
		return s.lazy2(gobjs[0], gobjs[1], made)
	}
	return s.lazyN(gobjs, made)
}

// endLazy ends o, leaving the reference of its wrapper, if one was made,
// in *made.
func endLazy(o *pygi.Object, made *capi.Ref) {
	if r, ok := pyobj.EndLazy(o); ok {
		*made = r
	}
}

func (s *signature) lazy1(g uintptr, made []capi.Ref) (rc capi.CallbackResult) {
	o := pyobj.Lazy(g)
	defer endLazy(o, &made[0])
	var err error
	defer s.reportBare(&err, &rc)
	if s.fastObj != nil {
		s.fastObj(o)
	} else {
		var b pygi.Block
		s.fastBlock1(&b, o)
		err = b.Err() // the block's first error, as if returned
	}
	return capi.ResultNone
}

func (s *signature) lazy2(g1, g2 uintptr, made []capi.Ref) (rc capi.CallbackResult) {
	o1, o2 := pyobj.Lazy(g1), pyobj.Lazy(g2)
	defer endLazy(o1, &made[0])
	defer endLazy(o2, &made[1])
	var err error
	defer s.reportBare(&err, &rc)
	var b pygi.Block
	s.fastBlock2(&b, o1, o2)
	err = b.Err()
	return capi.ResultNone
}

func (s *signature) lazyN(gobjs []uintptr, made []capi.Ref) (rc capi.CallbackResult) {
	objs := make([]*pygi.Object, len(gobjs))
	for i, p := range gobjs {
		objs[i] = pyobj.Lazy(p)
	}
	defer func() {
		for i, o := range objs {
			endLazy(o, &made[i])
		}
	}()
	var err error
	defer s.reportBare(&err, &rc)
	if len(objs) != len(s.fixed) {
		panic("callbacks: a lazy closure given the wrong number of GObjects")
	}
	in := make([]reflect.Value, 0, s.nin)
	var block *pygi.Block
	if s.block {
		block = new(pygi.Block)
		in = append(in, reflect.ValueOf(block))
	}
	for _, o := range objs {
		in = append(in, reflect.ValueOf(o))
	}
	_, err = s.results(s.fn.Call(in), block)
	return capi.ResultNone
}

func (s *signature) callBare() (rc capi.CallbackResult) {
	var err error
	defer s.reportBare(&err, &rc)
	switch {
	case s.fast0 != nil:
		s.fast0()
	case s.fast0err != nil:
		err = s.fast0err()
	default: // connected bare only for these shapes (see runOf)
		panic("callbacks: a bare closure for a handler that takes or returns values")
	}
	return capi.ResultNone
}

// reportBare raises and prints what a handler run without the GIL
// returned or panicked (it attaches to do so), as the GIL path's marshal
// prints what a handler raised.
func (s *signature) reportBare(errp *error, rc *capi.CallbackResult) {
	p := recover()
	err := *errp
	if p == nil && err == nil {
		return
	}
	*rc = capi.ResultRaised
	st := capi.Attach() // inside invokeBare's entry
	defer capi.Detach(st)
	if p != nil {
		var res capi.Ref
		s.raisePanic(p, &res, rc)
	} else {
		raiseGo(err)
	}
	capi.PrintRaised()
}

// escaped runs when a callback did not return: a panic that got past the
// recover (a bug in this package), or runtime.Goexit (t.FailNow, require.*
// or log.Fatal-like helpers in a handler). Neither can continue: Goexit
// cannot be stopped once started, and either would unwind through
// CPython's C frames, abandoning them with the GIL held, after which the
// process hangs. So the process ends here, saying why.
func escaped(name string, p any) {
	what := "runtime.Goexit (t.FailNow, require.*, or a library calling Goexit?)"
	if p != nil {
		what = fmt.Sprintf("a panic that escaped the boundary: %v", p)
	}
	fmt.Fprintf(os.Stderr, "duet: fatal: %s inside Go callback %s, called from Python: "+
		"it cannot unwind through Python's C frames, so the process ends here "+
		"(in tests, use the testing.TB that looptest.Do passes, or return an error)\n%s\n", what, name, debug.Stack())
	os.Exit(2)
}

func (s *signature) call(args []capi.Ref, nargs, nkw int, kwnames capi.Ref) (res capi.Ref, rc capi.CallbackResult) {
	// The commonest shapes first, without reflection or closures, each in
	// a function of its own: the compiler open-codes the defers of a small
	// function, and those of one function holding them all went through
	// the runtime's defer records (a signal's handler paid for them on
	// every emission).
	if nkw == 0 {
		switch {
		case s.fast0 != nil && nargs == 0:
			return s.call0()
		case s.fastObj != nil && nargs == 1:
			return s.callObj(args[0])
		case s.fastBlock1 != nil && nargs == 1:
			return s.callBlock1(args[0])
		case s.fastBlock2 != nil && nargs == 2:
			return s.callBlock2(args[0], args[1])
		}
	}
	return s.callSlow(args, nargs, nkw, kwnames)
}

func (s *signature) call0() (res capi.Ref, rc capi.CallbackResult) {
	defer s.recoverInto(&res, &rc)
	s.fast0()
	return capi.Ref{}, capi.ResultNone
}

func (s *signature) callObj(a capi.Ref) (res capi.Ref, rc capi.CallbackResult) {
	o := pyobj.Borrowed(a)
	defer pyobj.Invalidate(o)
	defer s.recoverInto(&res, &rc)
	s.fastObj(o)
	return capi.Ref{}, capi.ResultNone
}

func (s *signature) callBlock1(a capi.Ref) (res capi.Ref, rc capi.CallbackResult) {
	o := pyobj.Borrowed(a)
	defer pyobj.Invalidate(o)
	defer s.recoverInto(&res, &rc)
	var b pygi.Block
	s.fastBlock1(&b, o)
	return s.finish(nil, b.Err()) // the block's first error, as if returned
}

func (s *signature) callBlock2(a1, a2 capi.Ref) (res capi.Ref, rc capi.CallbackResult) {
	o1, o2 := pyobj.Borrowed(a1), pyobj.Borrowed(a2)
	defer pyobj.Invalidate(o1)
	defer pyobj.Invalidate(o2)
	defer s.recoverInto(&res, &rc)
	var b pygi.Block
	s.fastBlock2(&b, o1, o2)
	return s.finish(nil, b.Err())
}

// recoverInto turns a panic into the Python exception the call raises.
func (s *signature) recoverInto(res *capi.Ref, rc *capi.CallbackResult) {
	if p := recover(); p != nil {
		s.raisePanic(p, res, rc)
	}
}

func (s *signature) raisePanic(p any, res *capi.Ref, rc *capi.CallbackResult) {
	if te, ok := p.(typeError); ok {
		capi.RaiseMessage(capi.TypeError, string(te))
	} else {
		raiseGo(&pygi.PanicError{Where: "Go callback " + s.name, Value: p, Stack: string(debug.Stack())})
	}
	*res, *rc = capi.Ref{}, capi.ResultRaised
}

func (s *signature) callSlow(args []capi.Ref, nargs, nkw int, kwnames capi.Ref) (res capi.Ref, rc capi.CallbackResult) {
	// Arguments are borrowed: wrap them without taking references and end
	// their validity when the call returns.
	var small [6]*pygi.Object
	objs := small[:0]
	borrow := func(r capi.Ref) *pygi.Object {
		o := pyobj.Borrowed(r)
		objs = append(objs, o)
		return o
	}
	defer func() {
		for _, o := range objs {
			pyobj.Invalidate(o)
		}
	}()
	defer s.recoverInto(&res, &rc)

	switch {
	case s.fast0err != nil && nargs == 0 && nkw == 0:
		return s.finish(nil, s.fast0err())
	case s.fastObjs != nil && nkw == 0:
		in := make([]*pygi.Object, nargs)
		for i := range in {
			in[i] = borrow(args[i])
		}
		s.fastObjs(in...)
		return capi.Ref{}, capi.ResultNone
	}

	if nargs < len(s.fixed) || (s.rest == nil && nargs > len(s.fixed)) {
		panic(typeError(fmt.Sprintf(s.arity(nargs), s.name)))
	}
	if nkw > 0 && s.kwAt < 0 {
		names := borrow(kwnames)
		first, _ := names.Item(0)
		name, _ := pygi.As[string](first)
		panic(typeError(fmt.Sprintf("%s() got an unexpected keyword argument '%s'", s.name, name)))
	}
	in := make([]reflect.Value, 0, s.nin+nargs)
	var block *pygi.Block
	if s.block {
		block = new(pygi.Block)
		in = append(in, reflect.ValueOf(block))
	}
	for i, t := range s.fixed {
		in = append(in, s.arg(i, t, borrow(args[i])))
	}
	if s.kwAt >= 0 { // always right after the fixed parameters
		m := pygi.Kw{}
		if nkw > 0 {
			names, err := pygi.As[[]string](borrow(kwnames))
			if err != nil {
				panic(typeError(fmt.Sprintf("%s(): keyword names: %v", s.name, err)))
			}
			for j, name := range names {
				v, err := pygi.As[any](borrow(args[nargs+j]))
				if err != nil {
					panic(typeError(fmt.Sprintf("%s() keyword argument '%s': %v", s.name, name, err)))
				}
				m[name] = v
			}
		}
		in = append(in, reflect.ValueOf(m))
	}
	if s.rest != nil {
		for i := len(s.fixed); i < nargs; i++ {
			in = append(in, s.arg(i, s.rest, borrow(args[i])))
		}
	}
	return s.finish(s.results(s.fn.Call(in), block))
}

// results reads what a reflective call returned: its value and its error,
// or the block's first error, as if returned.
func (s *signature) results(out []reflect.Value, block *pygi.Block) (val any, err error) {
	if s.hasValue {
		val = out[0].Interface()
	}
	if s.hasErr {
		if e := out[len(out)-1]; !e.IsNil() {
			err = e.Interface().(error)
		}
	}
	if err == nil && block != nil {
		err = block.Err()
	}
	return val, err
}

func (s *shape) arity(nargs int) string {
	want := fmt.Sprint(len(s.fixed))
	if s.rest != nil {
		want = "at least " + want
	}
	plural := "s"
	if len(s.fixed) == 1 {
		plural = ""
	}
	return fmt.Sprintf("%%s() takes %s positional argument%s but %d were given", want, plural, nargs)
}

// arg converts argument i (0-based) to t.
func (s *signature) arg(i int, t reflect.Type, o *pygi.Object) reflect.Value {
	if t == objectType {
		return reflect.ValueOf(o)
	}
	p := reflect.New(t)
	if err := pyobj.Decode(o, p.Interface()); err != nil {
		panic(typeError(fmt.Sprintf("%s() argument %d: %v", s.name, i+1, err)))
	}
	return p.Elem()
}

// finish turns the Go results into the callback's Python result.
func (s *signature) finish(val any, err error) (capi.Ref, capi.CallbackResult) {
	if err != nil {
		raiseGo(err)
		return capi.Ref{}, capi.ResultRaised
	}
	if val == nil {
		return capi.Ref{}, capi.ResultNone
	}
	if o, ok := val.(*pygi.Object); ok && o == nil {
		return capi.Ref{}, capi.ResultNone
	}
	// A new reference for Python: the Go value (even an *Object the Go code
	// keeps using) stays the Go code's.
	r, st, err := pyobj.NewRef(val)
	if err != nil {
		capi.RaiseMessage(capi.TypeError, fmt.Sprintf("%s() returned a value Python cannot hold: %v", s.name, err))
		return capi.Ref{}, capi.ResultRaised
	}
	if st == capi.None {
		return capi.Ref{}, capi.ResultNone
	}
	return r, capi.ResultRef
}
