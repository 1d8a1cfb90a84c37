package qcow2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	magic = 0x514649fb // "QFI\xfb"

	incompatDirty      = 1 << 0
	incompatCorrupt    = 1 << 1
	incompatDataFile   = 1 << 2
	incompatCompress   = 1 << 3
	incompatExtendedL2 = 1 << 4
	incompatKnown      = incompatDirty | incompatCorrupt | incompatDataFile | incompatCompress | incompatExtendedL2

	minClusterBits = 9
	maxClusterBits = 21

	maxL1Entries = 32 << 20 / 8 // QEMU's QCOW_MAX_L1_SIZE
)

// header holds the fields of the qcow2 header this package uses.
type header struct {
	version         uint32
	clusterBits     uint32
	clusterSize     int64
	size            int64
	l1Size          uint32
	l1Offset        uint64
	nbSnapshots     uint32
	snapshotsOffset uint64
}

// readHeader reads and validates the image header, refusing what this
// package does not support.
func readHeader(f io.ReaderAt) (*header, error) {
	var b [104]byte
	n, err := f.ReadAt(b[:], 0)
	if n < 72 {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("qcow2: reading header: %w", err)
		}
		return nil, fmt.Errorf("qcow2: not a qcow2 image: file too short (%d bytes)", n)
	}
	be := binary.BigEndian
	if m := be.Uint32(b[0:]); m != magic {
		return nil, fmt.Errorf("qcow2: not a qcow2 image: bad magic %#08x", m)
	}
	h := &header{
		version:         be.Uint32(b[4:]),
		clusterBits:     be.Uint32(b[20:]),
		l1Size:          be.Uint32(b[36:]),
		l1Offset:        be.Uint64(b[40:]),
		nbSnapshots:     be.Uint32(b[60:]),
		snapshotsOffset: be.Uint64(b[64:]),
	}
	if h.version != 2 && h.version != 3 {
		return nil, fmt.Errorf("%w: qcow2 version %d", ErrUnsupported, h.version)
	}
	if h.clusterBits < minClusterBits || h.clusterBits > maxClusterBits {
		return nil, fmt.Errorf("qcow2: invalid cluster_bits %d", h.clusterBits)
	}
	h.clusterSize = 1 << h.clusterBits
	size := be.Uint64(b[24:])
	if size > 1<<62 {
		return nil, fmt.Errorf("qcow2: invalid virtual size %d", size)
	}
	h.size = int64(size)
	if be.Uint64(b[8:]) != 0 {
		return nil, fmt.Errorf("%w: backing file", ErrUnsupported)
	}
	if c := be.Uint32(b[32:]); c != 0 {
		return nil, fmt.Errorf("%w: encryption (crypt_method %d)", ErrUnsupported, c)
	}
	if h.version == 3 {
		if n < len(b) {
			return nil, fmt.Errorf("qcow2: truncated version 3 header (%d bytes)", n)
		}
		if hl := be.Uint32(b[100:]); hl < 104 {
			return nil, fmt.Errorf("qcow2: invalid header_length %d", hl)
		}
		if err := checkIncompat(be.Uint64(b[72:])); err != nil {
			return nil, err
		}
	}
	if h.l1Size > maxL1Entries {
		return nil, fmt.Errorf("qcow2: L1 table too large (%d entries)", h.l1Size)
	}
	return h, nil
}

// checkIncompat refuses incompatible features this package cannot read.
func checkIncompat(in uint64) error {
	switch {
	case in&incompatCorrupt != 0:
		return errors.New("qcow2: image is marked corrupt")
	case in&incompatDataFile != 0:
		return fmt.Errorf("%w: external data file", ErrUnsupported)
	case in&incompatExtendedL2 != 0:
		return fmt.Errorf("%w: extended L2 entries", ErrUnsupported)
	case in&^uint64(incompatKnown) != 0:
		return fmt.Errorf("%w: unknown incompatible features %#x", ErrUnsupported, in&^uint64(incompatKnown))
	}
	return nil
}
