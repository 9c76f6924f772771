// Command duetgen writes a typed Go wrapper for a Python GObject class, so
// that Go code using a Python widget is checked by the compiler: typed
// getters and setters for the class's own GObject properties, typed
// Connect<Signal> methods for its own signals, and typed methods for its
// public methods (Python type hints say the types; a method without them
// takes any and returns *pygi.Object). The wrapper also records what the
// class looked like, one line per member it uses, and checks the class as
// loaded against that once (widgets.Generated): a class edited since, a
// parameter's type hint say, is an error that says to run go generate
// again, not a call that does something else. Use it from go generate:
//
//	//go:generate go run github.com/duet-gtk/duet/cmd/duetgen -file greeter.py -class Greeter
//
// It imports the class with the embedded interpreter (so GTK must be able
// to start: with no display it re-runs itself under xvfb-run).
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/duet-gtk/duet/internal/report"
	"github.com/duet-gtk/duet/internal/shape"
	"github.com/duet-gtk/duet/pygi"
)

//go:embed describe.py
var describeSource string

var (
	file      = flag.String("file", "", "the Python source file holding the class")
	class     = flag.String("class", "", "the Python class")
	typeName  = flag.String("type", "", "the Go type (default: the class name)")
	pkg       = flag.String("package", os.Getenv("GOPACKAGE"), "the Go package (default: $GOPACKAGE, set by go generate)")
	out       = flag.String("out", "", "the output file (default: <type>_gen.go, lower case)")
	skip      = flag.String("skip", "", "comma-separated Python methods to leave out (written by hand)")
	noStruct  = flag.Bool("no-struct", false, "do not declare the type (a hand-written file declares it, embedding *Widget)")
	noNew     = flag.Bool("no-constructor", false, "do not write New<Type>")
	moduleArg = flag.String("module", "", "the Python module name to load the file as (default: the file's base name)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		report.Print("duetgen", err)
		os.Exit(1)
	}
}

// class is what describe.py reports.
type classInfo struct {
	Name    string     `json:"name"` // the class's __name__
	GType   string     `json:"gtype"`
	Doc     string     `json:"doc"`
	Props   [][]any    `json:"props"`   // name, GType name, blurb, settable
	Signals [][]any    `json:"signals"` // name, [param GType names], return GType name
	Methods [][]any    `json:"methods"` // name, [[param, type, kind]], return type, doc
	Members [][]string `json:"members"` // kind, name, the member's line (internal/shape)
	Skip    []string   `json:"-"`
}

func run() error {
	if *file == "" || *class == "" || *pkg == "" {
		return errors.New("-file, -class and -package (or go generate's $GOPACKAGE) are needed")
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" && os.Getenv("DUETGEN_XVFB") == "" {
		if xvfb, err := exec.LookPath("xvfb-run"); err == nil {
			cmd := exec.Command(xvfb, append([]string{"-a", os.Args[0]}, os.Args[1:]...)...)
			cmd.Env = append(os.Environ(), "DUETGEN_XVFB=1", "GTK_A11Y=none")
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			return cmd.Run()
		}
	}
	if *typeName == "" {
		*typeName = *class
	}
	if *out == "" {
		*out = strings.ToLower(*typeName) + "_gen.go"
	}
	mod := *moduleArg
	if mod == "" {
		mod = strings.TrimSuffix(filepath.Base(*file), ".py")
	}
	info, err := describe(*file, mod, *class)
	if err != nil {
		return err
	}
	if *skip != "" {
		info.Skip = strings.Split(*skip, ",")
	}
	src, err := generate(info)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, src, 0o644)
}

func describe(file, mod, class string) (*classInfo, error) {
	if err := pygi.RequireVersion("Gtk", "4.0"); err != nil {
		return nil, err
	}
	var b pygi.Block
	g := b.Globals(nil)
	b.Exec(shape.Source, g)
	b.Exec(describeSource, g)
	text := pygi.BlockAs[string](&b, b.CallMethod(b.Import("json"), "dumps", b.CallMethod(b.Item(g, "describe"), "", file, mod, class)))
	if err := b.Err(); err != nil {
		return nil, err
	}
	var info classInfo
	if err := json.Unmarshal([]byte(text), &info); err != nil {
		return nil, err
	}
	return &info, pygi.Finalize(context.Background())
}

