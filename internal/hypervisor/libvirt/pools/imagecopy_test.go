package pools

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// libvirt's test driver keeps pools and volumes in memory and has no
// volume upload or download ("this function is not supported by the
// connection driver: virStorageVolUpload"), so these tests cover finding
// or making the pool, and that a refused upload leaves no volume; the
// copy itself is checked against a real libvirtd in e2e/host2_images_test.go.

// testHost is the storage-pool code on a connection to the test driver.
func testHost(t *testing.T) Host {
	t.Helper()
	conn, err := libvirt.NewConnect("test:///default")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return NewHost(conn, "test:///default")
}

// poolState is a pool's target, activity and autostart, by name.
func poolState(t *testing.T, conn *libvirt.Connect, name string) (target string, active, auto bool) {
	t.Helper()
	p, err := conn.LookupStoragePoolByName(name)
	if err != nil {
		t.Fatalf("pool %s: %v", name, err)
	}
	defer p.Free()
	x, err := p.GetXMLDesc(0)
	if err != nil {
		t.Fatal(err)
	}
	var def libvirtxml.StoragePool
	if err := def.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	active, _ = p.IsActive()
	auto, _ = p.GetAutostart()
	return def.Target.Path, active, auto
}

func removePool(conn *libvirt.Connect, name string) {
	if p, err := conn.LookupStoragePoolByName(name); err == nil {
		p.Destroy()
		p.Undefine()
		p.Free()
	}
}

func TestImagePoolMadeOnceForItsFolder(t *testing.T) {
	l := testHost(t)
	ctx := context.Background()
	dir := "/bureau-test/" + t.Name() + "/images"
	name, err := l.imagePool(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePool(l.conn, name) })
	if name != PoolName(dir) || !strings.HasPrefix(name, "bureau-") || len(name) != len("bureau-")+8 {
		t.Errorf("pool name %q, want %q", name, PoolName(dir))
	}
	if target, active, auto := poolState(t, l.conn, name); target != dir || !active || !auto {
		t.Errorf("pool %s: target %s active %v autostart %v", name, target, active, auto)
	}
	before, _ := l.conn.ListAllStoragePools(0)
	again, err := l.imagePool(ctx, dir)
	if err != nil || again != name {
		t.Errorf("second time: %q %v, want %q", again, err, name)
	}
	after, _ := l.conn.ListAllStoragePools(0)
	if len(after) != len(before) {
		t.Errorf("%d pools after asking again, %d before", len(after), len(before))
	}
	for _, p := range append(before, after...) {
		p.Free()
	}
}

