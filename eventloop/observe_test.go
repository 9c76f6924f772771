package eventloop_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

// glibView is what Python code dispatched by the loop sees of GLib's main
// context: the dispatch depth, and whether anything is pending once what
// was due has run.
const glibView = `
from gi.repository import GLib
def view():
    ctx = GLib.MainContext.default()
    depth = GLib.main_depth()
    while ctx.iteration(False):
        pass
    return (depth, ctx.pending(), ctx.is_owner())
`

func init() {
	lifetimeChildren["glib-view"] = func() error {
		g, err := pygi.NewGlobals()
		if err != nil {
			return err
		}
		if err := pygi.Exec(glibView, g); err != nil {
			return err
		}
		eventloop.Invoke(func() {
			r, err := pygi.Eval("view()", g)
			if err == nil {
				fmt.Fprintln(os.Stderr, "view", r.String())
			}
			eventloop.Quit()
		})
		if err := eventloop.Run(t0()); err != nil {
			return err
		}
		return pygi.Finalize(context.Background())
	}
	lifetimeChildren["thread-exception"] = func() error {
		eventloop.Invoke(func() {
			pygi.Exec("import threading\ndef f():\n    raise ValueError('in a thread')\n"+
				"t = threading.Thread(target=f, name='worker')\nt.start(); t.join()\n", nil)
			eventloop.Quit()
		})
		if err := eventloop.Run(t0()); err != nil {
			return err
		}
		return pygi.Finalize(context.Background())
	}
}

// Inside a dispatch, as in a python3 GLib.MainLoop's idle callback.
func TestGLibAsPythonSeesIt(t *testing.T) {
	_, errOut, code := runLifetimeChild(t, "glib-view")
	require.Equal(t, 0, code, errOut)
	want, err := exec.Command("/usr/bin/python3", "-c", glibView+`
loop = GLib.MainLoop()
def once():
    print("view", view())
    loop.quit()
GLib.idle_add(once)
loop.run()
`).Output()
	require.NoError(t, err)
	assert.Contains(t, errOut, strings.TrimSpace(string(want)))
}

// An exception in a Python thread nobody subscribed to is printed as
// python3 prints it.
func TestThreadExceptionPrintedAsPython3(t *testing.T) {
	_, errOut, code := runLifetimeChild(t, "thread-exception")
	require.Equal(t, 0, code, errOut)
	want, _ := exec.Command("/usr/bin/python3", "-c", "import threading\ndef f():\n    raise ValueError('in a thread')\n"+
		"t = threading.Thread(target=f, name='worker')\nt.start(); t.join()\n").CombinedOutput()
	norm := func(s string) string {
		// File names differ (<string> vs <duet>); the shape must not.
		s = strings.ReplaceAll(s, `File "<string>"`, `File "<src>"`)
		return strings.ReplaceAll(s, `File "<duet>"`, `File "<src>"`)
	}
	assert.Contains(t, norm(errOut), norm(strings.TrimSpace(string(want))))
}

func t0() context.Context { return context.Background() }
