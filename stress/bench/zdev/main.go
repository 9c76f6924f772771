package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/diamondburned/gotk4/pkg/core/glib"
	"github.com/diamondburned/gotk4/pkg/gtk/v4"

	"github.com/duet-gtk/duet/callbacks"
	"github.com/duet-gtk/duet/internal/capi"
	"github.com/duet-gtk/duet/pygi"
	"github.com/duet-gtk/duet/widgets"
)

func emitC(handler string, n int) float64 {
	b := gtk.NewButtonWithLabel("x")
	py, err := widgets.ToPython(b)
	if err != nil {
		panic(err)
	}
	defer py.Close()
	switch handler {
	case "func":
		_, err = callbacks.Connect(py, "clicked", func() {})
	case "object":
		_, err = callbacks.Connect(py, "clicked", func(*pygi.Object) {})
	case "lambda":
		var f *pygi.Object
		if f, err = pygi.Eval("lambda button: None", nil); err == nil {
			_, err = py.CallMethod("connect", "clicked", f)
		}
	case "gotk4":
		b.ConnectClicked(func() {})
	case "typed":
		glib.InternObject(b).Connect("clicked", func(b *gtk.Button) {})
	case "c":
		err = capi.ConnectNoop(glib.InternObject(b).Native(), "clicked")
	case "pyloop":
		_, err = callbacks.Connect(py, "clicked", func() {})
		if err != nil {
			panic(err)
		}
		var bb pygi.Block
		g := bb.Globals(pygi.Kw{"b": py})
		bb.Exec("import time\ndef bench(n):\n    t = time.perf_counter_ns()\n    for _ in range(n):\n        b.emit('clicked')\n    return (time.perf_counter_ns() - t) / n\n", g)
		return pygi.BlockAs[float64](&bb, bb.CallMethod(bb.Item(g, "bench"), "", n))
	case "pylambda":
		var bb pygi.Block
		g := bb.Globals(pygi.Kw{"b": py})
		bb.Exec("import time\nb.connect('clicked', lambda b: None)\ndef bench(n):\n    t = time.perf_counter_ns()\n    for _ in range(n):\n        b.emit('clicked')\n    return (time.perf_counter_ns() - t) / n\n", g)
		return pygi.BlockAs[float64](&bb, bb.CallMethod(bb.Item(g, "bench"), "", n))
	}
	if err != nil {
		panic(err)
	}
	ns, err := capi.EmitN(glib.InternObject(b).Native(), "clicked", n)
	if err != nil {
		panic(err)
	}
	runtime.KeepAlive(b)
	return ns
}

func main() {
	if err := pygi.Init(pygi.Options{}); err != nil {
		panic(err)
	}
	pygi.RequireVersion("Gtk", "4.0")
	if _, err := pygi.Import("gi.repository.Gtk"); err != nil {
		panic(err)
	}
	if len(os.Args) > 1 && os.Args[1] == "create" {
		Gtk, _ := pygi.Import("gi.repository.Gtk")
		b, _ := Gtk.CallMethod("Button", pygi.Kw{"label": "x"})
		fn := func(*pygi.Object) {}
		for r := 0; r < 5; r++ {
			t := time.Now()
			for range 200000 {
				id, err := callbacks.Connect(b, "clicked", fn)
				if err != nil {
					panic(err)
				}
				if err := callbacks.Disconnect(b, id); err != nil {
					panic(err)
				}
			}
			fmt.Printf("create %.0f ns\n", float64(time.Since(t).Nanoseconds())/200000)
		}
		return
	}
	kinds := os.Args[1:]
	res := map[string][]float64{}
	for r := 0; r < 7; r++ {
		for _, k := range kinds {
			res[k] = append(res[k], emitC(k, 100000))
			runtime.GC()
		}
	}
	for _, k := range kinds {
		v := res[k]
		sort.Float64s(v)
		fmt.Printf("%-8s %.1f ns\n", k, v[len(v)/2])
	}
}
