package diag

import "sync"

// Sources of the live census (package forensics reads them): packages
// that know what lives set them at init.
var census struct {
	mu        sync.Mutex
	callbacks func() []Live
	gobjects  func() map[string]int
}

// A Live is a group of callbacks alive now with the same name and
// creation site.
type Live struct {
	Name, Site string
	Count      int
}

// SetCallbackCensus sets what lists the live callbacks (package callbacks).
func SetCallbackCensus(f func() []Live) {
	census.mu.Lock()
	census.callbacks = f
	census.mu.Unlock()
}

// SetGObjectCensus sets what counts the GObjects duet sees by type name
// (package widgets: its tracked and watched objects).
func SetGObjectCensus(f func() map[string]int) {
	census.mu.Lock()
	census.gobjects = f
	census.mu.Unlock()
}

// LiveCallbacks lists the live callbacks, most numerous first (nil when
// package callbacks is not linked).
func LiveCallbacks() []Live {
	census.mu.Lock()
	f := census.callbacks
	census.mu.Unlock()
	if f == nil {
		return nil
	}
	return f()
}

// GObjects counts the GObjects duet sees (nil when package widgets is not
// linked).
func GObjects() map[string]int {
	census.mu.Lock()
	f := census.gobjects
	census.mu.Unlock()
	if f == nil {
		return nil
	}
	return f()
}
