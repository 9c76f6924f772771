package lifetime

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// resetConnections empties the registry for a test and restores it after.
func resetConnections(t *testing.T) *[]uintptr {
	t.Helper()
	connections.mu.Lock()
	saved := connections.objs
	savedCb := connections.byCb
	savedW := connections.watcher
	connections.objs, connections.byCb = nil, nil
	watched := &[]uintptr{}
	connections.watcher = func(gobj uintptr) { *watched = append(*watched, gobj) }
	connections.mu.Unlock()
	t.Cleanup(func() {
		connections.mu.Lock()
		connections.objs, connections.byCb, connections.watcher = saved, savedCb, savedW
		connections.mu.Unlock()
	})
	return watched
}

func TestConnectionRecords(t *testing.T) {
	const a, b = uintptr(0xa0), uintptr(0xb0) // GObjects
	const f, g = uintptr(1), uintptr(2)       // callbacks

	t.Run("a callback freed takes all its records", func(t *testing.T) {
		watched := resetConnections(t)
		NoteConnection(a, f, 10)
		NoteConnection(a, f, 11)
		NoteConnection(b, f, 12)
		NoteConnection(a, g, 13)
		assert.Equal(t, 4, ConnectionCount())
		assert.Equal(t, []uintptr{a, b}, *watched, "watched once per object")
		ForgetCallback(f)
		assert.Equal(t, 1, ConnectionCount())
		assert.False(t, Connected(a, f))
		assert.False(t, Connected(b, f))
		assert.True(t, Connected(a, g))
		assert.Equal(t, []uint64{13}, TakeConnections(a))
		assert.Zero(t, ConnectionCount())
		assert.False(t, Connected(a, g))
	})

	t.Run("one record per handler id", func(t *testing.T) {
		resetConnections(t)
		NoteConnection(a, f, 10)
		NoteConnection(a, f, 10)
		assert.Equal(t, 1, ConnectionCount())
		NoteConnection(a, g, 10) // the id now runs g
		assert.Equal(t, 1, ConnectionCount())
		assert.False(t, Connected(a, f))
		assert.True(t, Connected(a, g))
	})

	t.Run("a disconnect drops one record", func(t *testing.T) {
		watched := resetConnections(t)
		NoteConnection(a, f, 10)
		NoteConnection(a, f, 11)
		ForgetConnection(a, 10)
		assert.True(t, Connected(a, f), "still connected as 11")
		ForgetConnection(a, 99) // never connected
		assert.Equal(t, 1, ConnectionCount())
		ForgetConnection(a, 11)
		assert.False(t, Connected(a, f))
		assert.Zero(t, ConnectionCount())
		NoteConnection(a, f, 12)
		assert.Equal(t, []uintptr{a, a}, *watched, "watched again once its records had all gone")
	})

	t.Run("an object's records taken, its callbacks connected elsewhere stay", func(t *testing.T) {
		resetConnections(t)
		NoteConnection(a, f, 10)
		NoteConnection(b, f, 11)
		NoteConnection(a, g, 12)
		ids := TakeConnections(a)
		slices.Sort(ids)
		assert.Equal(t, []uint64{10, 12}, ids)
		assert.Nil(t, TakeConnections(a))
		assert.True(t, Connected(b, f))
		assert.False(t, Connected(a, f))
		ForgetObject(b)
		assert.Zero(t, ConnectionCount())
		connections.mu.Lock()
		defer connections.mu.Unlock()
		assert.Empty(t, connections.byCb, "nothing left behind")
		assert.Empty(t, connections.objs)
	})
}

// A connection made and dropped again and again, by any of the ways a
// record goes, allocates nothing once warm: emptied lists' arrays are
// reused (ForgetCallback and TakeConnections dropped theirs).
func TestConnectionRecordsReuseTheirArrays(t *testing.T) {
	const gobj, handle = 0x1000, 0x2000
	for _, c := range []struct {
		name string
		drop func(id uint64)
	}{
		{"ForgetConnection", func(id uint64) { ForgetConnection(gobj, id) }},
		{"ForgetCallback", func(uint64) { ForgetCallback(handle) }},
		{"ForgetObject then ForgetCallback", func(uint64) { ForgetObject(gobj); ForgetCallback(handle) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := uint64(1)
			allocs := testing.AllocsPerRun(1000, func() {
				NoteConnection(gobj, handle, id)
				c.drop(id)
				id++
			})
			assert.Zero(t, allocs)
			assert.Zero(t, ConnectionCount())
		})
	}
}