// generate writes the wrapper's source, gofmt'ed.
func generate(info *classInfo) ([]byte, error) {
	var w bytes.Buffer
	t := *typeName
	self := "widgets."
	if *pkg == "widgets" {
		self = ""
	}
	if !*noStruct {
		doc := info.Doc
		if doc == "" {
			doc = "the Python class " + *class + "."
		}
		fmt.Fprintf(&w, "// %s is the Python class %s, typed: %s\n// Its methods are UI thread only.\ntype %s struct{ *%sWidget }\n\n",
			t, *class, oneLine(doc), t, self)
	}
	// What the class looked like: the members this file uses, checked
	// against the class as loaded by every method below (once).
	shapeVar := lowerFirst(t) + "Generated"
	fmt.Fprintf(&w, "// %s is the Python class as this file was generated from it; the\n// methods below check the class as loaded against it, once.\n", shapeVar)
	fmt.Fprintf(&w, "var %s = &%sGenerated{\n\tClass: %q,\n\tFile: %q,\n\tMembers: []string{\n", shapeVar, self, info.Name, filepath.ToSlash(*file))
	for _, m := range info.Members {
		if m[0] == "method" && contains(info.Skip, m[1]) {
			continue // written by hand
		}
		fmt.Fprintf(&w, "\t\t%q,\n", m[2])
	}
	w.WriteString("\t},\n}\n\n")
	fmt.Fprintf(&w, "// checkClass runs before every method below: the class as loaded is still\n// the one this file was generated from, and a nil *%s is an error.\n", t)
	fmt.Fprintf(&w, "func (w *%s) checkClass() error {\n\tif w == nil || w.Widget == nil {\n\t\treturn pygi.ErrNilObject\n\t}\n\treturn %s.Check(w.Widget)\n}\n\n", t, shapeVar)
	check := func(ret string) string {
		return fmt.Sprintf("\tif err := w.checkClass(); err != nil {\n\t\treturn %s\n\t}\n", ret)
	}
	if !*noNew {
		fmt.Fprintf(&w, "// New%s makes a %s from the loaded module m that defines it (UI thread).\n", t, *class)
		fmt.Fprintf(&w, "func New%s(m *%sModule, kw pygi.Kw) (*%s, error) {\n\tw, err := m.New(%q, kw)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tif err := %s.Check(w); err != nil {\n\t\treturn nil, err\n\t}\n\treturn &%s{w}, nil\n}\n\n",
			t, self, t, *class, shapeVar, t)
	}
	for _, p := range info.Props {
		name, gt, blurb, settable := p[0].(string), p[1].(string), p[2].(string), p[3].(bool)
		goT := gtypeGo(gt)
		m := camel(name)
		fmt.Fprintf(&w, "// %s returns the property %q%s.\nfunc (w *%s) %s() (%s, error) {\n\tvar zero %s\n%s\tr, err := w.Prop(%q)\n\tif err != nil {\n\t\treturn zero, err\n\t}\n\treturn pygi.As[%s](r)\n}\n\n",
			m, name, blurbText(blurb), t, m, goT, goT, check("zero, err"), name, goT)
		if settable {
			fmt.Fprintf(&w, "// Set%s sets the property %q.\nfunc (w *%s) Set%s(v %s) error {\n%s\treturn w.SetProp(%q, v)\n}\n\n", m, name, t, m, goT, check("err"), name)
		}
	}
	for _, s := range info.Signals {
		name, ret := s[0].(string), s[2].(string)
		var params, names []string
		for i, p := range s[1].([]any) {
			n := fmt.Sprintf("a%d", i)
			params = append(params, n+" "+gtypeGo(p.(string)))
			names = append(names, n)
		}
		result := ""
		if ret != "void" {
			result = " " + gtypeGo(ret)
		}
		retKw := ""
		if result != "" {
			retKw = "return "
		}
		sig := strings.Join(append([]string{"self *" + t}, params...), ", ")
		inner := strings.Join(append([]string{"self *pygi.Object"}, params...), ", ")
		fmt.Fprintf(&w, "// Connect%s connects fn to the signal %q: fn receives the emitter (use it\n// rather than capturing the widget) and the signal's arguments.\n", camel(name), name)
		fmt.Fprintf(&w, "func (w *%s) Connect%s(fn func(%s)%s) (uint64, error) {\n%s\treturn w.Connect(%q, func(%s)%s { %sfn(&%s{%sWrap(self)}, %s) })\n}\n\n",
			t, camel(name), sig, result, check("0, err"), name, inner, result, retKw, t, self, strings.Join(names, ", "))
	}
	for _, m := range info.Methods {
		name, ret, doc := m[0].(string), m[2].(string), m[3].(string)
		if contains(info.Skip, name) {
			continue
		}
		var params, args []string
		for _, p := range m[1].([]any) {
			pp := p.([]any)
			n := goIdent(pp[0].(string))
			params = append(params, n+" "+hintGo(pp[1].(string), true))
			args = append(args, n)
		}
		gm := camel(name)
		if doc == "" {
			doc = "calls the Python method " + name + "."
		} else {
			doc = "calls " + name + ": " + oneLine(doc)
		}
		call := fmt.Sprintf("w.CallMethod(%q%s)", name, prefixComma(args))
		pre := func(ret string) string {
			return fmt.Sprintf("\tif err := eventloop.RequireMain(%q); err != nil {\n\t\treturn %s\n\t}\n", *pkg+"."+t+"."+gm, ret) + check(ret)
		}
		switch ret {
		case "None":
			fmt.Fprintf(&w, "// %s %s\nfunc (w *%s) %s(%s) error {\n%s\t_, err := %s\n\treturn err\n}\n\n",
				gm, doc, t, gm, strings.Join(params, ", "), pre("err"), call)
		default:
			goT := hintGo(ret, false)
			if goT == "*pygi.Object" {
				fmt.Fprintf(&w, "// %s %s\nfunc (w *%s) %s(%s) (*pygi.Object, error) {\n%s\treturn %s\n}\n\n",
					gm, doc, t, gm, strings.Join(params, ", "), pre("nil, err"), call)
				continue
			}
			fmt.Fprintf(&w, "// %s %s\nfunc (w *%s) %s(%s) (%s, error) {\n\tvar zero %s\n%s\tr, err := %s\n\tif err != nil {\n\t\treturn zero, err\n\t}\n\treturn pygi.As[%s](r)\n}\n\n",
				gm, doc, t, gm, strings.Join(params, ", "), goT, goT, pre("zero, err"), call, goT)
		}
	}
	body := w.String()
	var h bytes.Buffer
	fmt.Fprintf(&h, "// Code generated by duetgen from %s (class %s, GType %s); DO NOT EDIT.\n\npackage %s\n\nimport (\n",
		filepath.ToSlash(*file), *class, info.GType, *pkg)
	// Imports by use; string literals ("kit.LogView.Text") do not count.
	code := stringLit.ReplaceAllString(body, `""`)
	for _, imp := range [][2]string{{"eventloop.", "github.com/duet-gtk/duet/eventloop"}, {"pygi.", "github.com/duet-gtk/duet/pygi"}, {"widgets.", "github.com/duet-gtk/duet/widgets"}} {
		if strings.Contains(code, imp[0]) {
			fmt.Fprintf(&h, "\t%q\n", imp[1])
		}
	}
	h.WriteString(")\n\n")
	h.WriteString(body)
	return format.Source(h.Bytes())
}

