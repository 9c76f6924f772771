#!/usr/bin/env bash
# Lists the module's packages whose tests do (gtk) or do not (nogtk) link
# gotk4. The nogtk ones build in seconds and are tested with -race; gotk4's
# interning breaks under the race detector's pointer checks (checkptr).
set -euo pipefail
want=${1:?usage: pkgs.sh gtk|nogtk}
go list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... |
  awk -v want="$want" '{
    gtk = 0
    for (i = 2; i <= NF; i++) if (index($i, "github.com/diamondburned/gotk4") == 1) gtk = 1
    if ((want == "gtk") == gtk) print $1
  }'
