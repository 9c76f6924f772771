package widgets

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

// A UI is a GtkBuilder interface (a .ui file) whose signal handlers are Go
// funcs: the way Gtk.Template works in PyGObject and CompositeTemplate in
// gtk-rs. Its objects may be of Python widget classes (load their module
// first; GtkBuilder finds them by GType name, "module+Class" unless the
// class sets __gtype_name__).
type UI struct {
	Builder *pygi.Object // the Gtk.Builder
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
		return nil, fmt.Errorf("widgets: LoadUI: %w", err)
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
		return nil, fmt.Errorf("widgets: LoadUI: %s", strings.Join(why, "; "))
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
			return nil, fmt.Errorf("widgets: LoadUI: handler %s: %w", n, err)
		}
		defer cb.Close() // the builder's scope holds it
		named[n] = cb
	}
	builder := b.CallMethod(m.Object, "build", xml, named)
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("widgets: LoadUI: %w", err)
	}
	return &UI{Builder: builder}, nil
}

// LoadUIFS is LoadUI for a file in a file system (go:embed, say).
func LoadUIFS(fsys fs.FS, file string, handlers map[string]any) (*UI, error) {
	xml, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	u, err := LoadUI(string(xml), handlers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return u, nil
}

// Object returns the interface's object with the given id.
func (u *UI) Object(id string) (*Widget, error) {
	if err := eventloop.RequireMain("widgets.UI.Object"); err != nil {
		return nil, err
	}
	o, err := u.Builder.CallMethod("get_object", id)
	if err != nil {
		return nil, err
	}
	if o.IsNone() {
		return nil, fmt.Errorf("widgets: the interface has no object %q", id)
	}
	return &Widget{o}, nil
}
