package lifetime

import "sync"

// Connections: which Go callbacks are connected to which GObject's signals
// (recorded by widgets' connect hook, whichever way they were connected).
// callbacks.Cycles matches them with the GObjects those callbacks use.
var connections struct {
	mu sync.Mutex
	m  map[uintptr]map[uintptr]bool // GObject address -> callback handles
}

// NoteConnection records that callback handle is connected to a signal of
// the GObject at gobj.
func NoteConnection(gobj, handle uintptr) {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	if connections.m == nil {
		connections.m = map[uintptr]map[uintptr]bool{}
	}
	if connections.m[gobj] == nil {
		connections.m[gobj] = map[uintptr]bool{}
	}
	connections.m[gobj][handle] = true
}

// ForgetObject drops the records of a finalised GObject.
func ForgetObject(gobj uintptr) {
	connections.mu.Lock()
	delete(connections.m, gobj)
	connections.mu.Unlock()
}

// Connected reports whether callback handle was connected to gobj.
func Connected(gobj, handle uintptr) bool {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	return connections.m[gobj][handle]
}