var stringLit = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// gtypeGo maps a GType name to a Go type.
func gtypeGo(gt string) string {
	switch gt {
	case "gint", "glong", "gint8", "gint16", "gint32", "gchar":
		return "int"
	case "gint64":
		return "int64"
	case "guint", "gulong", "guint8", "guint16", "guint32", "guchar":
		return "uint"
	case "guint64":
		return "uint64"
	case "gdouble", "gfloat":
		return "float64"
	case "gboolean":
		return "bool"
	case "gchararray":
		return "string"
	}
	return "*pygi.Object"
}

// hintGo maps a describe.py type name to a Go type.
func hintGo(h string, param bool) string {
	switch {
	case h == "int":
		return "int"
	case h == "float":
		return "float64"
	case h == "str":
		return "string"
	case h == "bool":
		return "bool"
	case h == "bytes":
		return "[]byte"
	case strings.HasPrefix(h, "list[") && strings.HasSuffix(h, "]"):
		return "[]" + hintGo(h[5:len(h)-1], param)
	case strings.HasPrefix(h, "dict[") && strings.HasSuffix(h, "]"):
		kv := strings.SplitN(h[5:len(h)-1], ", ", 2)
		if len(kv) == 2 {
			return "map[" + hintGo(kv[0], param) + "]" + hintGo(kv[1], param)
		}
	}
	if param {
		return "any"
	}
	return "*pygi.Object"
}

// camel turns a Python or GObject name into an exported Go name.
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' || r == '-' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func goIdent(s string) string {
	switch s {
	case "type", "func", "map", "range", "select", "chan", "go", "var", "default", "interface", "package":
		return s + "_"
	}
	return s
}

func prefixComma(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return ", " + strings.Join(args, ", ")
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func blurbText(b string) string {
	if b == "" {
		return ""
	}
	return " (" + oneLine(b) + ")"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
