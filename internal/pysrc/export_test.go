package pysrc

import "github.com/duet-gtk/duet/pygi"

// PrecompileForTest puts m's file, compiled now, into the precompiled
// index, as made from its source or (stale) from another; restore puts
// back what was there.
func PrecompileForTest(m *Module, stale bool) (restore func(), err error) {
	src, err := sourceOf(m)
	if err != nil {
		return nil, err
	}
	dump, err := pygi.Eval(precompileFunc, nil)
	if err != nil {
		return nil, err
	}
	defer dump.Close()
	name := filename(m.files.pkg, m.file)
	r, err := dump.Call(src, name)
	if err != nil {
		return nil, err
	}
	code, err := pygi.As[[]byte](r)
	r.Close()
	if err != nil {
		return nil, err
	}
	sum := sourceSum(src)
	if stale {
		sum = sourceSum(src + "\n# edited since\n")
	}
	return putEntry(name, compiled{sum: sum, code: string(code)}), nil
}

// putEntry puts e into the precompiled index under name; restore puts
// back what was there.
func putEntry(name string, e compiled) (restore func()) {
	precompiledIndex()
	precompiled.mu.Lock()
	defer precompiled.mu.Unlock()
	old, had := precompiled.index[name]
	precompiled.index[name] = e
	return func() {
		precompiled.mu.Lock()
		defer precompiled.mu.Unlock()
		if had {
			precompiled.index[name] = old
		} else {
			delete(precompiled.index, name)
		}
	}
}

// sourceOf is m's embedded source.
func sourceOf(m *Module) (string, error) {
	files, err := moduleFiles()
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if f.Package == m.files.pkg && f.Path == m.file {
			return f.Source, nil
		}
	}
	return "", nil
}

// DamageForTest puts into the precompiled index, for m's file, an entry
// whose source sum is right and whose code is code (MAGIC_NUMBER first,
// then whatever bytes); restore puts back what was there.
func DamageForTest(m *Module, code string) (restore func()) {
	src, _ := sourceOf(m)
	return putEntry(filename(m.files.pkg, m.file), compiled{sum: sourceSum(src), code: code})
}
