// Package pygi embeds CPython (with PyGObject) in a Go program.
//
// # The model
//
// There is one interpreter per process. It starts on first use (or when
// Init is called) on the main OS thread, with Python's own signal handlers
// off because Go owns signals, and the GIL is released as soon as it has
// started. From then on any goroutine may call into Python: every operation
// attaches the calling OS thread to Python (taking the GIL) and detaches it
// again inside a single cgo call, so goroutines never need to think about the
// GIL. Each OS thread keeps the Python thread state it first got, which makes
// attaching cheap (about 100 ns for a whole trivial call). Do runs a batch of
// operations under one attachment; WithoutGIL detaches around a blocking wait
// inside such a batch or inside a callback from Python.
//
// # Who owns what
//
// An *Object owns exactly one strong reference to a Python object. Close
// releases it now (idempotent, exactly once, safe against concurrent use:
// the GIL orders the two, so the other operation either finishes or sees
// ErrClosed). An Object that is simply dropped is released after Go's
// garbage collector finds it unreachable: the GC cleanup only queues the
// reference (it never calls Python), and the queue is drained by the next
// operation or, when the event loop runs, by an idle callback on the loop.
// ReadStats exposes the counts.
//
// # Values
//
// New converts Go values to Python (nil, bools, every integer kind exactly,
// floats, UTF-8 strings, []byte, slices, arrays, maps, pointers, *Object);
// Decode, As and the typed accessors (Int, Uint, Float, Text, Bool, Bytes)
// convert back, refusing anything that would not fit rather than
// truncating it. Containers cross in one cgo call whatever their size.
// Go funcs become Python callables when package callbacks is linked in.
//
// # Errors
//
// A Python exception becomes an *Error with its type, message and formatted
// traceback; ErrClosed, ErrFinalized and ErrConversion report misuse. Nothing
// in this package panics on bad input.
//
// # Shutdown
//
// Finalize refuses new operations, waits for those in flight, drains the
// release queue and runs Py_FinalizeEx on the thread that started Python.
// Afterwards every operation returns ErrFinalized and every release is a
// no-op.
package pygi
