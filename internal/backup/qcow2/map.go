package qcow2

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Bits of L1 and L2 entries.
const (
	offsetMask     = 0x00fffffffffffe00 // host offset, bits 9-55
	copiedFlag     = 1 << 63            // refcount is exactly one; ignored
	compressedFlag = 1 << 62            // L2: compressed cluster descriptor
	zeroFlag       = 1 << 0             // L2 (version 3): reads as zeros
)

// Map is one snapshot's (or the active image's) guest-cluster → host
// mapping. It is immutable and safe for concurrent use.
type Map struct {
	// ClusterSize is the image's cluster size in bytes.
	ClusterSize int64
	// VirtualSize is the guest disk size in bytes.
	VirtualSize int64

	clusters int64 // ceil(VirtualSize / ClusterSize)
	l2Bits   uint  // log2 of entries per L2 table
	// tables holds one normalized L2 table per L1 index (nil: the whole
	// range is unallocated). Normalized entries have the COPIED flag and,
	// for standard clusters, the reserved bits cleared; the zero flag is
	// kept only for version 3. Tables are shared between maps of one file
	// that reference the same L2 cluster.
	tables [][]uint64
}

// Cluster reports guest cluster i: its host offset when the L2 entry points
// at a host cluster (0 when unallocated; -1 for a compressed cluster, which
// this package does not read), and whether the cluster reads as zeros (zero
// flag, or unallocated: there is no backing file). A zero-flagged cluster
// may still have a preallocated host offset. Clusters beyond the virtual
// size read as zeros.
func (m *Map) Cluster(i int64) (hostOff int64, zero bool) {
	e := m.entry(i)
	if e&compressedFlag != 0 {
		return -1, false
	}
	return int64(e & offsetMask), readsZero(e)
}

// Clusters returns the number of guest clusters, ceil(VirtualSize/ClusterSize).
func (m *Map) Clusters() int64 { return m.clusters }

// entry returns the normalized L2 entry of guest cluster i (0 when
// unallocated or out of range).
func (m *Map) entry(i int64) uint64 {
	if i < 0 || i >= m.clusters {
		return 0
	}
	t := i >> m.l2Bits
	if t >= int64(len(m.tables)) || m.tables[t] == nil {
		return 0
	}
	return m.tables[t][i&(1<<m.l2Bits-1)]
}

// table returns the normalized L2 table covering guest cluster i.
func (m *Map) table(i int64) []uint64 {
	if t := i >> m.l2Bits; t < int64(len(m.tables)) {
		return m.tables[t]
	}
	return nil
}

// readsZero reports whether a normalized entry reads as zeros.
func readsZero(e uint64) bool {
	return e&compressedFlag == 0 && (e&zeroFlag != 0 || e&offsetMask == 0)
}

// sameContent reports whether two normalized entries of one file are known
// to read the same: both zero, or both pointing at the same host data.
func sameContent(a, b uint64) bool {
	za, zb := readsZero(a), readsZero(b)
	if za || zb {
		return za && zb
	}
	return a == b
}

// normalize masks a raw L2 entry for storage and comparison.
func normalize(raw uint64, v3 bool) uint64 {
	if raw&compressedFlag != 0 {
		return raw &^ copiedFlag
	}
	e := raw & offsetMask
	if v3 {
		e |= raw & zeroFlag
	}
	return e
}

// readMap reads the L1 table at l1Off (l1Size entries) and the L2 tables it
// references, for a disk of vsize bytes. cache, when not nil, shares L2
// tables by host offset between maps of the same file.
func readMap(f io.ReaderAt, h *header, l1Off uint64, l1Size uint32, vsize int64, cache map[uint64][]uint64) (*Map, error) {
	cs := h.clusterSize
	m := &Map{
		ClusterSize: cs,
		VirtualSize: vsize,
		clusters:    (vsize + cs - 1) / cs,
		l2Bits:      uint(h.clusterBits - 3),
	}
	perL2 := int64(1) << m.l2Bits
	need := min((m.clusters+perL2-1)/perL2, int64(l1Size))
	if need == 0 {
		return m, nil
	}
	if l1Off == 0 || l1Off%uint64(cs) != 0 || l1Off > 1<<62 {
		return nil, fmt.Errorf("qcow2: invalid L1 table offset %#x", l1Off)
	}
	l1 := make([]byte, need*8)
	if _, err := f.ReadAt(l1, int64(l1Off)); err != nil {
		return nil, fmt.Errorf("qcow2: reading L1 table at %#x: %w", l1Off, err)
	}
	be := binary.BigEndian
	m.tables = make([][]uint64, need)
	buf := make([]byte, cs)
	for t := range m.tables {
		off := be.Uint64(l1[t*8:]) & offsetMask
		if off == 0 {
			continue
		}
		if off%uint64(cs) != 0 {
			return nil, fmt.Errorf("qcow2: L1 entry %d: unaligned L2 table offset %#x", t, off)
		}
		if tab, ok := cache[off]; ok {
			m.tables[t] = tab
			continue
		}
		if _, err := f.ReadAt(buf, int64(off)); err != nil {
			return nil, fmt.Errorf("qcow2: reading L2 table at %#x: %w", off, err)
		}
		tab := make([]uint64, perL2)
		for j := range tab {
			tab[j] = normalize(be.Uint64(buf[j*8:]), h.version >= 3)
		}
		m.tables[t] = tab
		if cache != nil {
			cache[off] = tab
		}
	}
	return m, nil
}
