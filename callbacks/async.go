package callbacks

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

var (
	ctxType     = reflect.TypeFor[context.Context]()
	errType     = reflect.TypeFor[error]()
	objType     = reflect.TypeFor[*pygi.Object]()
	uintptrType = reflect.TypeFor[uintptr]()
	boolType    = reflect.TypeFor[bool]()
)

// Async makes fn, a func(ctx context.Context, args...) returning (T,
// error), error, T or nothing, into a Python coroutine function: awaiting
// it (on the duet loop, where asyncio runs; see package eventloop) runs fn
// on a goroutine of its own, and the await's value is fn's result. (The
// goroutine is one kept for such calls, so that an await costs no
// goroutine start: it runs one call at a time, and a call never waits for
// another. A thread fn locks with runtime.LockOSThread and leaves locked
// stays with it for later calls instead of ending with it, and fn runs
// without the caller's pprof labels.) A
// returned error raises GoError, a panic GoPanic, as for any callback.
// Cancelling the awaiting task cancels ctx (fn decides when to stop; the
// task does not wait for it). The arguments are converted as for New,
// before the goroutine starts; *pygi.Object arguments are fn's to keep.
//
// The coroutine function is owned by Python like every callback: it, and
// what fn captured, live as long as Python holds it. It holds two
// callbacks (NAME, which starts an await, and NAME.cancel); an await in
// flight is an entry in a Go table, gone when its goroutine ends.
func Async(fn any, opts ...Option) (*pygi.Object, error) {
	fv := reflect.ValueOf(fn)
	if !fv.IsValid() || fv.Kind() != reflect.Func || fv.IsNil() {
		return nil, fmt.Errorf("callbacks: Async wants a non-nil func, got %T", fn)
	}
	ft := fv.Type()
	if ft.NumIn() == 0 || ft.In(0) != ctxType {
		return nil, fmt.Errorf("callbacks: Async wants a func whose first parameter is a context.Context, got %s", ft)
	}
	split, err := asyncResults(ft)
	if err != nil {
		return nil, err
	}
	var cfg config
	cfg.name, _ = funcName(fv)
	for _, o := range opts {
		o(&cfg)
	}
	name := cfg.name
	in := []reflect.Type{objType, boolType}
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	startType := reflect.FuncOf(in, []reflect.Type{uintptrType, errType}, ft.IsVariadic())
	start := reflect.MakeFunc(startType, func(args []reflect.Value) []reflect.Value {
		token, err := startAsync(fv, name, split, args)
		if err != nil {
			return []reflect.Value{reflect.Zero(uintptrType), reflect.ValueOf(&err).Elem()}
		}
		return []reflect.Value{reflect.ValueOf(token), reflect.Zero(errType)}
	})
	return makeAsync(start.Interface(), name, opts)
}

// makeAsync makes the two callbacks and the coroutine function over them.
func makeAsync(start any, name string, opts []Option) (*pygi.Object, error) {
	startCb, err := newCallback(start, false, append([]Option{Name(name)}, opts...), captureSite(3))
	if err != nil {
		return nil, err
	}
	defer startCb.Close()
	cancelCb, err := newCallback(cancelAwait, false, []Option{Name(name + ".cancel")}, nil)
	if err != nil {
		return nil, err
	}
	defer cancelCb.Close()
	m, err := excModule()
	if err != nil {
		return nil, err
	}
	return m.CallMethod("make_async", startCb, cancelCb, name)
}

// awaits holds the cancel funcs of awaits in flight, by token.
var awaits struct {
	m    sync.Map // uintptr -> context.CancelFunc
	next atomic.Uintptr
}

// cancelAwait is NAME.cancel: Python's task was cancelled while awaiting.
func cancelAwait(token uintptr) {
	if c, ok := awaits.m.Load(token); ok {
		c.(context.CancelFunc)()
	}
}

