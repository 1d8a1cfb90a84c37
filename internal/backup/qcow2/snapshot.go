package qcow2

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

const (
	maxSnapshots      = 65536 // QEMU's QCOW_MAX_SNAPSHOTS
	maxSnapshotExtra  = 1024  // QEMU's QCOW_MAX_SNAPSHOT_EXTRA_DATA
	snapshotFixedSize = 40
)

// SnapshotInfo describes one internal snapshot in the snapshot table.
type SnapshotInfo struct {
	ID   string
	Name string
	// VirtualSize is the disk size when the snapshot was taken (from the
	// entry's extra data, or the header's size for old entries without it).
	VirtualSize int64
	// Date is when the snapshot was taken.
	Date time.Time
	// VMStateSize is the size of the saved VM state (0 for disk-only).
	VMStateSize int64

	l1Offset uint64
	l1Size   uint32
}

// Snapshots lists the internal snapshots of the image in table order.
func Snapshots(f io.ReaderAt) ([]SnapshotInfo, error) {
	h, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	return readSnapshots(f, h)
}

// ReadSnapshot reads the mapping of the internal snapshot called name: its
// own L1 table, and its virtual size from the snapshot's extra data when
// present, else the header's. A missing snapshot is [ErrNoSnapshot].
func ReadSnapshot(f io.ReaderAt, name string) (*Map, error) {
	h, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	snaps, err := readSnapshots(f, h)
	if err != nil {
		return nil, err
	}
	s, err := findSnapshot(snaps, name)
	if err != nil {
		return nil, err
	}
	return readMap(f, h, s.l1Offset, s.l1Size, s.VirtualSize, nil)
}

// findSnapshot returns the single snapshot called name.
func findSnapshot(snaps []SnapshotInfo, name string) (*SnapshotInfo, error) {
	var found *SnapshotInfo
	for i := range snaps {
		if snaps[i].Name != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("qcow2: snapshot name %q is ambiguous (IDs %s and %s)", name, found.ID, snaps[i].ID)
		}
		found = &snaps[i]
	}
	if found == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoSnapshot, name)
	}
	return found, nil
}

// readSnapshots parses the snapshot table. Entries are variable-length and
// each starts at an 8-byte aligned offset.
func readSnapshots(f io.ReaderAt, h *header) ([]SnapshotInfo, error) {
	if h.nbSnapshots == 0 {
		return nil, nil
	}
	if h.nbSnapshots > maxSnapshots {
		return nil, fmt.Errorf("qcow2: too many snapshots (%d)", h.nbSnapshots)
	}
	if h.snapshotsOffset == 0 || h.snapshotsOffset%uint64(h.clusterSize) != 0 || h.snapshotsOffset > 1<<62 {
		return nil, fmt.Errorf("qcow2: invalid snapshot table offset %#x", h.snapshotsOffset)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, int64(h.snapshotsOffset), 1<<62), 64<<10)
	be := binary.BigEndian
	snaps := make([]SnapshotInfo, 0, h.nbSnapshots)
	var fixed [snapshotFixedSize]byte
	pad := 0 // padding of the previous entry; the last one's may be absent
	for i := range int(h.nbSnapshots) {
		if _, err := r.Discard(pad); err != nil {
			return nil, fmt.Errorf("qcow2: reading snapshot entry %d: %w", i, err)
		}
		if _, err := io.ReadFull(r, fixed[:]); err != nil {
			return nil, fmt.Errorf("qcow2: reading snapshot entry %d: %w", i, err)
		}
		idSize, nameSize := int(be.Uint16(fixed[12:])), int(be.Uint16(fixed[14:]))
		extraSize := int(be.Uint32(fixed[36:]))
		if extraSize > maxSnapshotExtra {
			return nil, fmt.Errorf("qcow2: snapshot entry %d: extra data too large (%d bytes)", i, extraSize)
		}
		entryLen := snapshotFixedSize + extraSize + idSize + nameSize
		pad = (8 - entryLen%8) % 8
		rest := make([]byte, extraSize+idSize+nameSize)
		if _, err := io.ReadFull(r, rest); err != nil {
			return nil, fmt.Errorf("qcow2: reading snapshot entry %d: %w", i, err)
		}
		extra := rest[:extraSize]
		s := SnapshotInfo{
			ID:          string(rest[extraSize : extraSize+idSize]),
			Name:        string(rest[extraSize+idSize : extraSize+idSize+nameSize]),
			VirtualSize: h.size,
			Date:        time.Unix(int64(be.Uint32(fixed[16:])), int64(be.Uint32(fixed[20:]))),
			VMStateSize: int64(be.Uint32(fixed[32:])),
			l1Offset:    be.Uint64(fixed[0:]),
			l1Size:      be.Uint32(fixed[8:]),
		}
		if len(extra) >= 8 {
			if v := be.Uint64(extra[0:]); v <= 1<<62 && v != 0 {
				s.VMStateSize = int64(v)
			}
		}
		if len(extra) >= 16 {
			v := be.Uint64(extra[8:])
			if v > 1<<62 {
				return nil, fmt.Errorf("qcow2: snapshot %q: invalid disk size %d", s.Name, v)
			}
			s.VirtualSize = int64(v)
		}
		if s.l1Size > maxL1Entries {
			return nil, fmt.Errorf("qcow2: snapshot %q: L1 table too large (%d entries)", s.Name, s.l1Size)
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}