func TestImagePoolReusesAnyPoolWithThatTarget(t *testing.T) {
	l := testHost(t)
	ctx := context.Background()
	dir := "/bureau-test/" + t.Name() + "/images"
	x, _ := poolXML("someone-elses", dir+"/", imageDir) // a trailing slash still matches
	p, err := l.conn.StoragePoolDefineXML(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Free()
	t.Cleanup(func() { removePool(l.conn, "someone-elses") })
	// Defined, not started: it is started and set to autostart.
	name, err := l.imagePool(ctx, dir)
	if err != nil || name != "someone-elses" {
		t.Fatalf("pool %q %v, want the existing one", name, err)
	}
	if _, active, auto := poolState(t, l.conn, name); !active || !auto {
		t.Errorf("existing pool active %v autostart %v, want both", active, auto)
	}
	if _, err := l.conn.LookupStoragePoolByName(PoolName(dir)); err == nil {
		t.Errorf("a second pool %s was made", PoolName(dir))
		removePool(l.conn, PoolName(dir))
	}
}

func TestCopyImageRefusedUploadLeavesNoVolume(t *testing.T) {
	l := testHost(t)
	ctx := context.Background()
	dir := "/bureau-test/" + t.Name() + "/images"
	local := filepath.Join(t.TempDir(), "base.qcow2")
	if err := os.WriteFile(local, qcow2Header(64<<20, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	reports := 0
	err := l.CopyImage(ctx, local, dir+"/base.qcow2", func(done, total int64) { reports++ }, false, nil)
	t.Cleanup(func() { removePool(l.conn, PoolName(dir)) })
	var lerr libvirt.Error
	if err == nil || !strings.Contains(err.Error(), "not supported") || !errors.As(err, &lerr) || lerr.Code != libvirt.ERR_NO_SUPPORT {
		t.Fatalf("copy through the test driver: %v, want libvirt's not supported", err)
	}
	if reports != 0 {
		t.Errorf("%d progress reports for a copy that failed at once", reports)
	}
	t.Logf("test driver: %v", err)
	p, err := l.conn.LookupStoragePoolByName(PoolName(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	if names, err := p.ListStorageVolumes(); err != nil || len(names) != 0 {
		t.Errorf("volumes left after the failed copy: %v %v", names, err)
	}
	// Nothing there, so no copy on the host.
	if ok, err := l.ImageOnHost(ctx, local, dir+"/base.qcow2"); ok || err != nil {
		t.Errorf("ImageOnHost after the failed copy: %v %v", ok, err)
	}
	// A second copy of the same path is not refused as under way.
	if err := l.CopyImage(ctx, local, dir+"/base.qcow2", nil, false, nil); err == nil || strings.Contains(err.Error(), "under way") {
		t.Errorf("second copy: %v", err)
	}
}

func TestCopyImageChecksItsArguments(t *testing.T) {
	l := testHost(t)
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "base.qcow2")
	os.WriteFile(local, []byte("x"), 0o644)
	for _, remote := range []string{"relative/base.qcow2", "/", "/images/../base.qcow2", "/images/"} {
		if err := l.CopyImage(ctx, local, remote, nil, false, nil); err == nil || !strings.Contains(err.Error(), "absolute, clean path") {
			t.Errorf("remote path %q: %v", remote, err)
		}
	}
	if err := l.CopyImage(ctx, local+".missing", "/bureau-test/x/base.qcow2", nil, false, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing local file: %v", err)
	}
	if _, err := l.ImageOnHost(ctx, t.TempDir(), "/bureau-test/x/base.qcow2"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a folder as the local file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.qcow2")
	os.WriteFile(empty, nil, 0o644)
	if err := l.CopyImage(ctx, empty, "/bureau-test/x/base.qcow2", nil, false, nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty local file: %v", err)
	}
}

// qcow2Header is the start of a qcow2 image of the virtual size, padded
// with zeros to n bytes.
func qcow2Header(virtual uint64, n int) []byte {
	b := make([]byte, n)
	copy(b, "QFI\xfb")
	binary.BigEndian.PutUint32(b[4:], 3)
	binary.BigEndian.PutUint64(b[24:], virtual)
	return b
}

func TestSourceReadsTheQcow2Header(t *testing.T) {
	dir := t.TempDir()
	qcow := filepath.Join(dir, "a.qcow2")
	os.WriteFile(qcow, qcow2Header(10<<30, 3*4096+5), 0o644)
	s, err := openSource(qcow)
	if err != nil {
		t.Fatal(err)
	}
	s.f.Close()
	if s.size != 3*4096+5 || s.virtual != 10<<30 || len(s.head) != headerLen || string(s.head[:4]) != "QFI\xfb" {
		t.Errorf("qcow2 source: size %d virtual %d head %d", s.size, s.virtual, len(s.head))
	}
	raw := filepath.Join(dir, "small.raw")
	os.WriteFile(raw, []byte("not an image"), 0o644)
	if s, err = openSource(raw); err != nil {
		t.Fatal(err)
	}
	s.f.Close()
	if s.size != 12 || s.virtual != 12 || string(s.head) != "not an image" {
		t.Errorf("raw source: size %d virtual %d head %q", s.size, s.virtual, s.head)
	}
}

func TestVolumeAndPoolXML(t *testing.T) {
	x, err := VolumeXML("base.qcow2", 694616064, imageFile)
	if err != nil {
		t.Fatal(err)
	}
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	if v.Name != "base.qcow2" || v.Capacity.Value != 694616064 || v.Capacity.Unit != "bytes" || v.Allocation == nil || v.Allocation.Value != 0 ||
		v.Target.Format.Type != "raw" || v.Target.Permissions.Mode != "0644" || v.Target.Permissions.Owner != "0" || v.Target.Permissions.Group != "0" {
		t.Errorf("volume XML %s", x)
	}
	x, err = poolXML("bureau-12345678", "/var/lib/bureau/images", imageDir)
	if err != nil {
		t.Fatal(err)
	}
	var p libvirtxml.StoragePool
	if err := p.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	if p.Type != "dir" || p.Target.Path != "/var/lib/bureau/images" || p.Target.Permissions.Mode != "0755" || p.Target.Permissions.Owner != "0" {
		t.Errorf("pool XML %s", x)
	}
	if PoolName("/var/lib/bureau/images") != PoolName("/var/lib/bureau/images") || PoolName("/a") == PoolName("/b") {
		t.Error("pool names are not a function of the folder")
	}
}

// sendAll runs libvirt's virStreamSparseSendAll loop (src/libvirt-stream.c,
// 256 KiB buffer) over r, writing what it sends into out at start+offset
// and counting the hole bytes.
func sendAll(t *testing.T, r *SparseReader, out []byte, start int64) (holes int64, err error) {
	t.Helper()
	const bufLen = 256 << 10
	pos := start
	var dataLen int64
	for {
		want := int64(bufLen)
		if dataLen == 0 {
			inData, n, err := r.Hole(nil)
			if err != nil {
				return holes, err
			}
			if !inData && n > 0 {
				holes += n
				pos += n
				if err := r.Skip(nil, n); err != nil {
					return holes, err
				}
				continue
			}
			dataLen = n
		}
		want = min(want, dataLen)
		b, err := r.Data(nil, int(want))
		if err != nil {
			return holes, err
		}
		if len(b) == 0 {
			return holes, nil
		}
		copy(out[pos:], b)
		pos += int64(len(b))
		dataLen -= int64(len(b))
	}
}

func TestSparseReaderSendsHolesAsHoles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 8 << 20
	want := make([]byte, size)
	for _, w := range []struct {
		at, n int64
		b     byte
	}{{0, 4096, 'h'}, {1 << 20, 600 << 10, 0x5a}, {5 << 20, 4096, 0xa5}} { // ends in a hole
		chunk := bytes.Repeat([]byte{w.b}, int(w.n))
		if _, err := f.WriteAt(chunk, w.at); err != nil {
			t.Fatal(err)
		}
		copy(want[w.at:], chunk)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 3 /* SEEK_DATA */); err != nil {
		t.Skipf("no SEEK_DATA here: %v", err)
	}
	var moves []int64
	r := &SparseReader{ctx: context.Background(), f: f, pos: headerLen, end: size, moved: func(p int64) { moves = append(moves, p) }}
	got := make([]byte, size)
	holes, err := sendAll(t, r, got, headerLen)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[headerLen:], want[headerLen:]) {
		t.Error("the bytes sent differ from the file's")
	}
	// The file system may keep a little more than was written as data.
	if holes < size-(1<<20) {
		t.Errorf("%d bytes sent as holes, want most of the file's %d", holes, size)
	}
	if len(moves) == 0 || moves[len(moves)-1] != size || r.Failed() != nil {
		t.Errorf("last position reported %v, failed %v", moves[len(moves)-1:], r.Failed())
	}
	t.Logf("%d MiB file: %d KiB sent as data, %d KiB as holes, %d steps", size>>20, (size-headerLen-holes)>>10, holes>>10, len(moves))
}

func TestSparseReaderStopsWhenCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	os.WriteFile(path, bytes.Repeat([]byte{1}, 4<<20), 0o644)
	f, _ := os.Open(path)
	defer f.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped by the test")
	r := &SparseReader{ctx: ctx, f: f, pos: 0, end: 4 << 20, moved: func(p int64) {
		if p >= 1<<20 {
			cancel(stop)
		}
	}}
	_, err := sendAll(t, r, make([]byte, 4<<20), 0)
	if !errors.Is(err, stop) || !errors.Is(r.Failed(), stop) || r.pos >= 4<<20 {
		t.Errorf("cancelled at %d: %v (failed %v)", r.pos, err, r.Failed())
	}
	// A file that got shorter than it was is an error, not a short copy.
	r = &SparseReader{ctx: context.Background(), f: f, pos: 0, end: 5 << 20, moved: func(int64) {}}
	if _, err := sendAll(t, r, make([]byte, 5<<20), 0); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Errorf("file shorter than its size: %v", err)
	}
}

func TestProgressIsSpacedAndEndsAtTotal(t *testing.T) {
	var got [][2]int64
	p := NewProgress(func(done, total int64) { got = append(got, [2]int64{done, total}) }, 1000)
	for i := int64(1); i < 1000; i++ {
		p.At(i) // all within far less than progressEvery
	}
	p.At(1000) // the end is reported by end, once
	if len(got) != 0 {
		t.Errorf("reports within %s of the start: %v", progressEvery, got)
	}
	p.last = time.Now().Add(-progressEvery)
	p.At(500)
	p.At(600)
	p.End()
	if len(got) != 2 || got[0] != [2]int64{500, 1000} || got[1] != [2]int64{1000, 1000} {
		t.Errorf("reports %v", got)
	}
	NewProgress(nil, 10).End() // no callback: nothing to call
}

func TestSourceSumIsOfTheFileAsItIsNow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "base.qcow2")
	os.WriteFile(path, []byte("first build"), 0o644)
	sumOf := func() string {
		t.Helper()
		src, err := openSource(path)
		if err != nil {
			t.Fatal(err)
		}
		defer src.f.Close()
		s, err := src.sum()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := sumOf()
	if first != "f3adf3a4014af2dc15376ed0b22ac63cae9073430512bad33659b8f352c9fb30" || sumOf() != first {
		t.Fatalf("sum: %q, then %q", first, sumOf())
	}
	// Rebuilt: the same size, other bytes, renamed over it.
	next := path + ".new"
	os.WriteFile(next, []byte("other build"), 0o644)
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if again := sumOf(); again == first {
		t.Errorf("the rebuilt image has the sum of the first build: %s", again)
	}
}