// asyncResults checks fn's results and returns how to read them.
func asyncResults(ft reflect.Type) (func([]reflect.Value) (any, error), error) {
	errOf := func(v reflect.Value) error {
		if v.IsNil() {
			return nil
		}
		return v.Interface().(error)
	}
	switch {
	case ft.NumOut() == 0:
		return func([]reflect.Value) (any, error) { return nil, nil }, nil
	case ft.NumOut() == 1 && ft.Out(0) == errType:
		return func(out []reflect.Value) (any, error) { return nil, errOf(out[0]) }, nil
	case ft.NumOut() == 1:
		return func(out []reflect.Value) (any, error) { return out[0].Interface(), nil }, nil
	case ft.NumOut() == 2 && ft.Out(1) == errType:
		return func(out []reflect.Value) (any, error) { return out[0].Interface(), errOf(out[1]) }, nil
	}
	return nil, fmt.Errorf("callbacks: Async wants results (T, error), error, T or none, got %s", ft)
}

// startAsync runs inside the start callback (with the GIL): args[0] is the
// future to settle, the rest fn's arguments. It starts fn on a goroutine
// and returns the await's token for NAME.cancel.
func startAsync(fv reflect.Value, name string, split func([]reflect.Value) (any, error), args []reflect.Value) (uintptr, error) {
	// Arguments are lent for the duration of the call: keep what outlives it.
	fut, err := args[0].Interface().(*pygi.Object).Clone()
	if err != nil {
		return 0, err
	}
	duetLoop := args[1].Bool()
	call := []reflect.Value{{}}
	for _, a := range args[2:] {
		if a.Type() == objType && !a.IsNil() {
			c, err := a.Interface().(*pygi.Object).Clone()
			if err != nil {
				fut.Close()
				return 0, err
			}
			a = reflect.ValueOf(c)
		}
		call = append(call, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	call[0] = reflect.ValueOf(ctx)
	token := awaits.next.Add(1)
	awaits.m.Store(token, cancel)
	if duetLoop {
		capi.LoopExpect()
	}
	goAsync(func() {
		var value any
		var err error
		returned := false
		defer func() {
			if !returned {
				// runtime.Goexit in fn (t.FailNow, require.*): its await
				// is told, not left waiting for ever.
				err = &pygi.PanicError{Where: "Go async func " + name, Value: "runtime.Goexit (t.FailNow, require.*?) instead of a return"}
				finishAsync(fut, name, value, err, duetLoop)
			}
			awaits.m.Delete(token)
			cancel()
		}()
		err = func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = &pygi.PanicError{Where: "Go async func " + name, Value: p, Stack: string(debug.Stack())}
				}
			}()
			var out []reflect.Value
			if fv.Type().IsVariadic() {
				out = fv.CallSlice(call)
			} else {
				out = fv.Call(call)
			}
			value, err = split(out)
			return err
		}()
		returned = true
		finishAsync(fut, name, value, err, duetLoop)
	})
	return token, nil
}

// finishAsync settles an await's future with what its Go func gave.
func finishAsync(fut *pygi.Object, name string, value any, err error, duetLoop bool) {
	if !duetLoop {
		// Another asyncio loop's future (asyncio.run in a Python
		// thread): set on that loop, which call_soon_threadsafe wakes,
		// from here; the UI thread may be waiting for that loop.
		defer fut.Close()
		settle(fut, name, value, err)
		return
	}
	// Settled on the loop's thread, where the future lives (through the
	// loop when it runs, after the Invokes fn made; here when it has
	// stopped: nobody awaits then). Not waited for: the goroutine is
	// free for the next call at once, and the loop's stop runs the
	// settle if the loop has not, so nothing is left queued for a loop
	// that may never come (the future, and what the result holds,
	// would stay until then).
	lifetime.PostUI(func() {
		defer fut.Close()
		// The awaiting task resumes inside the settle (eventloop's
		// asyncio: _duet_run_ready), in the invoke source's dispatch. A
		// nested main loop it runs (a modal wait) gets Invokes there, as
		// in the asyncio source's dispatch, where it resumes otherwise.
		defer capi.LoopAllowNested(capi.LoopAllowNested(true))
		settle(fut, name, value, err)
	})
}

