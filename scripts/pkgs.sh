#!/usr/bin/env bash
# Lists the module's packages that do (gtk) or do not (nogtk) link gotk4's
# gtk/v4. The nogtk ones build in seconds and are tested with -race.
set -euo pipefail
want=${1:?usage: pkgs.sh gtk|nogtk}
go list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
  awk -v want="$want" '{
    gtk = 0
    for (i = 2; i <= NF; i++) if ($i == "github.com/diamondburned/gotk4/pkg/gtk/v4") gtk = 1
    if ((want == "gtk") == gtk) print $1
  }'
