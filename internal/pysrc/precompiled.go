package pysrc

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/duet-gtk/duet/pygi"
)

//go:generate go run ./precompile -o precompiled/code.bin

// precompiledDir holds code.bin, every embedded file compiled ahead of time, as
// marshal writes a code object (what a .pyc holds after its header). A
// module's load unmarshals its entry instead of compiling its source:
// compile() of duet's modules on the way to a program's first frame cost
// about 3 ms, and the code is the same at every start. An entry is used
// only for exactly the source it was made from (its SHA-256) and by the
// bytecode it was made for (importlib's MAGIC_NUMBER, checked in Python);
// otherwise the file is compiled as it loads, as before. So an entry that
// is stale (a .py edited since go generate ran) or made by another Python
// costs speed, never behaviour; widgets' test of the embedded files says
// when the file needs making again. The file is derived (from the sources,
// by the Python of the machine that builds), so it is not in the
// repository: make writes it before it builds, and a build without it
// (go get, a bare go build) compiles every file as it loads. The directory
// is embedded, not the file, because go:embed of a missing file is a
// build error; its README is what is there when code.bin is not.
//
//go:embed precompiled
var precompiledDir embed.FS

// precompiledBin is code.bin's contents, empty when it was not made.
// embed.FS hands out a copy (230 KB, on the way to the first frame); the
// index's entries are substrings of it, so it is not copied once more into
// a string: nothing else holds the buffer or ever writes to it.
func precompiledBin() string {
	b, err := precompiledDir.ReadFile("precompiled/code.bin")
	if err != nil {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// precompiledHeader starts code.bin; then, per file, its file name
// (as tracebacks name it), the hex SHA-256 of its source and the length
// of its code, a line each, then the code (MAGIC_NUMBER, then marshal's
// bytes) and a newline.
const precompiledHeader = "duet precompiled python 1\n"

type compiled struct {
	sum  string // hex SHA-256 of the source
	code string // MAGIC_NUMBER + marshal.dumps(code object)
}

var precompiled = struct {
	once  sync.Once
	mu    sync.Mutex          // tests change the index (export_test.go)
	index map[string]compiled // by file name
	err   error               // why code.bin could not be read, for Stale
}{}

func precompiledIndex() map[string]compiled {
	precompiled.once.Do(func() {
		idx, err := parsePrecompiled(precompiledBin())
		if err != nil || idx == nil {
			idx = map[string]compiled{} // none or unreadable: every file compiles as it loads
		}
		precompiled.index, precompiled.err = idx, err
	})
	return precompiled.index
}

func parsePrecompiled(s string) (map[string]compiled, error) {
	if s == "" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(s, precompiledHeader)
	if !ok {
		return nil, fmt.Errorf("pysrc: precompiled/code.bin: not %q", strings.TrimSpace(precompiledHeader))
	}
	idx := map[string]compiled{}
	for rest != "" {
		var fields [3]string
		for i := range fields {
			line, tail, found := strings.Cut(rest, "\n")
			if !found {
				return nil, fmt.Errorf("pysrc: precompiled/code.bin: truncated entry")
			}
			fields[i], rest = line, tail
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil || n < 0 || n >= len(rest) || rest[n] != '\n' {
			return nil, fmt.Errorf("pysrc: precompiled/code.bin: bad entry for %s", fields[0])
		}
		idx[fields[0]] = compiled{sum: fields[1], code: rest[:n]}
		rest = rest[n+1:]
	}
	return idx, nil
}

// precompiledCode returns the code made ahead for the file called name
// from exactly src, or nil.
func precompiledCode(name, src string) []byte {
	precompiledIndex()
	precompiled.mu.Lock()
	c, ok := precompiled.index[name]
	precompiled.mu.Unlock()
	if !ok || c.sum != sourceSum(src) {
		return nil
	}
	return []byte(c.code)
}

// moduleFiles returns the files Modules are made of, each once, in the
// order of their names.
func moduleFiles() ([]File, error) {
	registry.mu.Lock()
	seen := map[string]bool{}
	var mods []*Module
	for _, m := range registry.modules {
		if p := m.Path(); !seen[p] {
			seen[p] = true
			mods = append(mods, m)
		}
	}
	registry.mu.Unlock()
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path() < mods[j].Path() })
	files := make([]File, 0, len(mods))
	for _, m := range mods {
		src, err := fs.ReadFile(m.files.fsys, m.file)
		if err != nil {
			return nil, fmt.Errorf("pysrc: %s: %w", m.Path(), err)
		}
		files = append(files, File{Package: m.files.pkg, Path: m.file, Source: string(src)})
	}
	return files, nil
}

func sourceSum(src string) string {
	h := sha256.Sum256([]byte(src))
	return hex.EncodeToString(h[:])
}

// Precompile compiles the file of every Module declared by the packages
// linked in as the module's load would, and returns what code.bin
// holds for them. The generator (go generate ./internal/pysrc) runs it
// with the Python duet embeds, so that the bytecode is that interpreter's.
func Precompile() ([]byte, error) {
	files, err := moduleFiles()
	if err != nil {
		return nil, err
	}
	dump, err := pygi.Eval(precompileFunc, nil)
	if err != nil {
		return nil, err
	}
	defer dump.Close()
	var b bytes.Buffer
	b.WriteString(precompiledHeader)
	for _, f := range files {
		name := filename(f.Package, f.Path)
		r, err := dump.Call(f.Source, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Join(f.Package, f.Path), err)
		}
		code, err := pygi.As[[]byte](r)
		r.Close()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s\n%s\n%d\n", name, sourceSum(f.Source), len(code))
		b.Write(code)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// precompileFunc compiles as _duet.exec_module does: no __future__ flags
// inherited, and the optimisation level of a plain python3 (exec_module
// uses an entry only when sys.flags.optimize is 0).
const precompileFunc = `(lambda src, filename: __import__('importlib.util').util.MAGIC_NUMBER +
    __import__('marshal').dumps(compile(src, filename, 'exec', 0, True, 0)))`

// Stale lists the files of the Modules linked in that code.bin has
// no usable entry for: missing, made from another source, or made for
// another bytecode than this interpreter's (for widgets' test, which links
// every package).
func Stale() ([]string, error) {
	files, err := moduleFiles()
	if err != nil {
		return nil, err
	}
	magic, err := pygi.Eval("__import__('importlib.util').util.MAGIC_NUMBER", nil)
	if err != nil {
		return nil, err
	}
	want, err := pygi.As[[]byte](magic)
	magic.Close()
	if err != nil {
		return nil, err
	}
	precompiledIndex()
	if err := precompiled.err; err != nil {
		return nil, err // its every file would be listed: say why
	}
	var stale []string
	for _, f := range files {
		code := precompiledCode(filename(f.Package, f.Path), f.Source)
		if !bytes.HasPrefix(code, want) {
			stale = append(stale, path.Join(f.Package, f.Path))
		}
	}
	return stale, nil
}
