package callbacks

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/duet-gtk/duet/internal/callsite"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/diag"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

func init() {
	pyobj.NewCallback = func(fn any, name string, broken, async bool, skip int) (*pygi.Object, error) {
		opts := []Option{Name(name)}
		if broken {
			opts = append(opts, func(c *config) { c.ownership = goOwnedBroken })
		}
		if async {
			return Async(fn, opts...)
		}
		return newCallback(fn, false, opts, captureSite(2+skip))
	}
	capi.SetCallbackHandlers(invoke, invokeBare, releaseCallback, releaseHandle)
	diag.CallbackCensus.Set(liveCallbacks)
	lifetime.SetErrorCause(errorCause)
	// Go funcs passed anywhere pygi takes a value become callbacks, owned the
	// same way (pygi closes its temporary reference after the operation).
	pyobj.SetFuncConverter(func(v reflect.Value) (*pygi.Object, error) {
		if v.IsNil() {
			return pygi.None(), nil
		}
		return New(v.Interface())
	})
	callsite.New = func(fn any, name string, at callsite.Site) (*pygi.Object, error) {
		where := site(at)
		return newCallback(fn, false, []Option{Name(name), onBehalf}, &where)
	}
}

// onBehalf marks a callback duet makes for its caller (callsite.New).
func onBehalf(c *config) { c.behalf = true }

// ownership says who frees a callback's native state.
type ownership int

const (
	// pythonOwned is the product: the callback's PyCapsule destructor, run
	// by CPython when the last Python reference to the function is gone,
	// frees it. The Go-side *pygi.Object is just one more reference.
	pythonOwned ownership = iota

	// goOwnedBroken is DELIBERATELY BROKEN. It exists only to reproduce the
	// classic crash of host-language bindings (the Deno seed's segfault):
	// the callback's native state (its PyMethodDef and Go handle) is freed
	// when the Go-side *pygi.Object is garbage-collected, even though Python
	// may still hold the function, so a later call from Python is a genuine
	// use-after-free that ends in a segfault or an abort. The stress harness
	// makes its workload's callbacks so with -ownership go (through
	// internal/pyobj.NewCallback); nothing else can.
	goOwnedBroken
)

// Option configures a callback.
type Option func(*config)

type config struct {
	name, doc, module string
	params            []string
	ownership         ownership
	method            bool
	behalf            bool // made by duet for its caller: sited at the caller's site (internal/callsite)
}

// Name sets the callable's __name__ (default: the Go function's name).
func Name(name string) Option { return func(c *config) { c.name = name } }

// Doc sets the callable's __doc__.
func Doc(doc string) Option { return func(c *config) { c.doc = doc } }

// Params names the positional parameters in __text_signature__ (and so in
// inspect.signature and help()); default arg0, arg1, ...
func Params(names ...string) Option { return func(c *config) { c.params = names } }

// Module sets the callable's __module__ (default: the Go function's package).
func Module(m string) Option { return func(c *config) { c.module = m } }

// New turns fn, any Go func, into a Python callable. The result is a
// builtin function (PyCFunction) whose __self__ is a PyCapsule that owns fn:
// fn lives exactly as long as Python holds the function, and the returned
// Object is just one more reference (drop or Close it freely).
//
// Parameters and results are adapted by reflection and checked here, once:
// parameters may be of any type pygi converts (*pygi.Object receives the
// argument itself, valid for the duration of the call: Clone it to keep it),
// variadic tails included; a parameter of type pygi.Kw, last or just before
// a variadic one, receives keyword arguments; a first parameter of type
// *pygi.Block receives a fresh Block, whose first error the call then
// raises as if returned (a handler written as a block needs no error
// plumbing). Results may be none, a value,
// a value and an error, or an error. A returned error raises GoError (an
// Exception); a panic is recovered and raises GoPanic, which derives from
// BaseException and carries the Go stack. Either comes back to Go as a
// *pygi.Error whose Unwrap gives the original error (or a *PanicError).
//
// The function runs with the GIL held (bare and lazy signal handlers
// excepted: see Connect); see pygi.WithoutGIL before blocking.
func New(fn any, opts ...Option) (*pygi.Object, error) {
	return newCallback(fn, false, opts, captureSite(2))
}

// NewMethod is New for functions that become methods of a Python class: the
// callable binds like a Python function (an instancemethod), so its first
// parameter receives the instance.
func NewMethod(fn any, opts ...Option) (*pygi.Object, error) {
	return newCallback(fn, true, opts, captureSite(2))
}

// entry is what a callback's handle designates: immutable after creation.
type entry struct {
	sig    signature
	name   string
	handle uintptr
	code   uintptr // the Go function's entry PC: where its code is, resolved only when shown
	site   *site   // the callers of New or Connect, with provenance on
	behalf bool    // site is the caller of the duet API that made it (see created)
}

// registry holds the live callbacks and the counters.
var registry struct {
	handles                  handleTable
	created, freed, freedByG atomic.Int64
}

