package images

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// A qcow2 header can make QEMU open other files on the host: a backing
// file (any path, or a json: pseudo-protocol naming anything QEMU can
// open) or an external data file. An imported image is untrusted, so
// bureau reads the header itself, before QEMU ever opens the file as
// qcow2, and refuses anything that is not a self-contained image. The
// layout is QEMU's docs/interop/qcow2.txt; every field is big-endian.

// MaxVirtualSize is the largest disk an imported image may declare. It
// bounds what a desktop's overlay grows to and what converting the image
// may write.
const MaxVirtualSize = 2 << 40 // 2 TiB

const (
	qcow2Magic    = "QFI\xfb"
	qcow2V2Header = 72  // fixed header length of version 2
	qcow2V3Header = 104 // minimum header length of version 3

	// Cluster sizes QEMU accepts: 512 B to 2 MiB. The header, its
	// extensions and the backing file name all lie in the first cluster,
	// so reading 1<<qcow2MaxClusterBits bytes always covers them.
	qcow2MinClusterBits = 9
	qcow2MaxClusterBits = 21

	qcow2MaxL1Bytes       = 32 << 20 // QEMU's QCOW_MAX_L1_SIZE
	qcow2MaxRefTableBytes = 8 << 20  // QEMU's QCOW_MAX_REFTABLE_SIZE
	qcow2MaxSnapshots     = 65536    // QEMU's QCOW_MAX_SNAPSHOTS
	qcow2MaxRefcountOrder = 6
)

// Incompatible feature bits (version 3). A bit QEMU does not know makes it
// refuse the image, so any bit bureau does not know is refused too: a new
// one may change how (or from where) data is read.
const (
	qcow2Dirty         = 1 << 0
	qcow2Corrupt       = 1 << 1
	qcow2ExternalData  = 1 << 2
	qcow2Compression   = 1 << 3
	qcow2ExtendedL2    = 1 << 4
	qcow2KnownIncompat = qcow2Dirty | qcow2Corrupt | qcow2ExternalData | qcow2Compression | qcow2ExtendedL2
)

// Header extension types.
const (
	qcow2ExtEnd           = 0x00000000
	qcow2ExtBackingFormat = 0xe2792aca
	qcow2ExtFeatureNames  = 0x6803f857
	qcow2ExtBitmaps       = 0x23852875
	qcow2ExtEncryption    = 0x0537be77
	qcow2ExtDataFile      = 0x44415441
)

// qcow2Header is what bureau needs from a header it accepted.
type qcow2Header struct {
	Version     uint32
	ClusterBits uint32
	VirtualSize uint64
}

// Messages shared by the header check and qemu-img's second opinion. They
// follow "image: " in what the API answers.
func errBackingFile(name string) error {
	if name == "" {
		return errors.New("has a backing file; imported images must be self-contained")
	}
	return fmt.Errorf("has a backing file (%q); imported images must be self-contained", name)
}

func errDataFile(name string) error {
	if name == "" {
		return errors.New("keeps its data in an external data file; imported images must be self-contained")
	}
	return fmt.Errorf("keeps its data in an external data file (%q); imported images must be self-contained", name)
}

var errEncrypted = errors.New("is encrypted; imported images must not need a key from the host")

