package harness

import (
	"encoding/binary"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/duet-gtk/duet/internal/diag"
)

// The black box is a small file the child maps into memory and writes its
// iteration count and last operations to, as it goes. A crash can come
// between two progress samples; the black box still holds the state at the
// moment of death, for the parent to read afterwards.
const (
	boxSlots    = 16
	boxSlotSize = 240
	boxSize     = 16 + boxSlots*boxSlotSize
	boxEnv      = "DUET_STRESS_BLACKBOX"
)

type blackBox struct {
	mem []byte // MAP_SHARED: every write lands in the file
}

func openBlackBox(path string) (*blackBox, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, boxSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &blackBox{mem: mem}, nil
}

// Sound: mem is a page-aligned mapping (so both words are 8-byte aligned
// for the atomics) that lives until the process exits.
func (b *blackBox) iter() *int64  { return (*int64)(unsafe.Pointer(&b.mem[0])) }
func (b *blackBox) count() *int64 { return (*int64)(unsafe.Pointer(&b.mem[8])) }

func (b *blackBox) addIter(n int64) { atomic.AddInt64(b.iter(), n) }

// op writes one operation; the caller serialises calls.
func (b *blackBox) op(s string) {
	n := atomic.LoadInt64(b.count())
	slot := b.mem[16+int(n%boxSlots)*boxSlotSize:][:boxSlotSize]
	l := copy(slot[2:], s)
	binary.LittleEndian.PutUint16(slot, uint16(l))
	atomic.StoreInt64(b.count(), n+1)
}

// readBlackBox reads what a (dead) child left.
func readBlackBox(path string) (iter int64, ops []string) {
	mem, err := os.ReadFile(path)
	if err != nil || len(mem) < boxSize {
		return 0, nil
	}
	iter = int64(binary.LittleEndian.Uint64(mem[0:]))
	n := int64(binary.LittleEndian.Uint64(mem[8:]))
	for i := max(0, n-boxSlots); i < n; i++ {
		slot := mem[16+int(i%boxSlots)*boxSlotSize:][:boxSlotSize]
		l := min(int(binary.LittleEndian.Uint16(slot)), boxSlotSize-2)
		ops = append(ops, string(slot[2:2+l]))
	}
	return iter, ops
}

func newBlackBoxFile() (string, error) {
	dir, err := diag.PrivateDir("stress") // never the shared /tmp
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "box-")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return f.Name(), f.Truncate(boxSize)
}
