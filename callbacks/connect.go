package callbacks

import (
	_ "embed"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/duet-gtk/duet/internal/hooks"
	"github.com/duet-gtk/duet/internal/lifetime"
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

//go:embed connect.py
var connectSource string

// hookState: 0 not installed, 1 being installed, 2 installed. Nobody waits
// for an install in progress: a caller may hold the GIL the installer
// needs (a connect from a callback on another thread, or from __del__
// during the install); its own connection is recorded by connect anyway.
var hookState atomic.Int32

func init() {
	hooks.InstallConnectHook = installConnectHook
}

// installConnectHook wraps PyGObject's connect methods, once per
// interpreter. It imports gi: callers have a GObject, or start GTK.
func installConnectHook() (err error) {
	if hookState.Load() == 2 || !hookState.CompareAndSwap(0, 1) {
		return nil
	}
	defer func() {
		if err != nil {
			hookState.Store(0)
		} else {
			hookState.Store(2)
		}
	}()
	m, err := pygi.ExecModule("duet_connect", connectSource, "<duet_connect>")
	if err != nil {
		return err
	}
	defer m.Close()
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
	if h := callbackHandle(handler); h == 0 || registry.handles.get(h) == nil {
		return 0, nil
	}
	return connectCallback(obj, signal, handler, after)
}
