package widgets

import (
	"fmt"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/eventloop"
	"github.com/duet-gtk/duet/pygi"
)

// ClassSpec describes a GObject class defined from Go: a subclass of a GTK
// class or of a Python class, whose methods and virtual-function overrides
// are Go funcs. The class is an ordinary PyGObject class (PyGObject
// registers its GType), so Python code and Go code use it like any other.
type ClassSpec struct {
	// Name of the class (and of its GType, prefixed by PyGObject).
	Name string
	// Base is the class to derive from: a GObject class object, e.g.
	// Gtk.ApplicationWindow or a class from a loaded Module.
	Base *pygi.Object
	// Methods are Go funcs; each receives the instance as its first
	// parameter (self *pygi.Object), like a Python method.
	Methods map[string]any
	// Overrides are virtual-function implementations, keyed by PyGObject's
	// do_ name ("do_measure", "do_snapshot", ...), with the instance first.
	Overrides map[string]any
	// Init, when set, runs after the base class is initialised:
	// func(self *pygi.Object, kw pygi.Kw) error. kw holds the keyword
	// arguments that are not GObject properties of the class.
	Init any
	// Signals are the class's own signals.
	Signals map[string]Signal
	// Properties are the class's own GObject properties.
	Properties []Property
}

// Signal declares a custom signal. Types are Python type names: "int",
// "float", "bool", "str", "object" (any Python object); Return "" for none.
type Signal struct {
	Params []string
	Return string
}

// Property declares a custom GObject property, stored by the instance.
type Property struct {
	Name    string
	Type    string // "int", "float", "bool", "str" or "object"
	Default any
	Min     any // for numbers; nil for the type's range
	Max     any
	Nick    string
	Blurb   string
}

// DefineClass creates the class. The Go funcs become callbacks owned by the
// class (which lives as long as Python keeps it, normally for the rest of
// the program). UI thread only.
func DefineClass(spec ClassSpec) (*pygi.Object, error) {
	if err := eventloop.RequireMain("widgets.DefineClass"); err != nil {
		return nil, err
	}
	if spec.Name == "" || spec.Base == nil {
		return nil, fmt.Errorf("widgets: DefineClass needs a Name and a Base")
	}
	helper, err := classPy.Get()
	if err != nil {
		return nil, err
	}
	methods := map[string]any{}
	for name, fn := range spec.Methods {
		m, err := callbacks.NewMethod(fn, callbacks.Name(name), callbacks.Doc(spec.Name+"."+name+", implemented in Go."))
		if err != nil {
			return nil, fmt.Errorf("widgets: %s.%s: %w", spec.Name, name, err)
		}
		methods[name] = m
	}
	for name, fn := range spec.Overrides {
		m, err := callbacks.NewMethod(fn, callbacks.Name(name), callbacks.Doc(spec.Name+"."+name+" (a virtual function), implemented in Go."))
		if err != nil {
			return nil, fmt.Errorf("widgets: %s.%s: %w", spec.Name, name, err)
		}
		methods[name] = m
	}
	var init any
	if spec.Init != nil {
		cb, err := callbacks.New(spec.Init, callbacks.Name(spec.Name+"_init"))
		if err != nil {
			return nil, fmt.Errorf("widgets: %s init: %w", spec.Name, err)
		}
		init = cb
	}
	signals := map[string]any{}
	for name, s := range spec.Signals {
		params := s.Params
		if params == nil {
			params = []string{}
		}
		signals[name] = map[string]any{"params": params, "return": s.Return}
	}
	var props []any
	for _, p := range spec.Properties {
		props = append(props, map[string]any{
			"name": p.Name, "type": p.Type, "default": p.Default, "min": p.Min, "max": p.Max,
			"nick": p.Nick, "blurb": p.Blurb,
		})
	}
	cls, err := helper.CallMethod("define_class", spec.Name, spec.Base, methods, signals, props, init)
	for _, m := range methods {
		m.(*pygi.Object).Close() // the class holds them now
	}
	if o, ok := init.(*pygi.Object); ok {
		o.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("widgets: defining %s: %w", spec.Name, err)
	}
	return cls, nil
}
