package images

import (
	"encoding/binary"
	"strings"
	"testing"
)

// qcow2File describes a hand-made qcow2 image; the zero value of each
// field takes a valid default, so a test changes only what it is about.
type qcow2File struct {
	version     uint32 // 3
	clusterBits uint32 // 16
	size        uint64 // 128 MiB
	headerLen   uint32 // 104 (version 3)
	backing     string
	crypt       uint32
	incompat    uint64
	exts        []qcow2Ext
	l1Size      *uint32 // enough for size
	l1Off       uint64  // cluster 2
	refOff      uint64  // cluster 1
	truncate    int     // cut the file to this many bytes
}

type qcow2Ext struct {
	typ  uint32
	data []byte
	len  *uint32 // the length field, when it should lie
}

// bytes lays out: header and extensions (and the backing file name) in
// cluster 0, the refcount table in cluster 1, the L1 table in cluster 2.
func (q qcow2File) bytes() []byte {
	be := binary.BigEndian
	version, cb, size, hl := q.version, q.clusterBits, q.size, q.headerLen
	if version == 0 {
		version = 3
	}
	if cb == 0 {
		cb = 16
	}
	if size == 0 {
		size = 128 << 20
	}
	if hl == 0 {
		hl = qcow2V3Header
	}
	if version == 2 {
		hl = qcow2V2Header
	}
	cluster := uint64(1) << cb
	perL1 := cluster * (cluster / 8)
	l1 := uint32((size + perL1 - 1) / perL1)
	if q.l1Size != nil {
		l1 = *q.l1Size
	}
	l1Off, refOff := q.l1Off, q.refOff
	if l1Off == 0 {
		l1Off = 2 * cluster
	}
	if refOff == 0 {
		refOff = cluster
	}
	b := make([]byte, max(3*cluster, 2*cluster+uint64(l1)*8)) // l1Off and refOff may point past it
	copy(b, qcow2Magic)
	be.PutUint32(b[4:], version)
	be.PutUint32(b[20:], cb)
	be.PutUint64(b[24:], size)
	be.PutUint32(b[32:], q.crypt)
	be.PutUint32(b[36:], l1)
	be.PutUint64(b[40:], l1Off)
	be.PutUint64(b[48:], refOff)
	be.PutUint32(b[56:], 1)
	if version == 3 {
		be.PutUint64(b[72:], q.incompat)
		be.PutUint32(b[96:], 4)
		be.PutUint32(b[100:], hl)
	}
	off := uint64(hl)
	for _, e := range q.exts {
		n := uint32(len(e.data))
		if e.len != nil {
			n = *e.len
		}
		be.PutUint32(b[off:], e.typ)
		be.PutUint32(b[off+4:], n)
		copy(b[off+8:], e.data)
		off += 8 + (uint64(len(e.data))+7)&^7
	}
	off += 8 // end-of-extensions marker: already zero
	if q.backing != "" {
		be.PutUint64(b[8:], off)
		be.PutUint32(b[16:], uint32(len(q.backing)))
		copy(b[off:], q.backing)
	}
	if q.truncate > 0 {
		b = b[:q.truncate]
	}
	return b
}

func u32(v uint32) *uint32 { return &v }

// hostileHeaders each break one rule; want is part of the refusal.
var hostileHeaders = map[string]struct {
	q    qcow2File
	want string
}{
	"backing file":          {qcow2File{backing: "/var/lib/bureau/bureau.db"}, `backing file ("/var/lib/bureau/bureau.db")`},
	"json backing file":     {qcow2File{backing: `json:{"driver":"file","filename":"/etc/shadow"}`}, "backing file"},
	"v2 backing file":       {qcow2File{version: 2, backing: "/etc/shadow"}, `backing file ("/etc/shadow")`},
	"data file bit":         {qcow2File{incompat: qcow2ExternalData}, "external data file"},
	"data file extension":   {qcow2File{exts: []qcow2Ext{{typ: qcow2ExtDataFile, data: []byte("/etc/shadow")}}}, `external data file ("/etc/shadow")`},
	"unknown incompat bit":  {qcow2File{incompat: 1 << 9}, "unknown incompatible qcow2 features"},
	"corrupt":               {qcow2File{incompat: qcow2Corrupt}, "corrupt"},
	"aes encryption":        {qcow2File{crypt: 1}, "encrypted"},
	"luks encryption":       {qcow2File{crypt: 2, exts: []qcow2Ext{{typ: qcow2ExtEncryption, data: make([]byte, 16)}}}, "encrypted"},
	"encryption extension":  {qcow2File{exts: []qcow2Ext{{typ: qcow2ExtEncryption, data: make([]byte, 16)}}}, "encrypted"},
	"huge virtual size":     {qcow2File{size: 1 << 50, l1Size: u32(0)}, "virtual size"},
	"just over the maximum": {qcow2File{size: MaxVirtualSize + 512}, "virtual size"},
	"truncated header":      {qcow2File{truncate: 40}, "truncated qcow2 header"},
	"truncated v3 header":   {qcow2File{truncate: 80}, "truncated qcow2 version 3 header"},
	"truncated cluster":     {qcow2File{truncate: 4096}, "shorter than its first cluster"},
	"extension past end":    {qcow2File{exts: []qcow2Ext{{typ: qcow2ExtFeatureNames, data: make([]byte, 8), len: u32(1 << 20)}}}, "run past the end of the header cluster"},
	"version 1":             {qcow2File{version: 1}, "unsupported qcow2 version 1"},
	"cluster bits too big":  {qcow2File{clusterBits: 22}, "cluster_bits 22"},
	"cluster bits too low":  {qcow2File{clusterBits: 8, truncate: 4096}, "cluster_bits 8"},
	"header length short":   {qcow2File{headerLen: 96}, "header length 96"},
	"L1 too small":          {qcow2File{l1Size: u32(0)}, "L1 table has 0 entries"},
	"L1 past the end":       {qcow2File{l1Off: 1 << 30}, "L1 table"},
	"L1 unaligned":          {qcow2File{l1Off: 2<<16 + 8}, "not a cluster-aligned"},
	"refcount past the end": {qcow2File{refOff: 1 << 40}, "refcount table"},
}