func register(e *entry) uintptr {
	h := registry.handles.add(e)
	registry.created.Add(1)
	return h
}

// releaseCallback runs in the capsule destructor: any thread, maybe inside
// gc.collect() or Py_FinalizeEx. It never calls Python, blocks or panics.
func releaseCallback(h uintptr) {
	if e := registry.handles.get(h); e != nil && registry.handles.remove(h) {
		registry.freed.Add(1)
		lifetime.ForgetCallback(h)
		bury(e, "Python (its last reference went away)")
	}
}

// prepare checks fn and works out its adaptation and configuration; no
// Python involved.
func prepare(fn any, method bool, opts []Option) (signature, config, uintptr, error) {
	cfg := config{method: method}
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.Kind() != reflect.Func || v.IsNil() {
		return signature{}, cfg, 0, fmt.Errorf("callbacks: want a non-nil func, got %T", fn)
	}
	cfg.name, cfg.module = funcName(v)
	if len(opts) > 0 {
		// Options see a heap copy, so that cfg itself stays on the stack
		// for the common call without options.
		c := new(config)
		*c = cfg
		for _, o := range opts {
			o(c)
		}
		cfg = *c
	}
	sig, err := analyze(v, cfg)
	return sig, cfg, v.Pointer(), err
}

func newCallback(fn any, method bool, opts []Option, where *site) (*pygi.Object, error) {
	sig, cfg, code, err := prepare(fn, method, opts)
	if err != nil {
		return nil, err
	}
	if err := lifetime.Enter(); err != nil {
		return nil, err
	}
	defer lifetime.Exit()
	// The function's own code address says where the handler was written
	// (a func literal: the line of its func keyword), at no cost here;
	// walking the stack to the caller is what provenance pays (make
	// bench's "callback provenance" row).
	e := &entry{sig: sig, name: cfg.name, code: code, site: where, behalf: cfg.behalf}
	h := register(e)
	flags := 0
	if method {
		flags |= capi.CallbackMethod
	}
	if cfg.ownership == goOwnedBroken {
		flags |= capi.CallbackBroken
	}
	ref, native, st, exc := capi.NewCallback(h, cfg.name, e.sig.doc(cfg), cfg.module, flags)
	if st != capi.OK {
		releaseCallback(h) // a no-op if the capsule destructor already ran
		return nil, pyobj.Error(exc)
	}
	o := pyobj.Owned(ref)
	if cfg.ownership == goOwnedBroken {
		runtime.AddCleanup(o, freeBroken, brokenState{handle: h, native: native})
	}
	return o, nil
}

type brokenState struct {
	handle uintptr
	native unsafe.Pointer // C memory
}

// freeBroken is the broken mode's GC cleanup: it frees the native state of
// a callback Python may still hold.
func freeBroken(b brokenState) {
	if e := registry.handles.get(b.handle); e != nil {
		// Buried before it leaves the table: a call that finds the handle
		// gone, at any moment, finds its grave (DUET_DEBUG=callbacks).
		bury(e, "the Go GC (the deliberately broken ownership)")
		if registry.handles.remove(b.handle) {
			registry.freedByG.Add(1)
			lifetime.ForgetCallback(b.handle)
		}
	}
	capi.FreeNative(b.native)
}

var names sync.Map // code pointer -> [2]string{name, module}

// funcName derives a Python-friendly name and module from a Go func.
func funcName(v reflect.Value) (name, module string) {
	pc := v.Pointer()
	if n, ok := names.Load(pc); ok {
		nm := n.([2]string)
		return nm[0], nm[1]
	}
	defer func() { names.Store(pc, [2]string{name, module}) }()
	full := "callback"
	if f := runtime.FuncForPC(pc); f != nil {
		full = f.Name()
	}
	full = strings.TrimSuffix(full, "-fm") // method values
	pkg := ""
	if i := strings.LastIndex(full, "/"); i >= 0 {
		pkg, full = full[:i+1], full[i+1:]
	}
	if i := strings.Index(full, "."); i >= 0 {
		pkg, full = pkg+full[:i], full[i+1:]
	}
	parts := strings.Split(full, ".")
	name = parts[len(parts)-1]
	// Closures are funcN or gowrapN: name them after their enclosing function.
	if len(parts) > 1 && (strings.HasPrefix(name, "func") || strings.HasPrefix(name, "gowrap")) {
		name = parts[len(parts)-2] + "_" + name
	}
	name = strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, name)
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "callback" + name
	}
	return name, pkg
}

func init() {
	diag.CallbackCounts.Set(func() diag.CallbackStats {
		s := diag.CallbackStats{
			Created:     registry.created.Load(),
			Freed:       registry.freed.Load(),
			FreedByGoGC: registry.freedByG.Load(),
		}
		s.Live = s.Created - s.Freed - s.FreedByGoGC
		return s
	})
}
