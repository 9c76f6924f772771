// Command precompile writes internal/pysrc's precompiled/code.bin: every Python
// file duet's library embeds, compiled by the Python duet embeds (run by
// go generate ./internal/pysrc; see pysrc's precompiled.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

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
		err = os.WriteFile(*out, data, 0o644)
	}
	if ferr := pygi.Finalize(context.Background()); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "precompile:", err)
		os.Exit(1)
	}
}
