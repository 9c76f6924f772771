package app_test

import (
	"fmt"
	"os"

	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/app"
	"github.com/duet-gtk/duet/pygi"
)

// A whole program: Main makes the application, runs activate on each
// activation and returns the exit status. (Compiled, not run: it takes
// over the process's main thread.)
func ExampleMain() {
	os.Exit(app.Main(app.Options{ID: "org.example.Hello"}, func(a *app.App) error {
		win := gtk.NewApplicationWindow(a.Gtk())
		win.SetTitle("Hello")
		win.Present()
		return nil
	}))
}

// The same application seen from Python: a window made with PyGObject
// belongs to it like one made with gotk4.
func ExampleApp_Python() {
	os.Exit(app.Main(app.Options{ID: "org.example.Both"}, func(a *app.App) error {
		Gtk, err := pygi.Import("gi.repository.Gtk")
		if err != nil {
			return err
		}
		win, err := Gtk.CallMethod("ApplicationWindow", pygi.Kw{"application": a.Python(), "title": "From Python"})
		if err != nil {
			return err
		}
		_, err = win.CallMethod("present")
		return err
	}))
}

// An action with an accelerator, reachable from menus and buttons as
// "app.hello".
func ExampleApp_AddAction() {
	os.Exit(app.Main(app.Options{ID: "org.example.Actions"}, func(a *app.App) error {
		return a.AddAction("hello", []string{"<Control>h"}, func() { fmt.Println("hello") })
	}))
}
