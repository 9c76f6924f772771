package widgets

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/internal/reload"
	"github.com/duet-gtk/duet/pygi"
)

// A UI is a GtkBuilder interface (a .ui file) whose signal handlers are Go
// funcs: the way Gtk.Template works in PyGObject and CompositeTemplate in
// gtk-rs. Its objects may be of Python widget classes (load their module
// first; GtkBuilder finds them by GType name, "module+Class" unless the
// class sets __gtype_name__).
type UI struct {
	Builder *pygi.Object // the Gtk.Builder (a reload of its file replaces it)

	// Development mode (LoadUIFS while a reload watcher runs): what a
	// reload of the file needs. kept: the ids whose old object stays in
	// place (a shown window: its child is replaced), a Python dict.
	handlers map[string]any
	kept     *pygi.Object
}

// LoadUI builds the interface in xml, binding each <signal handler="name">
// to handlers[name] (any Go func, adapted as by package callbacks: it
// receives the emitter and the signal's arguments, then the element's
// object if it names one; swapped, which GtkBuilder makes the default when
// an object is named, it receives that object first and the emitter last).
// A handler name the interface uses that is not in handlers, or a handler
// in handlers the interface never uses (a typo on one side or the other),
// or a handler that is not a func, is an error here, before anything is
// built. Each callback is named as the interface names its handler (in
// the census, say). UI thread only.
//
// The handlers of a list item factory's template (a GtkBuilderListItemFactory
// whose bytes hold an interface) are checked and bound the same way;
// GtkBuilder connects them itself, for each item it makes, so they are not
// in duet's record of connections: an item's handlers go with the item.
func LoadUI(xml string, handlers map[string]any) (*UI, error) {
	if err := eventloop.RequireMain("widgets.LoadUI"); err != nil {
		return nil, err
	}
	builder, err := buildUI(xml, handlers)
	if err != nil {
		return nil, fmt.Errorf("widgets: LoadUI: %w", err)
	}
	return &UI{Builder: builder}, nil
}

// buildUI checks the interface's handler names against handlers and
// builds it (LoadUI, and a reload of its file).
func buildUI(xml string, handlers map[string]any) (*pygi.Object, error) {
	if err := hookConnect(); err != nil {
		return nil, err
	}
	m, err := uiHelper.Get()
	if err != nil {
		return nil, err
	}
	var b pygi.Block
	names := pygi.BlockAs[[]string](&b, b.CallMethod(m.Object, "handler_names", xml))
	if err := b.Err(); err != nil {
		return nil, err
	}
	var missing, unused []string
	for _, n := range names {
		if _, ok := handlers[n]; !ok {
			missing = append(missing, n)
		}
	}
	for n := range handlers {
		if !slices.Contains(names, n) {
			unused = append(unused, n)
		}
	}
	if len(missing) > 0 || len(unused) > 0 {
		slices.Sort(unused)
		var why []string
		if len(missing) > 0 {
			why = append(why, "the interface names handlers with no Go func: "+strings.Join(missing, ", "))
		}
		if len(unused) > 0 {
			why = append(why, "Go funcs the interface never names: "+strings.Join(unused, ", "))
		}
		return nil, errors.New(strings.Join(why, "; "))
	}
	// Each handler is made a callback here, named as the interface names
	// it: the census then says on_save_clicked, not the Go closure's name.
	named := make(map[string]any, len(handlers))
	for n, fn := range handlers {
		if o, ok := fn.(*pygi.Object); ok {
			named[n] = o // a callable already
			continue
		}
		cb, err := callbacks.New(fn, callbacks.Name(n))
		if err != nil {
			return nil, fmt.Errorf("handler %s: %w", n, err)
		}
		defer cb.Close() // the builder's scope holds it
		named[n] = cb
	}
	builder := b.CallMethod(m.Object, "build", xml, named)
	if err := b.Err(); err != nil {
		return nil, err
	}
	return builder, nil
}

