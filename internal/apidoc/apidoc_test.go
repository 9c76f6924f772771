package apidoc_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The public packages, relative to the module root.
var public = []string{"app", "callbacks", "eventloop", "eventloop/looptest", "explore", "forensics", "pygi", "widgets", "widgets/kit"}

// go test -v -run TestAPISections ./internal/apidoc also logs how many
// names each package exports (the count the docs' API sections link).
func TestAPISectionsListEveryExportedName(t *testing.T) {
	root := filepath.Join("..", "..")
	total := 0
	t.Cleanup(func() { t.Logf("exported names in all public packages: %d", total) })
	for _, dir := range public {
		t.Run(dir, func(t *testing.T) {
			pkg := load(t, filepath.Join(root, dir))
			exported := exportedNames(pkg)
			total += len(exported)
			t.Logf("%s exports %d names", dir, len(exported))
			linked, err := apiLinks(pkg.Doc)
			require.NoError(t, err)
			for _, name := range exported {
				assert.Contains(t, linked, name, "%s exports %s, which its doc's API section does not link", dir, name)
			}
			for name := range linked {
				assert.Contains(t, exported, name, "%s's doc's API section links %s, which the package does not export", dir, name)
			}
		})
	}
}

// Every public package is in the list above: a new one gets its section.
func TestEveryPublicPackageIsChecked(t *testing.T) {
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		switch first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); {
		case first == "internal", first == "cmd", first == "examples", first == "stress", first == "out", strings.HasPrefix(first, "."), first == "scripts":
			return filepath.SkipDir
		case strings.HasSuffix(rel, "internal") || d.Name() == "testdata":
			return filepath.SkipDir
		}
		if matches, _ := filepath.Glob(filepath.Join(path, "*.go")); len(matches) > 0 {
			found = append(found, filepath.ToSlash(rel))
			assert.FileExists(t, filepath.Join(path, "doc.go"), "%s: the package doc lives in doc.go", rel)
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(found)
	assert.Equal(t, public, found, "the Go packages outside internal/, cmd/, examples/ and stress/")
}

func load(t *testing.T, dir string) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	require.NoError(t, err)
	require.Len(t, pkgs, 1, "one package in %s", dir)
	for _, p := range pkgs {
		return doc.New(p, dir, 0)
	}
	return nil
}

// exportedNames lists what the package exports, as a doc link names it.
func exportedNames(p *doc.Package) []string {
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					names = append(names, n)
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		names = append(names, f.Name)
	}
	for _, typ := range p.Types {
		names = append(names, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range typ.Methods {
			if m.Name == "Error" || m.Name == "Unwrap" {
				continue // what makes the type an error
			}
			names = append(names, typ.Name+"."+m.Name)
		}
	}
	slices.Sort(names)
	return names
}

// apiLinks collects the package-local doc links in the list that follows
// the "# API" heading.
func apiLinks(text string) (map[string]bool, error) {
	// Every [Name] and [Type.Name] counts as a link; the test then says
	// which of them the package does not export.
	p := comment.Parser{LookupSym: func(recv, name string) bool { return true }}
	d := p.Parse(text)
	links := map[string]bool{}
	inAPI, sawList := false, false
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Heading:
			inAPI = headingText(b) == "API"
		case *comment.List:
			if !inAPI {
				continue
			}
			sawList = true
			for _, item := range b.Items {
				for _, c := range item.Content {
					if para, ok := c.(*comment.Paragraph); ok {
						collect(para.Text, links)
					}
				}
			}
		}
	}
	if !sawList {
		return nil, errNoSection
	}
	return links, nil
}

type docError string

func (e docError) Error() string { return string(e) }

const errNoSection = docError(`no list under a "# API" heading in the package doc`)

func headingText(h *comment.Heading) string {
	var b strings.Builder
	for _, t := range h.Text {
		if p, ok := t.(comment.Plain); ok {
			b.WriteString(string(p))
		}
	}
	return b.String()
}

func collect(text []comment.Text, links map[string]bool) {
	for _, t := range text {
		switch t := t.(type) {
		case *comment.DocLink:
			if t.ImportPath != "" {
				continue // another package's name
			}
			name := t.Name
			if t.Recv != "" {
				name = t.Recv + "." + t.Name
			}
			links[name] = true
		case *comment.Italic, comment.Plain:
		case *comment.Link:
			collect(t.Text, links)
		}
	}
}
