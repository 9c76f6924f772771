// Package widgets bridges gotk4 and PyGObject: one GObject, seen from Go and
// from Python at once, through the same pointer (PyGObject's C API in one
// direction, the wrapper's GObject pointer in the other).
package widgets
