package widgets_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop/looptest"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

// weakLogs collects the debug records Weakly writes to slog.Default while
// a test runs.
type weakLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *weakLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *weakLogs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *weakLogs) WithGroup(string) slog.Handler            { return l }
func (l *weakLogs) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

func (l *weakLogs) skipped() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, "weak capture gone") {
			out = append(out, s)
		}
	}
	return out
}

func captureLogs(t *testing.T) *weakLogs {
	l := &weakLogs{}
	before := slog.Default()
	slog.SetDefault(slog.New(l))
	t.Cleanup(func() { slog.SetDefault(before) })
	return l
}

// A captured label of each kind Weakly takes. setup returns the handler,
// a watch on the label, and drop, which lets go of the test's own strong
// reference (the label's last), leaving its release to the collectors.
var weakKinds = []struct {
	name  string
	setup func(t testing.TB) (handler any, w *widgets.Watch, drop func())
}{
	{"*pygi.Object", func(t testing.TB) (any, *widgets.Watch, func()) {
		label, err := Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		w, err := widgets.WatchFinalize(label)
		require.NoError(t, err)
		h := widgets.Weakly(label, func(label *pygi.Object, text string) string {
			var b pygi.Block
			b.CallMethod(label, "set_label", text)
			return pygi.BlockAs[string](&b, b.CallMethod(label, "get_label"))
		})
		return h, w, func() { label = nil } // not Close: Go's collector must find it unreachable
	}},
	{"*widgets.Widget", func(t testing.TB) (any, *widgets.Watch, func()) {
		label, err := Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		w, err := widgets.WatchFinalize(label)
		require.NoError(t, err)
		h := widgets.Weakly(widgets.Wrap(label), func(label *widgets.Widget, text string) string {
			label.SetProp("label", text)
			v, _ := label.Prop("label")
			s, _ := pygi.As[string](v)
			return s
		})
		return h, w, func() { label = nil } // not Close: Go's collector must find it unreachable
	}},
	{"*gtk.Label", func(t testing.TB) (any, *widgets.Watch, func()) {
		label := gtk.NewLabel("")
		require.NoError(t, widgets.Track(label))
		w := watch(t, label)
		h := widgets.Weakly(label, func(label *gtk.Label, text string) string {
			label.SetText(text)
			return label.Text()
		})
		return h, w, func() { label = nil }
	}},
	// gotk4 hands back the object as its GType's Go type (*gtk.Label);
	// fn still receives the captured variable's type.
	{"*gtk.Widget of a label", func(t testing.TB) (any, *widgets.Watch, func()) {
		label := gtk.NewLabel("")
		require.NoError(t, widgets.Track(label))
		w := watch(t, label)
		widget := &label.Widget
		h := widgets.Weakly(widget, func(widget *gtk.Widget, text string) string {
			widget.SetTooltipText(text)
			return widget.TooltipText()
		})
		return h, w, func() { label, widget = nil, nil }
	}},
}

// A handler made by Weakly runs while the object lives and does not keep
// it alive: once the last strong reference goes and both collectors have
// run, the object is finalised and the handler is skipped, saying so.
func TestWeaklyCallsWhileAliveAndSkipsOnceGone(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	logs := captureLogs(t)
	for _, k := range weakKinds {
		t.Run(k.name, func(t *testing.T) {
			var (
				h    func(string) string
				w    *widgets.Watch
				drop func()
			)
			looptest.Do(t, func(t testing.TB) {
				handler, watch, d := k.setup(t)
				w, drop = watch, d
				var ok bool
				h, ok = handler.(func(string) string)
				require.True(t, ok, "the handler is fn without its first parameter: %T", handler)
				assert.Equal(t, "live", h("live"))
				assert.Equal(t, "again", h("again"))
			})
			require.Empty(t, logs.skipped())
			looptest.Do(t, func(testing.TB) { drop() })
			require.True(t, finalized(t, w), "the handler keeps the object alive")
			looptest.Do(t, func(t testing.TB) {
				assert.Equal(t, "", h("gone"), "skipped: fn's results are zero")
				assert.Equal(t, "", h("gone"))
			})
			skipped := logs.skipped()
			require.Len(t, skipped, 2, "once per skipped call")
			assert.Contains(t, skipped[0], "DEBUG duet: weak capture gone, handler skipped")
			assert.Contains(t, skipped[0], "type=GtkLabel")
			assert.Contains(t, skipped[0], "handler=github.com/duet-gtk/duet/widgets_test.init.func")
			logs.mu.Lock()
			logs.lines = nil
			logs.mu.Unlock()
		})
	}
}

