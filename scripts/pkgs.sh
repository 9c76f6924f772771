#!/usr/bin/env bash
# Lists the module's packages whose tests do (gtk) or do not (nogtk) link
# gotk4, counting what the test binary links (a test that imports package
# app links gotk4 through it). The nogtk ones build in seconds and are
# tested with -race; gotk4's interning breaks under the race detector's
# pointer checks (checkptr).
set -euo pipefail
want=${1:?usage: pkgs.sh gtk|nogtk}
go list -test -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
  awk -v want="$want" '
    {
      base = $1
      sub(/\.test$/, "", base)
      sub(/_test$/, "", base)
      seen[base] = 1
      for (i = 2; i <= NF; i++) if (index($i, "github.com/diamondburned/gotk4") == 1) gtk[base] = 1
    }
    END {
      for (p in seen) if ((want == "gtk") == (p in gtk)) print p
    }' | sort
