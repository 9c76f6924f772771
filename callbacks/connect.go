package callbacks

import (
	_ "embed"
	"errors"
	"fmt"
	"os"

	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

// # One connect mechanism
//
// A Go handler reaches a GObject signal in one of two ways: duet's own
// closure (Connect without data: connect.go's connect) or PyGObject's
// closure (with data, or connect_object and friends). PyGObject's connect
// methods are wrapped (connect.py) so that a Go callback connected from
// Python, or through a Block or CallMethod from Go, takes the same two
// ways, and each connection is recorded in one registry
// (internal/lifetime's connections) whichever way it came. The wrapping is
// installed on the first Connect, or when package widgets starts GTK;
// PyGObject's connect of a Go callable before either is not recorded.

// connectPy wraps PyGObject's connect methods when it loads, once per
// interpreter. It imports gi: its callers have a GObject, or start GTK.
var connectPy = python.Module("duet_connect", "connect.py", pysrc.Setup(installHook))

func init() {
	hooks.InstallConnectHook = installConnectHook
}

// installConnectHook loads connectPy. A load already under way elsewhere
// is waited for without the GIL; one from inside the install (a connect
// that __del__ makes while it runs) is an error, which connect ignores:
// its own connection is recorded anyway.
func installConnectHook() error {
	_, err := connectPy.Load()
	return err
}

func installHook(m *pygi.Object) error {
	rec, err := New(recordConnection, Name("duet_record_connection"))
	if err != nil {
		return err
	}
	defer rec.Close()
	native, err := New(hookNative, Name("duet_connect_native"))
	if err != nil {
		return err
	}
	defer native.Close()
	r, err := m.CallMethod("install", rec, native)
	if err != nil {
		return err
	}
	r.Close()
	uninstall, err := m.Attr("uninstall")
	if err != nil {
		return err
	}
	lifetime.AtFinalize(func() {
		defer uninstall.Close()
		if r, err := uninstall.Call(); err != nil {
			fmt.Fprintln(os.Stderr, "callbacks: disconnecting Python's handlers before Python goes:", err)
		} else {
			r.Close()
		}
	})
	return nil
}

// hookNative is what PyGObject's connect and connect_after do for a Go
// callback without extra data: duet's own closure. Zero (never a handler
// id) says handler is not one of duet's callbacks, and PyGObject connects
// it.
func hookNative(obj *pygi.Object, signal string, handler *pygi.Object, after bool) (uint64, error) {
	id, err := connectCallback(obj, signal, handler, after)
	if errors.Is(err, errNotGoCallback) {
		return 0, nil
	}
	return id, err
}
