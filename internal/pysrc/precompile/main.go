// Command precompile writes internal/pysrc's precompiled/code.bin: every Python
// file duet's library embeds, compiled by the Python duet embeds (run by
// go generate ./internal/pysrc; see pysrc's precompiled.go).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	_ "github.com/duet-gtk/duet/app" // every library package linked: all their Python listed
	_ "github.com/duet-gtk/duet/forensics"
	"github.com/duet-gtk/duet/internal/pysrc"
	"github.com/duet-gtk/duet/pygi"
)

func main() {
	out := flag.String("o", "precompiled/code.bin", "the file to write")
	flag.Parse()
	data, err := pysrc.Precompile()
	if err == nil {
		err = write(*out, data)
	}
	if ferr := pygi.Finalize(context.Background()); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "precompile:", err)
		os.Exit(1)
	}
}

// write replaces path's contents with data, and leaves it alone (its
// time too) when they are the same. A new file is written beside it and
// renamed over it: a run cut short leaves the old file or the new one,
// never half of one. It keeps a regular file's mode; anything else there
// (a symbolic link, which go:embed leaves out) is replaced by a file.
func write(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			return nil
		}
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".code-*.bin")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