// starters are goroutines kept between two async calls: handing the next
// call to one that is still spinning after its last one (capi.Parker) is
// an atomic swap, where a go statement on the UI thread costs the new
// goroutine tens of microseconds before another thread may take it (capi's
// loop.c says why). The one parked last is woken first: it is the one
// still spinning. After its spin a starter sleeps as any goroutine does,
// and waking it costs what a go statement does. A call that finds none
// parked gets a goroutine of its own, which parks in turn when done unless
// maxIdleStarters already are: so a call never waits for another one,
// however long that one blocks.
var starters struct {
	mu   sync.Mutex
	idle []*starter
	made atomic.Int64 // goroutines started, for tests
}

type starter struct {
	park  capi.Parker
	wake  chan struct{} // wakes it once asleep
	job   func()        // the next call, under starters.mu
	freed bool          // park freed (the starter's goroutine only)
}

const maxIdleStarters = 2

// goAsync runs job on a goroutine other than the caller's, at once.
func goAsync(job func()) {
	starters.mu.Lock()
	if n := len(starters.idle); n > 0 {
		s := starters.idle[n-1]
		starters.idle[n-1] = nil
		starters.idle = starters.idle[:n-1]
		s.job = job
		starters.mu.Unlock()
		if !s.park.Wake() {
			s.wake <- struct{}{}
		}
		return
	}
	starters.mu.Unlock()
	starters.made.Add(1)
	go runStarter(job)
}

func runStarter(job func()) {
	// Every call runs without pprof labels: the first would otherwise
	// have its caller's, which the go statement passes on, and the rest
	// none.
	pprof.SetGoroutineLabels(context.Background())
	var s *starter
	defer func() {
		// A call that ended its goroutine (runtime.Goexit) took the
		// starter with it: it is in nobody's idle list then.
		if s != nil && !s.freed {
			s.park.Free()
		}
	}()
	for {
		job()
		// What the call left on its goroutine is not the next call's.
		pprof.SetGoroutineLabels(context.Background())
		starters.mu.Lock()
		if len(starters.idle) >= maxIdleStarters {
			starters.mu.Unlock()
			if s != nil {
				s.park.Free()
				s.freed = true
			}
			return
		}
		if s == nil {
			s = &starter{park: capi.NewParker(), wake: make(chan struct{}, 1)}
		}
		s.park.Arm()
		starters.idle = append(starters.idle, s)
		starters.mu.Unlock()
		if !s.park.Spin() {
			<-s.wake
		}
		starters.mu.Lock()
		job, s.job = s.job, nil
		starters.mu.Unlock()
	}
}

// settle sets the future's result, or its exception for err.
func settle(fut *pygi.Object, name string, value any, err error) {
	m, merr := excModule()
	if merr != nil {
		return
	}
	if err == nil {
		r, cerr := m.CallMethod("settle", fut, true, value)
		if cerr == nil {
			r.Close()
			return
		}
		if errors.Is(cerr, pygi.ErrFinalized) {
			return
		}
		// The value could not become Python: the await raises that.
		err = fmt.Errorf("callbacks: the result of %s: %w", name, cerr)
	}
	exc, xerr := goException(err)
	if xerr != nil {
		return // Python is gone (or going): nobody awaits any more
	}
	defer exc.Close()
	if r, err := m.CallMethod("settle", fut, false, exc); err == nil {
		r.Close()
	}
}

// goException builds the GoError (GoPanic for a panic) instance carrying
// err, as a callback returning err would raise it.
func goException(err error) (*pygi.Object, error) {
	if err := lifetime.Enter(); err != nil {
		return nil, err
	}
	ref, _, ok := makeGoException(err)
	lifetime.Exit()
	if !ok {
		return nil, fmt.Errorf("callbacks: cannot make the Python exception for %v", err)
	}
	return pyobj.Owned(ref), nil
}
