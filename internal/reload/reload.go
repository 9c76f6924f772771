// Package reload is duet's development mode for Python widget code: the
// files the app's Python modules were loaded from are watched, and a save
// is applied to the running program (app.Options.Reload, DUET_RELOAD=1).
//
// Four parts, each next to its code:
//
//   - The registry (this file): widgets' loaders record each module they
//     load from a file (LoadFile, LoadFS), always: a few fields per load,
//     no Python reference, no thread. LoadSource forgets a name.
//   - The watcher (watch.go): one goroutine and fsnotify's, started by
//     Start and ended by Close, only in development mode. It watches the
//     directories holding the recorded files, debounces, reads the file
//     and hands the reload to the UI thread (eventloop.Invoke).
//   - The reload (apply.go, reload.py): on the UI thread, between two
//     events, the module's new source is run and applied to the module,
//     its functions and its classes in place; what cannot change in a
//     running process is reported as needing a restart; the widgets in
//     windows whose class the module defines are queued to be measured and
//     drawn again (GTK would otherwise show their last frame's drawing); a
//     module that does not compile or raises leaves the old code running.
//     Each reload says one line on stderr (and logs with log/slog). A
//     record of a file that is not a Python module (widgets' .ui files,
//     LoadedUIFS, keyed "ui:" and the file's path in its fs.FS) carries
//     the Go func that applies it instead.
//   - The banner (banner.go, banner.py): while a watcher runs and the last
//     reload of some file failed, each visible window shows the error.
//
// The new source runs in the module's own dict, which is put back as it
// was (a snapshot) if the code raises, rather than in a copy of it: a
// function the new code makes and keeps somewhere (a dispatch table, a
// registry a decorator fills, a lambda given to a widget) then has the
// module's globals, sees what later reloads change and sets the module's
// state; made in a copy, it would read the copy for ever (widgets'
// TestReloadFunctionsKeepTheModulesGlobals). The price: a Python thread
// running the module's functions during the reload may see the module
// half-way. Class statements are intercepted with a __build_class__ of a
// copy of the builtins that only the module's own frame uses (the
// functions it makes take the real builtins: see reload.py).
//
// A function whose new code needs other closure cells than the old one
// (the new code calls super() where the old did not) cannot take the code
// itself: it forwards to the new function instead, so what holds it still
// runs the new code (PyGObject's vfunc closure included), where rebinding
// the name would leave them the old code.
package reload

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sync"
)

// A record is one module loaded from a file.
type record struct {
	name     string // the module's name in sys.modules
	filename string // its __file__ (what the loader gave pygi.ExecModule)
	order    int    // load order: files saved together reload in it

	// Where it is on disk. LoadFile's is known (path); LoadFS's is found
	// by the watcher among dirs (os.DirFS's root, the directory of the
	// source file that called LoadFS), then the app's directories.
	path   string
	fsPath string   // LoadFS: the file's path in its fs.FS
	dirs   []string // LoadFS: directories the fs.FS may have come from

	applied string // the source of the code that runs (guarded by registry.mu)

	// A file that is not a Python module (a .ui file, LoadedUIFS): what
	// applies its new source, instead of the Python helper.
	rebuild Rebuild
}

// A Rebuild applies the new source of a file that is not a Python module
// (widgets' .ui files), on the UI thread: objects is how many placed
// objects it replaced, restart what it could not (said as needing a
// restart); an error leaves what runs as it was.
type Rebuild func(src string) (objects int, restart []string, err error)

func (r *record) source() string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return r.applied
}

var registry struct {
	mu    sync.Mutex
	recs  map[string]*record
	count int
	w     *Watcher // the running watcher, if any
}

// LoadedFile records that module name was loaded from file (its
// __file__) with src.
func LoadedFile(name, file, src string) {
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	put(&record{name: name, filename: file, path: filepath.Clean(abs), applied: src})
}

// LoadedFS records that module name was loaded from file in fsys (its
// __file__) with src; callerDir is the directory of the source file that
// called the loader ("" if unknown). fsys itself is not kept.
func LoadedFS(name string, fsys fs.FS, file, src, callerDir string) {
	var dirs []string
	if root, ok := dirFSRoot(fsys); ok {
		dirs = append(dirs, root)
	}
	if callerDir != "" {
		dirs = append(dirs, callerDir)
	}
	put(&record{name: name, filename: file, fsPath: file, dirs: dirs, applied: src})
}

// LoadedUIFS records that the interface file in fsys (a .ui file) was
// loaded with src, under key (one record per key: a later load replaces
// it); rebuild applies its changes. As LoadedFS, callerDir is a guess of
// where the file is on disk.
func LoadedUIFS(key string, fsys fs.FS, file, src, callerDir string, rebuild Rebuild) {
	var dirs []string
	if root, ok := dirFSRoot(fsys); ok {
		dirs = append(dirs, root)
	}
	if callerDir != "" {
		dirs = append(dirs, callerDir)
	}
	put(&record{name: key, filename: file, fsPath: file, dirs: dirs, applied: src, rebuild: rebuild})
}

// Watching reports whether a watcher runs (development mode): widgets
// keeps what a .ui file's reload needs only then.
func Watching() bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.w != nil
}

// Unloaded forgets module name (loaded again from no file: LoadSource).
func Unloaded(name string) {
	registry.mu.Lock()
	delete(registry.recs, name)
	registry.mu.Unlock()
}

func put(r *record) {
	registry.mu.Lock()
	if registry.recs == nil {
		registry.recs = map[string]*record{}
	}
	registry.count++
	r.order = registry.count
	registry.recs[r.name] = r
	w := registry.w
	registry.mu.Unlock()
	if w != nil {
		w.kickSync()
	}
}

// current says whether r is still the record of its module.
func current(r *record) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.recs[r.name] == r
}

// dirFSRoot is the directory of an os.DirFS, made absolute. os.DirFS's
// type is a string of the directory; it has no accessor, so reflection
// reads it, recognising the type by its package and name.
func dirFSRoot(fsys fs.FS) (string, bool) {
	v := reflect.ValueOf(fsys)
	if !v.IsValid() || v.Kind() != reflect.String || v.Type().PkgPath() != "os" || v.Type().Name() != "dirFS" {
		return "", false
	}
	dir := v.String()
	if dir == "" {
		return "", false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", false
	}
	return abs, true
}