func TestQcow2HeaderRefusesHostileHeaders(t *testing.T) {
	for what, c := range hostileHeaders {
		b := c.q.bytes()
		h, err := parseQcow2Header(b[:min(len(b), 1<<qcow2MaxClusterBits)], int64(len(b)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %+v, %v; want an error containing %q", what, h, err, c.want)
		}
	}
	if _, err := parseQcow2Header([]byte(strings.Repeat("x", 200)), 200); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("bad magic: %v", err)
	}
}

func TestQcow2HeaderAcceptsCleanHeaders(t *testing.T) {
	for what, q := range map[string]qcow2File{
		"v3":       {},
		"v2":       {version: 2},
		"512 B":    {clusterBits: 9},
		"2 MiB":    {clusterBits: 21},
		"dirty":    {incompat: qcow2Dirty | qcow2Compression},
		"extended": {incompat: qcow2ExtendedL2},
		"maximum":  {size: MaxVirtualSize},
		"known and unknown extensions": {exts: []qcow2Ext{
			{typ: qcow2ExtBackingFormat, data: []byte("raw")},
			{typ: qcow2ExtFeatureNames, data: make([]byte, 48)},
			{typ: qcow2ExtBitmaps, data: make([]byte, 24)},
			{typ: 0x12345678, data: []byte("ignored")},
		}},
	} {
		b := q.bytes()
		h, err := parseQcow2Header(b[:min(len(b), 1<<qcow2MaxClusterBits)], int64(len(b)))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if want := max(q.size, 128<<20); h.VirtualSize != want {
			t.Errorf("%s: virtual size %d, want %d", what, h.VirtualSize, want)
		}
	}
}

// FuzzQcow2Header feeds arbitrary files to the header check: it must not
// panic, and whatever it accepts has no backing file, no external data
// file and no encryption, read straight from the bytes.
func FuzzQcow2Header(f *testing.F) {
	f.Add(qcow2File{clusterBits: 9}.bytes())
	f.Add(qcow2File{version: 2, clusterBits: 9}.bytes())
	f.Add(qcow2File{clusterBits: 9, exts: []qcow2Ext{{typ: qcow2ExtBackingFormat, data: []byte("qcow2")}, {typ: qcow2ExtFeatureNames, data: make([]byte, 48)}}}.bytes())
	for _, c := range hostileHeaders {
		if c.q.clusterBits == 0 {
			c.q.clusterBits = 9
		}
		// Small seeds only: with 512-byte clusters a 2 TiB disk's L1
		// table alone is 512 MiB.
		if b := c.q.bytes(); len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseQcow2Header(b, int64(len(b)))
		if err != nil {
			return
		}
		be := binary.BigEndian
		if be.Uint64(b[8:]) != 0 || be.Uint32(b[16:]) != 0 {
			t.Fatal("accepted a backing file")
		}
		if be.Uint32(b[32:]) != 0 {
			t.Fatal("accepted an encrypted image")
		}
		if h.Version == 3 && be.Uint64(b[72:])&qcow2ExternalData != 0 {
			t.Fatal("accepted the external data file bit")
		}
		if h.VirtualSize > MaxVirtualSize {
			t.Fatalf("accepted virtual size %d", h.VirtualSize)
		}
		// Walk the extensions again, independently.
		off, end := uint64(qcow2V2Header), uint64(1)<<h.ClusterBits
		if h.Version == 3 {
			off = uint64(be.Uint32(b[100:]))
		}
		for off+8 <= end {
			typ, n := be.Uint32(b[off:]), uint64(be.Uint32(b[off+4:]))
			if typ == 0 {
				break
			}
			if typ == qcow2ExtDataFile || typ == qcow2ExtEncryption {
				t.Fatalf("accepted extension %#x", typ)
			}
			off += 8 + (n+7)&^7
		}
	})
}
