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

// GI returns the gi module (PyGObject), shared: closing it does nothing.
// When it cannot be imported, the
// error wraps ErrNoGI and says which interpreter is embedded, its sys.path
// and which Debian package provides gi.
func GI() (*Object, error) {
	giModule.mu.Lock()
	defer giModule.mu.Unlock()
	if giModule.obj != nil {
		return giModule.obj, nil
	}
	gi, err := Import("gi")
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
	gi, err := GI()
	if err != nil {
		return err
	}
	r, err := gi.CallMethod("require_version", namespace, version)
	r.Close()
	return err
}

// Repository imports gi.repository.<namespace> (for example "Gtk").
func Repository(namespace string) (*Object, error) {
	if _, err := GI(); err != nil {
		return nil, err
	}
	return Import("gi.repository." + namespace)
}

// Version returns the embedded interpreter's sys.version.
func Version() (string, error) {
	sys, err := Import("sys")
	if err != nil {
		return "", err
	}
	defer sys.Close()
	v, err := sys.Attr("version")
	if err != nil {
		return "", err
	}
	defer v.Close()
	return As[string](v)
}
