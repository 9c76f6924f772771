// Package pysrc is the one home of duet's own Python code and its one
// loader. The code lives in .py files next to the Go code that uses it,
// embedded with go:embed; a package declares them once:
//
//	//go:embed *.py
//	var pyFiles embed.FS
//
//	var python = pysrc.Embed("eventloop", pyFiles)
//
//	var hooks = python.Module("duet_hooks", "hooks.py", pysrc.Setup(install))
//
// and calls hooks.Load() wherever it needs the module. No Python source
// lives in Go string literals, and every embedded file is listed here, so
// one test compiles them all (CompileAll; widgets' test, which links
// every package, also checks that no .py file of duet's tree is left out).
//
// # Loading
//
//   - Load runs the file as the module Name (pygi.ExecModule: it goes into
//     sys.modules, and tracebacks name it "<duet eventloop/hooks.py>"; its
//     code compiled ahead when precompiled/code.bin has it for this very
//     source), then the module's Setup, and only then hands it out: concurrent
//     Loads wait for the one load and get the same module, which is
//     shared (Close on it does nothing). Once loaded, Load is one atomic
//     load.
//   - A load that fails is not remembered: the next Load runs the file
//     again, as Python's import retries a module whose import failed. The
//     error names the module and its file; a syntax error also says where.
//   - The lifetime gate is pygi's: a load is one entry (pygi.Do), so a
//     Finalize that begins meanwhile waits for it; after Finalize, Load of
//     a module not yet loaded returns an error wrapping pygi.ErrFinalized
//     (a module loaded before stays the same Object, whose operations
//     return ErrFinalized); while Python finalises, a load nested in a call
//     Python makes (an atexit function calling Go) goes ahead, as any such
//     entry does. The interpreter has one life (internal/lifetime, rule
//     1): Init after Finalize is refused, so a module is loaded at most
//     once per process. Reset forgets what was loaded, for tests.
//   - A UIThread module (one whose code or Setup touches GTK) loads on the
//     UI thread only: elsewhere Load returns an error wrapping
//     lifetime.ErrNotMain, and never hops threads.
//   - A Load that waits for another goroutine's load lets go of the GIL
//     (it may be a Go callback Python is running, and the load needs the
//     GIL). A Load of a module from inside its own load (its code, Before
//     or Setup needs the module) is an error, not a deadlock.
//
// pygi's helper (pygi/helper.py, the _duet module) is the one file not
// loaded here: it is the interpreter's bootstrap, run before any operation
// can run, so before Load could. It is listed all the same.
package pysrc

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/duet-gtk/duet/internal/bridge"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pyobj"
	"github.com/duet-gtk/duet/pygi"
)

// Files are one package's embedded Python files.
type Files struct {
	pkg  string // the package's directory in the module: "eventloop", "internal/pysrc"
	fsys fs.FS
}

// A Module is one file of Files, loaded as a Python module on first use.
type Module struct {
	name, file string
	files      *Files
	ui         bool
	before     func() error
	setup      func(*pygi.Object) error

	mod     atomic.Pointer[pygi.Object] // set once the load (Setup included) succeeded
	mu      sync.Mutex                  // serialises loads; its holder never waits at the gate
	loading atomic.Int64                // the OS thread running the load, 0 when none
	befores sync.Map                    // OS threads running Before
}

// An Option configures a Module.
type Option func(*Module)

// UIThread says the module touches GTK as it loads (its code or Setup):
// it loads on the UI thread only.
func UIThread() Option { return func(m *Module) { m.ui = true } }

// Before runs fn before the module's code, at each attempt to load it
// (what the code needs first: GTK's version pinned, say); concurrent first
// Loads may each run it, so it must be idempotent. Its error fails the
// load.
func Before(fn func() error) Option { return func(m *Module) { m.before = fn } }

// Setup runs fn once the module's code has run, before any Load hands the
// module out: where the package installs what goes with it. It runs
// attached to Python (as in pygi.Do): it must not block on other
// goroutines that need Python. Its error fails the load (the next Load
// runs the file again).
func Setup(fn func(mod *pygi.Object) error) Option { return func(m *Module) { m.setup = fn } }

var registry struct {
	mu      sync.Mutex
	files   []*Files
	modules map[string]*Module
}

func init() {
	if bridge.PythonFiles != nil {
		Embed("pygi", bridge.PythonFiles)
	}
}

// Embed registers a package's embedded Python files (pkg is the package's
// directory in duet's module, for file names in tracebacks). Call it once
// per package, from a package-level var.
func Embed(pkg string, fsys fs.FS) *Files {
	f := &Files{pkg: pkg, fsys: fsys}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.files = append(registry.files, f)
	return f
}