// LoadUIFS is LoadUI for a file in a file system (go:embed, say).
//
// In development mode (a reload watcher runs: app.Options.Reload,
// DUET_RELOAD=1) the file is watched on disk, found as LoadFS's files are,
// and each save rebuilds the interface, on the UI thread between two
// events, with the same handlers, checked as here: a handler name with no
// Go func, a Go func no longer named, XML that does not parse or build is
// said (stderr, slog, the banner) and the old interface stays. Built, each
// of its top-level objects that the old interface's is placed (a widget
// with a parent, a window shown) takes that one's place:
//
//   - in its parent, at the same place: a Gtk.Box after the same sibling,
//     a Gtk.Grid in the same cells, a Gtk.Paned's or Gtk.CenterBox's same
//     slot, a Gtk.Stack's page of the same name and title (last in the
//     stack: Gtk.Stack has no insert), an overlay's overlay, the child of
//     a single-child widget (window, frame, scrolled window, viewport,
//     button, revealer, expander, popover, list box row...); in any other
//     parent (a Gtk.Notebook's or Gtk.Assistant's page, say) the old
//     object stays, said as needing a restart (and a widget that is in no
//     tree, the child of a folded expander say, is not seen as placed:
//     the expander keeps the old one);
//   - a window shown stays the window the app shows (its size, place,
//     title and what Go code connected to it or holds of it stay good):
//     its child, and its titlebar if the file gives one, are the new
//     window's, which is destroyed unshown.
//
// The old objects are unparented and the old builder let go: they are
// freed, with their connections, unless something else holds them. What
// the app's Go code holds (a *Widget from Object) stays the old object, out
// of the window: read it again through Object, which gives the new one
// after a reload (the shown window itself for a window). Builder is
// replaced too (the old one is closed): read the field again rather than
// keep it. Objects that are not placed (a dialog not shown, an adjustment)
// are simply the new builder's. In development mode duet keeps each UI
// loaded from a file, and its builder, for the rest of the run.
func LoadUIFS(fsys fs.FS, file string, handlers map[string]any) (*UI, error) {
	xml, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	u, err := LoadUI(string(xml), handlers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if reload.Watching() {
		var dir string
		if _, caller, _, ok := runtime.Caller(1); ok && filepath.IsAbs(caller) {
			dir = filepath.Dir(caller)
		}
		u.watch(fsys, file, string(xml), dir, handlers)
	}
	return u, nil
}

// uiFiles are the interfaces loaded from each .ui file in development
// mode, by record key: all of them are rebuilt when it changes. They stay
// for the run (UI thread).
var uiFiles = map[string]*uiFile{}

type uiFile struct {
	file string
	uis  []*UI
	xml  string // what they were built from
}

func (u *UI) watch(fsys fs.FS, file, xml, callerDir string, handlers map[string]any) {
	u.handlers = maps.Clone(handlers)
	key := "ui:" + file
	f := uiFiles[key]
	if f == nil || f.xml != xml {
		// The first load of the file, or one of other contents (another
		// fs.FS with a file of that name): the record starts again.
		f = &uiFile{file: file, xml: xml}
		uiFiles[key] = f
	}
	f.uis = append(f.uis, u)
	reload.LoadedUIFS(key, fsys, file, xml, callerDir, f.rebuild)
}

// rebuild builds xml for each interface loaded from the file, with its
// handlers, checked as at load: if one fails, nothing changes. Then each
// puts its new objects where the old ones are placed.
func (f *uiFile) rebuild(xml string) (int, []string, error) {
	builders := make([]*pygi.Object, len(f.uis))
	for i, u := range f.uis {
		b, err := buildUI(xml, u.handlers)
		if err != nil {
			for _, b := range builders[:i] {
				b.Close()
			}
			var pe *pygi.Error
			if errors.As(err, &pe) {
				err = pe // the exception, without the helper's call
			}
			return 0, nil, err
		}
		builders[i] = b
	}
	m, err := uiHelper.Get()
	if err != nil {
		return 0, nil, err
	}
	var replaced int
	var restart []string
	for i, u := range f.uis {
		if u.kept == nil {
			if u.kept, err = pygi.New(map[string]any{}); err != nil {
				return replaced, restart, err
			}
		}
		var b pygi.Block
		out := pygi.BlockAs[[]any](&b, b.CallMethod(m.Object, "replace", u.Builder, u.kept, builders[i], xml, f.xml))
		if err := b.Err(); err != nil {
			// Half done: what was replaced is the new builder's.
			restart = append(restart, f.file+": "+err.Error())
		}
		if len(out) == 2 {
			n, _ := out[0].(int64)
			replaced += int(n)
			ps, _ := out[1].([]any)
			for _, p := range ps {
				s, _ := p.(string)
				restart = append(restart, s)
			}
		}
		old := u.Builder
		u.Builder = builders[i]
		old.Close()
	}
	f.xml = xml
	return replaced, restart, nil
}

// Object returns the interface's object with the given id. After a reload
// of the interface's file, the new one (a shown window stays the same
// window, with the new child).
func (u *UI) Object(id string) (*Widget, error) {
	if err := eventloop.RequireMain("widgets.UI.Object"); err != nil {
		return nil, err
	}
	var o *pygi.Object
	var err error
	if u.kept != nil {
		var m *Module
		if m, err = uiHelper.Get(); err == nil {
			o, err = m.CallMethod("get_object", u.Builder, u.kept, id)
		}
	} else {
		o, err = u.Builder.CallMethod("get_object", id)
	}
	if err != nil {
		return nil, err
	}
	if o.IsNone() {
		return nil, fmt.Errorf("widgets: the interface has no object %q", id)
	}
	return &Widget{o}, nil
}
