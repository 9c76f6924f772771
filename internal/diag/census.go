package diag

// Sources of the live census (package forensics reads them): packages
// that know what lives set them at init; unset, they read as nil.
var (
	// CallbackCensus lists the live callbacks, most numerous first
	// (package callbacks).
	CallbackCensus Source[[]Live]
	// GObjectCensus counts the GObjects duet sees by type name (package
	// widgets: its tracked and watched objects).
	GObjectCensus Source[map[string]int]
)

// A Live is a group of callbacks alive now with the same name and
// creation site.
type Live struct {
	Name, Site string
	Count      int
}
