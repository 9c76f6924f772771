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
//
// Both sides are maps of small slices, not of maps: a GObject has a few Go
// handlers and a callback is mostly connected once, so a connect and its
// free cost two map entries and two short slices (a map per entry cost
// more than the rest of the connect).
var connections struct {
	mu      sync.Mutex
	objs    map[uintptr][]connection // GObject address -> its recorded handlers
	byCb    map[uintptr][]connection // callback handle -> where it is connected
	watcher func(gobj uintptr)
	// spare holds the short arrays of lists that emptied or went, for
	// lists that begin: a handler connected and dropped again and again
	// (a factory's, a window built anew), whichever way its records go,
	// allocates none.
	spare [][]connection
}

// maxSpare bounds spare; lists longer than spareCap are left to Go's GC.
const maxSpare, spareCap = 256, 4

// connection is one record: handler id on the GObject at gobj runs the
// callback handle (objs leaves gobj out, byCb handle).
type connection struct {
	gobj, handle uintptr
	id           uint64
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
	c := connection{gobj, handle, id}
	connections.mu.Lock()
	if connections.objs == nil {
		connections.objs = map[uintptr][]connection{}
		connections.byCb = map[uintptr][]connection{}
	}
	list := connections.objs[gobj]
	first := len(list) == 0
	// One record per handler id (a connection may be told twice: by the
	// connect and by the hook around PyGObject's connect).
	list, _ = without(list, func(o connection) bool {
		if o.id != id {
			return false
		}
		cbs, _ := without(connections.byCb[o.handle], func(x connection) bool { return x == o })
		store(connections.byCb, o.handle, cbs)
		return true
	})
	connections.objs[gobj] = append(reuse(list), c)
	connections.byCb[handle] = append(reuse(connections.byCb[handle]), c)
	w := connections.watcher
	connections.mu.Unlock()
	if first && w != nil {
		w(gobj)
	}
}

// without returns list without its records that match (their order is
// not kept), and whether any did.
func without(list []connection, match func(connection) bool) ([]connection, bool) {
	found := false
	for i := 0; i < len(list); {
		if match(list[i]) {
			found = true
			list[i] = list[len(list)-1]
			list = list[:len(list)-1]
			continue
		}
		i++
	}
	return list, found
}

// store puts list back under key, deleting the key once it is empty (its
// array kept for reuse: nothing else holds it).
func store(m map[uintptr][]connection, key uintptr, list []connection) {
	if len(list) == 0 {
		delete(m, key)
		keep(list)
	} else {
		m[key] = list
	}
}

// keep offers the array of a list that is gone for reuse.
func keep(list []connection) {
	if c := cap(list); c > 0 && c <= spareCap && len(connections.spare) < maxSpare {
		connections.spare = append(connections.spare, list[:0])
	}
}

// reuse gives a list about to begin a spare array to grow into.
func reuse(list []connection) []connection {
	if cap(list) == 0 {
		if n := len(connections.spare); n > 0 {
			list = connections.spare[n-1]
			connections.spare[n-1] = nil
			connections.spare = connections.spare[:n-1]
		}
	}
	return list
}

// TakeConnections removes the records of the GObject at gobj and returns
// their handler ids, for disconnecting.
func TakeConnections(gobj uintptr) []uint64 { return takeConnections(gobj, true) }

func takeConnections(gobj uintptr, ids bool) []uint64 {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	list := connections.objs[gobj]
	if len(list) == 0 {
		return nil
	}
	var out []uint64
	if ids {
		out = make([]uint64, 0, len(list))
	}
	for _, c := range list {
		if ids {
			out = append(out, c.id)
		}
		cbs, _ := without(connections.byCb[c.handle], func(o connection) bool { return o == c })
		store(connections.byCb, c.handle, cbs)
	}
	delete(connections.objs, gobj)
	keep(list)
	return out
}

// ForgetObject drops the records of a finalised GObject.
func ForgetObject(gobj uintptr) { takeConnections(gobj, false) }

// ForgetConnection drops the record of handler id on the GObject at gobj
// (Disconnect: the callback may live on elsewhere).
func ForgetConnection(gobj uintptr, id uint64) {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	var gone connection
	list, found := without(connections.objs[gobj], func(c connection) bool {
		if c.id == id {
			gone = c
			return true
		}
		return false
	})
	if !found {
		return
	}
	store(connections.objs, gobj, list)
	cbs, _ := without(connections.byCb[gone.handle], func(c connection) bool { return c == gone })
	store(connections.byCb, gone.handle, cbs)
}

// ForgetCallback drops the records of a callback that was freed.
func ForgetCallback(handle uintptr) {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	cbs := connections.byCb[handle]
	for _, c := range cbs {
		list, _ := without(connections.objs[c.gobj], func(o connection) bool { return o == c })
		store(connections.objs, c.gobj, list)
	}
	delete(connections.byCb, handle)
	keep(cbs)
}

// Connected reports whether callback handle is recorded as connected to
// gobj.
func Connected(gobj, handle uintptr) bool {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	for _, c := range connections.byCb[handle] {
		if c.gobj == gobj {
			return true
		}
	}
	return false
}

// ConnectionCount is how many connections are recorded (tests).
func ConnectionCount() int {
	connections.mu.Lock()
	defer connections.mu.Unlock()
	n := 0
	for _, list := range connections.objs {
		n += len(list)
	}
	return n
}
