package widgets_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/duet-gtk/duet/app" // every library package linked: all their Python listed
	_ "github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

// programs are the trees whose Python belongs to a program (an example, a
// tool, the stress harness) rather than to duet's library.
var programs = []string{"examples/", "cmd/", "stress/", "scripts/"}

// Every Python file duet's library embeds compiles, found by walking the
// embedded file systems of every package; and every .py file in duet's
// tree is one of them (a new file cannot be left out, or embedded some
// other way), or a program's, which compiles too.
func TestEveryEmbeddedPythonFileCompiles(t *testing.T) {
	embedded, err := pysrc.CompileAll()
	require.NoError(t, err)
	listed := map[string]string{}
	for _, f := range embedded {
		listed[filepath.ToSlash(filepath.Join(f.Package, f.Path))] = f.Source
	}

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	builtins, err := pygi.Import("builtins")
	require.NoError(t, err)
	defer builtins.Close()
	var library, program int
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".py") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(p)
		require.NoError(t, err)
		isProgram := false
		for _, prefix := range programs {
			isProgram = isProgram || strings.HasPrefix(rel, prefix)
		}
		if isProgram {
			program++
			code, err := builtins.CallMethod("compile", string(src), rel, "exec", 0, true)
			code.Close()
			assert.NoError(t, err, "%s does not compile", rel)
			return nil
		}
		library++
		embeddedSrc, ok := listed[rel]
		if assert.True(t, ok, "%s is not embedded through internal/pysrc (go:embed it into its package's pysrc.Embed file system)", rel) {
			assert.Equal(t, string(src), embeddedSrc, "%s: the embedded copy is not the file", rel)
		}
		return nil
	})
	require.NoError(t, err)
	names := make([]string, 0, len(listed))
	for name := range listed {
		names = append(names, name)
	}
	assert.Equal(t, len(listed), library, "every embedded file is a file of duet's tree: %v", names)
	assert.GreaterOrEqual(t, library, 10, "duet's own Python files")
	assert.Positive(t, program, "programs' Python files")
}

// Every module of duet's library has its code compiled ahead in
// internal/pysrc's precompiled/code.bin (make writes it), from its file as it is now and for
// this interpreter: a load then skips compile() (a stale entry is only
// slower, never wrong, so this test is what says so).
func TestEveryModuleIsPrecompiled(t *testing.T) {
	stale, err := pysrc.Stale()
	require.NoError(t, err, "code.bin cannot be read: run go generate ./internal/pysrc (make does before it builds)")
	assert.Empty(t, stale, "not compiled ahead, or from other sources than these files' (or for another Python): run go generate ./internal/pysrc (make does before it builds)")
}
