package lifetime

import "sync"

// Connections: which Go callbacks are connected to which GObject's signals,
// under which handler ids. Every connect path records here, through
// package callbacks (its own Connect, and PyGObject's connect and
// connect_after, connect_object and connect_object_after, which it wraps);
// widgets reads the records when a window is destroyed (to disconnect the
// Go handlers of every widget in it) and callbacks.Cycles matches them with
// the GObjects those callbacks use.
//
// A record goes when its GObject is finalised (the watcher set with
// SetConnectionWatcher says so), or when its callback is freed (it can be
// connected nowhere then). GLib never reuses a handler id, so a record
// left for an address that a new object took is harmless: disconnecting
// its id finds nothing connected.
var connections struct {
	mu      sync.Mutex
	objs    map[uintptr]map[uint64]uintptr // GObject address -> handler id -> callback handle
	byCb    map[uintptr]map[uintptr]bool   // callback handle -> GObject addresses
	watcher func(gobj uintptr)
}

// SetConnectionWatcher sets what NoteConnection calls for each GObject
// that gets its first record, while the object is alive (the caller of
// NoteConnection holds it): package widgets watches it for finalisation
// and calls ForgetObject then.
func SetConnectionWatcher(f func(gobj uintptr)) {
	connections.mu.Lock()
	connections.watcher = f
	connections.mu.Unlock()
}

// NoteConnection records that callback handle is connected, as handler id,
// to a signal of the GObject at gobj. The caller holds the object.
func NoteConnection(gobj, handle uintptr, id uint64) {
	if gobj == 0 || handle == 0 || id == 0 {
		return
	}
	connections.mu.Lock()
	if connections.objs == nil {
		connections.objs = map[uintptr]map[uint64]uintptr{}
		connections.byCb = map[uintptr]map[uintptr]bool{}
	}
	ids := connections.objs[gobj]
	first := ids == nil
	if first {
		ids = map[uint64]uintptr{}
		connections.objs[gobj] = ids
	}
	ids[id] = handle
	if connections.byCb[handle] == nil {
		connections.byCb[handle] = map[uintptr]bool{}
	}
	connections.byCb[handle][gobj] = true
	w := connections.watcher
	connections.mu.Unlock()
	if first && w != nil {
		w(gobj)
	}
}

// TakeConnections removes the records of the GObject at gobj and returns
// their handler ids, for disconnecting.
func TakeConnections(gobj uintptr) []uint64 {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	ids := connections.objs[gobj]
	if ids == nil {
		return nil
	}
	out := make([]uint64, 0, len(ids))
	for id, h := range ids {
		out = append(out, id)
		forgetPairLocked(h, gobj)
	}
	delete(connections.objs, gobj)
	return out
}

// ForgetObject drops the records of a finalised GObject.
func ForgetObject(gobj uintptr) {
	TakeConnections(gobj)
}

// ForgetConnection drops the record of handler id on the GObject at gobj
// (Disconnect: the callback may live on elsewhere).
func ForgetConnection(gobj uintptr, id uint64) {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	ids := connections.objs[gobj]
	h, ok := ids[id]
	if !ok {
		return
	}
	delete(ids, id)
	still := false
	for _, other := range ids {
		still = still || other == h
	}
	if !still {
		forgetPairLocked(h, gobj)
	}
	if len(ids) == 0 {
		delete(connections.objs, gobj)
	}
}

// ForgetCallback drops the records of a callback that was freed.
func ForgetCallback(handle uintptr) {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	for gobj := range connections.byCb[handle] {
		ids := connections.objs[gobj]
		for id, h := range ids {
			if h == handle {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(connections.objs, gobj)
		}
	}
	delete(connections.byCb, handle)
}

func forgetPairLocked(handle, gobj uintptr) {
	if m := connections.byCb[handle]; m != nil {
		delete(m, gobj)
		if len(m) == 0 {
			delete(connections.byCb, handle)
		}
	}
}

// Connected reports whether callback handle is recorded as connected to
// gobj.
func Connected(gobj, handle uintptr) bool {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	return connections.byCb[handle][gobj]
}

// ConnectionCount is how many connections are recorded (tests).
func ConnectionCount() int {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	n := 0
	for _, ids := range connections.objs {
		n += len(ids)
	}
	return n
}
