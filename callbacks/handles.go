package callbacks

import (
	"sync"
	"sync/atomic"
)

// handleTable maps the integer handles Python holds to entries. A handle is
// an index and a generation, never a Go pointer: a capsule can outlive
// anything, and a stale handle (the broken ownership mode) finds nothing.
// Lookups, on every call from Python, take no lock: one atomic load of the
// table and one of the slot.
type handleTable struct {
	mu    sync.Mutex
	slots atomic.Pointer[[]atomic.Pointer[entry]]
	gens  []uint32 // generation of each slot; under mu
	free  []uint32 // free slot indices; under mu
}

func (t *handleTable) add(e *entry) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s []atomic.Pointer[entry]
	if p := t.slots.Load(); p != nil {
		s = *p
	}
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if len(t.gens) == len(s) {
			// Grow by copying: readers holding the old table still find
			// every live entry in it (a slot changes only when its own
			// handle is released, which a caller of that handle cannot race).
			// The stored slice header is a variable of this branch: had
			// it been s's address, every add would put s on the heap.
			grown := make([]atomic.Pointer[entry], max(64, 2*len(s)))
			for j := range s {
				grown[j].Store(s[j].Load())
			}
			s = grown
			published := grown
			t.slots.Store(&published)
		}
		i = uint32(len(t.gens))
		t.gens = append(t.gens, 0)
	}
	t.gens[i]++
	e.handle = uintptr(t.gens[i])<<32 | uintptr(i+1)
	s[i].Store(e)
	return e.handle
}

func (t *handleTable) get(h uintptr) *entry {
	p := t.slots.Load()
	i := uint32(h) - 1
	if p == nil || int(i) >= len(*p) {
		return nil
	}
	e := (*p)[i].Load()
	if e == nil || e.handle != h {
		return nil
	}
	return e
}

// remove releases h; false when h was not live (already released).
func (t *handleTable) remove(h uintptr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.slots.Load()
	i := uint32(h) - 1
	if p == nil || int(i) >= len(*p) {
		return false
	}
	e := (*p)[i].Load()
	if e == nil || e.handle != h {
		return false
	}
	(*p)[i].Store(nil)
	t.free = append(t.free, i)
	return true
}

// each calls fn for every live entry (a snapshot: entries added or removed
// meanwhile may or may not be seen).
func (t *handleTable) each(fn func(*entry)) {
	p := t.slots.Load()
	if p == nil {
		return
	}
	for i := range *p {
		if e := (*p)[i].Load(); e != nil {
			fn(e)
		}
	}
}