// parseQcow2Header checks the qcow2 header at the start of a file of
// fileSize bytes; b holds the file's first bytes, at least its first
// cluster when the file is that long. It only reads b, so it is safe on
// any input, and every error it returns describes what is wrong with the
// image.
func parseQcow2Header(b []byte, fileSize int64) (*qcow2Header, error) {
	if len(b) < qcow2V2Header {
		return nil, fmt.Errorf("truncated qcow2 header: %d bytes", len(b))
	}
	if string(b[:4]) != qcow2Magic {
		return nil, errors.New("not a qcow2 image: bad magic")
	}
	be := binary.BigEndian
	h := &qcow2Header{Version: be.Uint32(b[4:]), ClusterBits: be.Uint32(b[20:]), VirtualSize: be.Uint64(b[24:])}
	if h.Version != 2 && h.Version != 3 {
		return nil, fmt.Errorf("unsupported qcow2 version %d: want 2 or 3", h.Version)
	}

	// What can reach outside the file is checked first, so the message
	// names the most serious problem.
	backingOff, backingLen := be.Uint64(b[8:]), uint64(be.Uint32(b[16:]))
	if backingOff != 0 || backingLen != 0 {
		name := ""
		if backingLen <= 1023 && backingOff <= uint64(len(b)) && backingLen <= uint64(len(b))-backingOff {
			name = string(b[backingOff : backingOff+backingLen])
		}
		return nil, errBackingFile(name)
	}
	if crypt := be.Uint32(b[32:]); crypt != 0 {
		return nil, errEncrypted
	}
	headerLen := uint64(qcow2V2Header)
	var incompat uint64
	refcountOrder := uint32(4) // version 2 has 16-bit refcounts
	if h.Version == 3 {
		if len(b) < qcow2V3Header {
			return nil, fmt.Errorf("truncated qcow2 version 3 header: %d bytes", len(b))
		}
		incompat = be.Uint64(b[72:])
		refcountOrder = be.Uint32(b[96:])
		headerLen = uint64(be.Uint32(b[100:]))
	}
	if incompat&qcow2ExternalData != 0 {
		return nil, errDataFile(qcow2DataFileName(b, headerLen))
	}
	if unknown := incompat &^ qcow2KnownIncompat; unknown != 0 {
		return nil, fmt.Errorf("uses unknown incompatible qcow2 features (bits %#x)", unknown)
	}
	if incompat&qcow2Corrupt != 0 {
		return nil, errors.New("is marked corrupt; repair it with qemu-img check -r all before importing")
	}

	if h.ClusterBits < qcow2MinClusterBits || h.ClusterBits > qcow2MaxClusterBits {
		return nil, fmt.Errorf("qcow2 cluster_bits %d out of range %d..%d", h.ClusterBits, qcow2MinClusterBits, qcow2MaxClusterBits)
	}
	cluster := uint64(1) << h.ClusterBits
	if h.Version == 3 && (headerLen < qcow2V3Header || headerLen > cluster) {
		return nil, fmt.Errorf("qcow2 header length %d out of range %d..%d", headerLen, qcow2V3Header, cluster)
	}
	if fileSize < 0 || uint64(fileSize) < cluster || uint64(len(b)) < cluster {
		return nil, fmt.Errorf("truncated qcow2 image: %d bytes, shorter than its first cluster (%d bytes)", fileSize, cluster)
	}
	size := uint64(fileSize)
	if refcountOrder > qcow2MaxRefcountOrder {
		return nil, fmt.Errorf("qcow2 refcount_order %d over %d", refcountOrder, qcow2MaxRefcountOrder)
	}
	if h.VirtualSize > MaxVirtualSize {
		return nil, fmt.Errorf("virtual size %d bytes is over the %d GiB maximum", h.VirtualSize, MaxVirtualSize>>30)
	}

	// The tables QEMU reads first must be where the header says, inside
	// the file: cheap to check and it catches crafted offsets early.
	l2Entries := cluster / 8
	if incompat&qcow2ExtendedL2 != 0 {
		l2Entries = cluster / 16
	}
	l1Size, l1Off := uint64(be.Uint32(b[36:])), be.Uint64(b[40:])
	perL1 := cluster * l2Entries // bytes of disk one L1 entry maps
	if need := (h.VirtualSize + perL1 - 1) / perL1; l1Size < need {
		return nil, fmt.Errorf("qcow2 L1 table has %d entries, too few for a %d-byte disk (need %d)", l1Size, h.VirtualSize, need)
	}
	if l1Size*8 > qcow2MaxL1Bytes {
		return nil, fmt.Errorf("qcow2 L1 table of %d entries is over QEMU's limit", l1Size)
	}
	if l1Size > 0 {
		if err := tableInFile("L1 table", l1Off, l1Size*8, cluster, size); err != nil {
			return nil, err
		}
	}
	refOff, refClusters := be.Uint64(b[48:]), uint64(be.Uint32(b[56:]))
	if refClusters == 0 || refClusters*cluster > qcow2MaxRefTableBytes {
		return nil, fmt.Errorf("qcow2 refcount table of %d clusters out of range", refClusters)
	}
	if err := tableInFile("refcount table", refOff, refClusters*cluster, cluster, size); err != nil {
		return nil, err
	}
	if nSnap, snapOff := be.Uint32(b[60:]), be.Uint64(b[64:]); nSnap > qcow2MaxSnapshots {
		return nil, fmt.Errorf("qcow2 image claims %d snapshots, over %d", nSnap, qcow2MaxSnapshots)
	} else if nSnap > 0 {
		if err := tableInFile("snapshot table", snapOff, 1, cluster, size); err != nil {
			return nil, err
		}
	}

	if err := checkQcow2Extensions(b[:cluster], headerLen); err != nil {
		return nil, err
	}
	return h, nil
}