// Module declares the module name made of file. A file the package did not
// embed, or a name declared twice, is a bug in duet: Module panics, at
// init, rather than fail when the module is first needed.
func (f *Files) Module(name, file string, opts ...Option) *Module {
	if _, err := fs.Stat(f.fsys, file); err != nil {
		panic(fmt.Sprintf("pysrc: module %s: %s/%s is not embedded: %v", name, f.pkg, file, err))
	}
	m := &Module{name: name, file: file, files: f}
	for _, o := range opts {
		o(m)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.modules == nil {
		registry.modules = map[string]*Module{}
	}
	if _, dup := registry.modules[name]; dup {
		panic("pysrc: module " + name + " declared twice")
	}
	registry.modules[name] = m
	return m
}

// Name is the module's name in sys.modules.
func (m *Module) Name() string { return m.name }

// Path is the module's file as duet's tree has it ("eventloop/hooks.py").
func (m *Module) Path() string { return path.Join(m.files.pkg, m.file) }

// filename is what tracebacks and the module's __file__ say: angle
// brackets, as for any source Python cannot read from disk (linecache
// then does not look for a file of that name).
func filename(pkg, file string) string { return "<duet " + path.Join(pkg, file) + ">" }

// Load returns the module, loading it if this interpreter has not yet.
func (m *Module) Load() (*pygi.Object, error) {
	if mod := m.mod.Load(); mod != nil {
		return mod, nil
	}
	return m.load()
}

// Loaded returns the module if it was loaded, else nil; it never loads.
func (m *Module) Loaded() *pygi.Object { return m.mod.Load() }

func (m *Module) load() (*pygi.Object, error) {
	if m.ui {
		if err := lifetime.RequireMain("duet: loading " + m.name); err != nil {
			return nil, err
		}
	}
	// The load keeps its goroutine on one OS thread, so a Load that comes
	// back on that thread is one from inside the load.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := int64(syscall.Gettid())
	if _, in := m.befores.Load(tid); in || m.loading.Load() == tid {
		return nil, m.wrap(errors.New("loaded again from inside its own load (its code, or code its load runs, needs the module)"))
	}
	if m.before != nil && m.mod.Load() == nil {
		// Outside the lock and unattached: what Before does waits at the
		// gate like any other entry, and holds up nobody.
		m.befores.Store(tid, true)
		err := m.before()
		m.befores.Delete(tid)
		if err != nil {
			return nil, m.wrap(err)
		}
	}
	var mod *pygi.Object
	// The lock is held only inside an entry, attached: a Finalize that
	// begins meanwhile waits for the load, and what the load runs goes on
	// (rule 3 of internal/lifetime), so a Load waiting for the lock inside
	// an entry of its own never waits for a load that waits for Finalize.
	err := pygi.WithGIL(func() error {
		pygi.WithoutGIL(m.mu.Lock)
		defer m.mu.Unlock()
		if mod = m.mod.Load(); mod != nil {
			return nil // loaded while this one waited
		}
		m.loading.Store(tid)
		defer m.loading.Store(0)
		var err error
		if mod, err = m.run(); err != nil {
			return err
		}
		pyobj.Keep(mod)
		m.mod.Store(mod)
		return nil
	})
	if err != nil {
		return nil, m.wrap(err)
	}
	return mod, nil
}

// run runs the module's file and its Setup.
func (m *Module) run() (*pygi.Object, error) {
	src, err := fs.ReadFile(m.files.fsys, m.file)
	if err != nil {
		return nil, err
	}
	name := filename(m.files.pkg, m.file)
	o, err := bridge.ExecCompiled(m.name, string(src), name, precompiledCode(name, string(src)))
	if err != nil {
		return nil, err
	}
	mod := o.(*pygi.Object)
	if m.setup != nil {
		if err := m.setup(mod); err != nil {
			mod.Close()
			return nil, err
		}
	}
	return mod, nil
}

func (m *Module) wrap(err error) error {
	return fmt.Errorf("duet: loading %s (%s): %w", m.name, m.Path(), err)
}

// ErrUnknown: LoadByName was given a name no package declared.
var ErrUnknown = errors.New("pysrc: no such duet module")

// LoadByName loads the module declared as name: what Python code of duet's
// calls (through a callback) to load another of duet's modules.
func LoadByName(name string) (*pygi.Object, error) {
	registry.mu.Lock()
	m := registry.modules[name]
	registry.mu.Unlock()
	if m == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	return m.Load()
}

// Reset forgets every module loaded, so that the next Load runs its file
// again (and replaces the module in sys.modules). For tests; what a module
// installed (its Setup) stays installed.
func Reset() {
	registry.mu.Lock()
	mods := make([]*Module, 0, len(registry.modules))
	for _, m := range registry.modules {
		mods = append(mods, m)
	}
	registry.mu.Unlock()
	for _, m := range mods {
		pygi.WithoutGIL(m.mu.Lock)
		m.mod.Store(nil)
		m.mu.Unlock()
	}
}

// A File is one embedded Python file.
type File struct {
	Package, Path string // "eventloop", "hooks.py"
	Source        string
}

// all returns the files CompileAll compiles, whether a Module declares
// them or not.
func all() ([]File, error) {
	registry.mu.Lock()
	files := append([]*Files(nil), registry.files...)
	registry.mu.Unlock()
	var out []File
	for _, f := range files {
		err := fs.WalkDir(f.fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return fs.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".py") {
				return nil
			}
			src, err := fs.ReadFile(f.fsys, p)
			if err != nil {
				return err
			}
			out = append(out, File{Package: f.pkg, Path: p, Source: string(src)})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("pysrc: %s: %w", f.pkg, err)
		}
	}
	return out, nil
}

// CompileAll compiles every embedded Python file of the packages linked in
// (compile(), as py_compile does, without running anything; testdata
// directories left out, since a package's tests may embed broken files on
// purpose). It returns the files, and an error per file that does not
// compile, naming its file and line.
func CompileAll() ([]File, error) {
	files, err := all()
	if err != nil {
		return nil, err
	}
	builtins, err := pygi.Import("builtins")
	if err != nil {
		return nil, err
	}
	defer builtins.Close()
	var errs []error
	for _, f := range files {
		code, err := builtins.CallMethod("compile", f.Source, filename(f.Package, f.Path), "exec", 0, true)
		code.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path.Join(f.Package, f.Path), err))
		}
	}
	return files, errors.Join(errs...)
}
