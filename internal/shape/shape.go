// Package shape holds the Python code that says what a Python GObject
// class offers Go: its own GObject properties, its own signals and its
// public methods with their type hints, and one line of text per member.
// cmd/duetgen generates a typed wrapper from it and writes those lines
// into the wrapper; package widgets computes them again for the class as
// loaded and compares, so that a class edited after its wrapper was
// generated is noticed. One source for both keeps them from drifting
// apart.
package shape

import "embed"

// Source is the module's source (shape.py).
//
//go:embed shape.py
var Source string

// Files holds shape.py, for internal/pysrc.
//
//go:embed shape.py
var Files embed.FS