// tableInFile wants a cluster-aligned table of n bytes at off, after the
// header cluster and inside a file of size bytes.
func tableInFile(what string, off, n, cluster, size uint64) error {
	if off == 0 || off%cluster != 0 {
		return fmt.Errorf("qcow2 %s at offset %d is not a cluster-aligned offset after the header", what, off)
	}
	if end, carry := bits.Add64(off, n, 0); carry != 0 || end > size {
		return fmt.Errorf("qcow2 %s (%d bytes at offset %d) runs past the end of the %d-byte file", what, n, off, size)
	}
	return nil
}

// checkQcow2Extensions checks the header extensions between the header
// and the end of the first cluster, c. Besides the two refused here,
// QEMU knows the backing file format (meaningless without a backing
// file), the feature name table and bitmaps, all harmless. Unknown types
// are allowed too: QEMU ignores them, and a format change that matters to
// reading comes with an incompatible feature bit, which is checked above.
func checkQcow2Extensions(c []byte, off uint64) error {
	return walkQcow2Extensions(c, off, func(typ uint32, data []byte) error {
		switch typ {
		case qcow2ExtDataFile:
			return errDataFile(printable(data))
		case qcow2ExtEncryption:
			return errEncrypted
		}
		return nil
	})
}

// qcow2DataFileName finds the external data file's name, for the message
// refusing it; "" when it cannot.
func qcow2DataFileName(b []byte, off uint64) string {
	name := ""
	stop := errors.New("found")
	walkQcow2Extensions(b[:min(len(b), 1<<qcow2MaxClusterBits)], off, func(typ uint32, data []byte) error {
		if typ != qcow2ExtDataFile {
			return nil
		}
		name = printable(data)
		return stop
	})
	return name
}

// walkQcow2Extensions calls fn on each header extension in c from off on,
// staying inside c. Each is a type, a length and data padded to 8 bytes;
// type 0 ends the list.
func walkQcow2Extensions(c []byte, off uint64, fn func(typ uint32, data []byte) error) error {
	be := binary.BigEndian
	end := uint64(len(c))
	for off < end {
		if end-off < 8 {
			return fmt.Errorf("truncated qcow2 header extension at offset %d", off)
		}
		typ, n := be.Uint32(c[off:]), uint64(be.Uint32(c[off+4:]))
		if typ == qcow2ExtEnd {
			return nil
		}
		data := off + 8
		if n > end-data {
			return fmt.Errorf("qcow2 header extension %#08x at offset %d: its %d bytes run past the end of the header cluster", typ, off, n)
		}
		if err := fn(typ, c[data:data+n]); err != nil {
			return err
		}
		off = data + ((n + 7) &^ 7)
	}
	return nil
}

// printable shortens a name taken from a file for an error message.
func printable(b []byte) string {
	if len(b) > 256 {
		b = b[:256]
	}
	return string(b)
}
