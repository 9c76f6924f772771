package pygi

import (
	"errors"
	"fmt"
	"sync"
)

// giModule caches the imported gi package. Safe to cache across the
// interpreter's life: a module object lives as long as sys.modules holds it.
// It is shared by every caller, so it is made permanent: Close on it does
// nothing (one caller closing it must not break the others).
var giModule struct {
	mu  sync.Mutex
	obj *Object
}

// gi returns the gi module (PyGObject), shared: closing it does nothing.
// When it cannot be imported, the error wraps ErrNoGI and says which
// interpreter is embedded, its sys.path and which Debian package provides
// gi.
func gi() (*Object, error) {
	giModule.mu.Lock()
	if o := giModule.obj; o != nil {
		giModule.mu.Unlock()
		return o, nil
	}
	giModule.mu.Unlock()
	// Not under the lock: the import takes the GIL, which a Go callback
	// that calls RequireVersion holds while it waits for the lock.
	mod, err := importName("gi")
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			return nil, err // not an import that failed: Python is finalized, say
		}
		where := ""
		if info, ierr := interp.helper.CallMethod("interpreter_info"); ierr == nil {
			where, _ = As[string](info)
			info.Close()
		}
		return nil, fmt.Errorf("%w: %w\nembedded interpreter: %s\ninstall PyGObject for this interpreter: apt-get install python3-gi (Debian/Ubuntu)", ErrNoGI, err, where)
	}
	giModule.mu.Lock()
	defer giModule.mu.Unlock()
	if giModule.obj == nil {
		giModule.obj = keep(mod) // the module object is sys.modules' one: any caller's copy will do
	}
	return giModule.obj, nil
}

// RequireVersion runs gi.require_version(namespace, version), which must
// happen before the namespace is first imported.
func RequireVersion(namespace, version string) error {
	g, err := gi()
	if err != nil {
		return err
	}
	r, err := g.CallMethod("require_version", namespace, version)
	r.Close()
	return err
}
