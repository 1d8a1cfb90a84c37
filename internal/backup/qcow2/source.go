package qcow2

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Source serves a disk at a mark (an internal snapshot), and what changed
// since a previous mark, as cells of a fixed size. Its methods other than
// Close are safe for concurrent use.
type Source struct {
	f        *os.File
	mark     *Map
	prev     *Map // nil: no previous mark, every cell is changed
	cellSize int64
}

// NewSource opens path read-only (without locks; QEMU may be running on
// it), reads the mapping of snapshot mark and, when prev != "", of snapshot
// prev. A missing mark or prev is [ErrNoSnapshot] (for prev the caller then
// does a full backup). cellSize must be a positive multiple of the image's
// cluster size.
func NewSource(path, mark, prev string, cellSize int64) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("qcow2: %w", err)
	}
	s, err := newSource(f, mark, prev, cellSize)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func newSource(f *os.File, mark, prev string, cellSize int64) (*Source, error) {
	h, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	if cellSize <= 0 || cellSize%h.clusterSize != 0 {
		return nil, fmt.Errorf("qcow2: cell size %d is not a positive multiple of the cluster size %d", cellSize, h.clusterSize)
	}
	snaps, err := readSnapshots(f, h)
	if err != nil {
		return nil, err
	}
	cache := make(map[uint64][]uint64)
	s := &Source{f: f, cellSize: cellSize}
	if s.mark, err = snapshotMap(f, h, snaps, mark, cache); err != nil {
		return nil, err
	}
	if prev != "" {
		if s.prev, err = snapshotMap(f, h, snaps, prev, cache); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func snapshotMap(f io.ReaderAt, h *header, snaps []SnapshotInfo, name string, cache map[uint64][]uint64) (*Map, error) {
	sn, err := findSnapshot(snaps, name)
	if err != nil {
		return nil, err
	}
	m, err := readMap(f, h, sn.l1Offset, sn.l1Size, sn.VirtualSize, cache)
	if err != nil {
		return nil, fmt.Errorf("snapshot %q: %w", name, err)
	}
	return m, nil
}

// Close closes the image file.
func (s *Source) Close() error { return s.f.Close() }

// Size returns the mark's virtual size in bytes.
func (s *Source) Size() int64 { return s.mark.VirtualSize }

// CellSize returns the cell size in bytes.
func (s *Source) CellSize() int64 { return s.cellSize }

// Cells returns the number of cells, ceil(Size / CellSize).
func (s *Source) Cells() int { return int((s.Size() + s.cellSize - 1) / s.cellSize) }

// cellRange returns the byte range of cell i within the mark.
func (s *Source) cellRange(i int) (start, end int64) {
	start = int64(i) * s.cellSize
	return start, min(start+s.cellSize, s.Size())
}

// Changed reports whether any cluster of cell i differs between mark and
// prev: a different host offset or zero-ness, or the cell reaching beyond
// prev's virtual size. Without prev every cell is changed.
func (s *Source) Changed(i int) bool {
	if s.prev == nil || i < 0 || i >= s.Cells() {
		return true
	}
	start, end := s.cellRange(i)
	if end > s.prev.VirtualSize {
		return true
	}
	cs := s.mark.ClusterSize
	perL2 := int64(1) << s.mark.l2Bits
	for c, last := start/cs, (end+cs-1)/cs; c < last; {
		next := min((c/perL2+1)*perL2, last)
		a, b := s.mark.table(c), s.prev.table(c)
		if len(a) == 0 && len(b) == 0 || len(a) > 0 && len(b) > 0 && &a[0] == &b[0] {
			c = next // the same L2 table (or none) in both
			continue
		}
		for ; c < next; c++ {
			if !sameContent(s.mark.entry(c), s.prev.entry(c)) {
				return true
			}
		}
	}
	return false
}

// Empty reports whether cell i reads as zeros at the mark by its mapping
// alone (every cluster unallocated or zero): it need not be read.
func (s *Source) Empty(i int) bool {
	if i < 0 || i >= s.Cells() {
		return false
	}
	start, end := s.cellRange(i)
	cs := s.mark.ClusterSize
	for c := start / cs; c < (end+cs-1)/cs; c++ {
		if _, z := s.mark.Cluster(c); !z {
			return false
		}
	}
	return true
}

// ReadCell fills buf with cell i's content at the mark and returns its
// length n (CellSize, except for a short last cell). Data clusters are read
// at their host offsets, zero or unallocated clusters read as zeros. zero
// reports that the whole cell reads as zeros, from the mapping or from the
// data. A compressed cluster is [ErrUnsupported].
func (s *Source) ReadCell(i int, buf []byte) (n int, zero bool, err error) {
	if i < 0 || i >= s.Cells() {
		return 0, false, fmt.Errorf("qcow2: cell %d out of range [0, %d)", i, s.Cells())
	}
	start, end := s.cellRange(i)
	n = int(end - start)
	if len(buf) < n {
		return 0, false, fmt.Errorf("qcow2: buffer of %d bytes too small for cell %d (%d bytes)", len(buf), i, n)
	}
	b := buf[:n]
	cs := s.mark.ClusterSize
	zero = true
	// Coalesce clusters that are contiguous on the host into one read.
	var runHost, runLen, runAt int64
	flush := func() error {
		if runLen == 0 {
			return nil
		}
		p := b[runAt : runAt+runLen]
		if err := s.readAt(p, runHost); err != nil {
			return err
		}
		zero = zero && allZero(p)
		runLen = 0
		return nil
	}
	for at := int64(0); at < int64(n); at += cs {
		c := (start + at) / cs
		l := min(cs, int64(n)-at)
		host, z := s.mark.Cluster(c)
		switch {
		case host < 0:
			return 0, false, fmt.Errorf("%w: compressed cluster (guest offset %#x)", ErrUnsupported, c*cs)
		case z:
			if err := flush(); err != nil {
				return 0, false, err
			}
			clear(b[at : at+l])
		case runLen > 0 && runHost+runLen == host:
			runLen += l
		default:
			if err := flush(); err != nil {
				return 0, false, err
			}
			runHost, runLen, runAt = host, l, at
		}
	}
	if err := flush(); err != nil {
		return 0, false, err
	}
	return n, zero, nil
}

// readAt reads p at host offset off; bytes past the end of the file read
// as zeros, as in QEMU.
func (s *Source) readAt(p []byte, off int64) error {
	n, err := s.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		clear(p[n:])
		return nil
	}
	if err != nil {
		return fmt.Errorf("qcow2: reading host offset %#x: %w", off, err)
	}
	return nil
}

var zeros [64 << 10]byte

// allZero reports whether p holds only zero bytes.
func allZero(p []byte) bool {
	for len(p) > 0 {
		k := min(len(p), len(zeros))
		if !bytes.Equal(p[:k], zeros[:k]) {
			return false
		}
		p = p[k:]
	}
	return true
}
