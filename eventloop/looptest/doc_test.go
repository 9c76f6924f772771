package looptest_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The API table in doc.go lists exactly the exported names: a helper added
// or removed shows up there too.
func TestDocListsTheAPI(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/duet-gtk/duet/eventloop/looptest")
	require.NoError(t, err)

	var exported []string
	for _, f := range p.Funcs {
		exported = append(exported, f.Name)
	}
	for _, v := range slices.Concat(p.Vars, p.Consts) {
		exported = append(exported, v.Names...)
	}
	for _, ty := range p.Types {
		exported = append(exported, ty.Name)
		for _, f := range slices.Concat(ty.Funcs, ty.Methods) {
			exported = append(exported, f.Name)
		}
	}

	_, table, ok := strings.Cut(p.Doc, "# API\n")
	require.True(t, ok, "doc.go has an API section")
	// The table's second column, continuation lines joined, without its
	// prose in parentheses; a parenthesised name is a method.
	var listed strings.Builder
	for _, line := range strings.Split(strings.TrimLeft(table, "\n"), "\n") {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		if len(line) > 20 {
			listed.WriteString(" " + line[20:])
		}
	}
	prose := regexp.MustCompile(`\([^()]* [^()]*\)`)
	words := strings.FieldsFunc(prose.ReplaceAllString(listed.String(), ""), func(r rune) bool {
		return strings.ContainsRune(" ,()", r)
	})
	assert.ElementsMatch(t, exported, words)
}
