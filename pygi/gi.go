package pygi

import (
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
	defer giModule.mu.Unlock()
	if giModule.obj != nil {
		return giModule.obj, nil
	}
	gi, err := importName("gi")
	if err != nil {
		where := ""
		if info, ierr := interp.helper.CallMethod("interpreter_info"); ierr == nil {
			where, _ = As[string](info)
			info.Close()
		}
		return nil, fmt.Errorf("%w: %v\nembedded interpreter: %s\ninstall PyGObject for this interpreter: apt-get install python3-gi (Debian/Ubuntu)", ErrNoGI, err, where)
	}
	giModule.obj = keep(gi)
	return gi, nil
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