// Connected to a button that stays, a handler holding the window's label
// weakly runs on each click while the label lives, does not keep it
// alive, and is skipped once it is gone, on every connect path.
func TestWeaklyConnected(t *testing.T) {
	looptest.FailOnPythonExceptions(t)
	logs := captureLogs(t)
	connects := []struct {
		name    string
		connect func(button *pygi.Object, handler any) error
	}{
		{"Widget.Connect", func(button *pygi.Object, h any) error {
			_, err := widgets.Wrap(button).Connect("clicked", h)
			return err
		}},
		{"callbacks.Connect", func(button *pygi.Object, h any) error {
			_, err := callbacks.Connect(button, "clicked", h)
			return err
		}},
		{"callbacks.ConnectAfter", func(button *pygi.Object, h any) error {
			_, err := callbacks.ConnectAfter(button, "clicked", h)
			return err
		}},
		{"PyGObject's connect", func(button *pygi.Object, h any) error {
			r, err := button.CallMethod("connect", "clicked", h)
			r.Close()
			return err
		}},
	}
	for _, c := range connects {
		t.Run(c.name, func(t *testing.T) {
			var (
				button *pygi.Object
				w      *widgets.Watch
				runs   int
			)
			looptest.Do(t, func(t testing.TB) {
				G := Gtk(t)
				var err error
				button, err = G.CallMethod("Button")
				require.NoError(t, err)
				label, err := G.CallMethod("Label", pygi.Kw{"label": "0"})
				require.NoError(t, err)
				w, err = widgets.WatchFinalize(label)
				require.NoError(t, err)
				require.NoError(t, c.connect(button, widgets.Weakly(label, func(label, button *pygi.Object) {
					runs++
					label.CallMethod("set_label", fmt.Sprint(runs))
				})))
				_, err = button.CallMethod("emit", "clicked")
				require.NoError(t, err)
				text, err := label.CallMethod("get_label")
				require.NoError(t, err)
				s, _ := pygi.As[string](text)
				assert.Equal(t, "1", s)
				// label is dropped, not closed: its release is Go's
				// collector's, which must find it unreachable.
			})
			require.True(t, finalized(t, w), "the button's handler keeps the label alive")
			looptest.Do(t, func(t testing.TB) {
				_, err := button.CallMethod("emit", "clicked")
				require.NoError(t, err)
				button.Close()
			})
			assert.Equal(t, 1, runs, "skipped once the label is gone")
			assert.Len(t, logs.skipped(), 1)
			logs.mu.Lock()
			logs.lines = nil
			logs.mu.Unlock()
		})
	}
}

// A handler's results and a variadic tail go through.
func TestWeaklySignatures(t *testing.T) {
	looptest.Do(t, func(t testing.TB) {
		label, err := Gtk(t).CallMethod("Label", pygi.Kw{"label": "x"})
		require.NoError(t, err)
		defer label.Close()
		join := widgets.Weakly(label, func(label *pygi.Object, sep string, parts ...string) (string, error) {
			var b pygi.Block
			s := pygi.BlockAs[string](&b, b.CallMethod(label, "get_label"))
			return s + ":" + strings.Join(parts, sep), b.Err()
		}).(func(string, ...string) (string, error))
		got, err := join("-", "a", "b")
		require.NoError(t, err)
		assert.Equal(t, "x:a-b", got)
		none := widgets.Weakly(label, func(*pygi.Object) {}).(func())
		none()
	})
}

// Misuse is the caller's mistake, reported where Weakly is called.
func TestWeaklyMisusePanics(t *testing.T) {
	var label, notGObject, closed *pygi.Object
	var gl *gtk.Label
	looptest.Do(t, func(t testing.TB) {
		var err error
		label, err = Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		notGObject, err = pygi.Eval("42", nil)
		require.NoError(t, err)
		closed, err = Gtk(t).CallMethod("Label")
		require.NoError(t, err)
		closed.Close()
		gl = gtk.NewLabel("")
		require.NoError(t, widgets.Track(gl))
	})
	defer looptest.Do(t, func(testing.TB) { label.Close(); notGObject.Close() })
	for _, c := range []struct {
		name string
		obj  any
		fn   any
		want string
	}{
		{"fn not a func", label, 42, "fn is int, not a func"},
		{"fn nil", label, nil, "fn is <nil>, not a func"},
		{"fn a nil func", label, (func(*pygi.Object))(nil), "not a func"},
		{"fn without parameters", label, func() {}, "has no parameter"},
		{"first parameter of another type", label, func(*widgets.Widget) {}, "fn's first parameter is *widgets.Widget, not obj's type *pygi.Object"},
		{"a gotk4 object's interface", gl, func(gtk.Widgetter) {}, "not obj's type *gtk.Label"},
		{"another gotk4 type", gl, func(*gtk.Button) {}, "not obj's type *gtk.Label"},
		{"obj nil", nil, func(*pygi.Object) {}, "obj is nil"},
		{"obj a nil *pygi.Object", (*pygi.Object)(nil), func(*pygi.Object) {}, "obj is a nil *pygi.Object"},
		{"obj a nil *gtk.Label", (*gtk.Label)(nil), func(*gtk.Label) {}, "obj is a nil *gtk.Label"},
		{"obj a Widget with no Object", &widgets.Widget{}, func(*widgets.Widget) {}, "nil Object"},
		{"obj not a GObject", notGObject, func(*pygi.Object) {}, "not a GObject"},
		{"obj closed", closed, func(*pygi.Object) {}, "obj: "},
		{"obj of no kind Weakly takes", "label", func(string) {}, "obj is a string: want"},
		{"obj a gotk4 value, not its pointer", *gl, func(gtk.Label) {}, "pass a pointer (*gtk.Label)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				widgets.Weakly(c.obj, c.fn)
				return "no panic"
			}()
			assert.True(t, strings.HasPrefix(msg, "widgets.Weakly: "), "%q", msg)
			assert.Contains(t, msg, c.want)
		})
	}
}
