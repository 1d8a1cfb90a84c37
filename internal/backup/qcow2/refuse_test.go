package qcow2

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openErr returns the error of reading the image's snapshot table.
func openErr(t *testing.T, p string) error {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = Snapshots(f)
	return err
}

func TestRefuseFeatures(t *testing.T) {
	requireQemu(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", base, "4M")
	backed := filepath.Join(dir, "backed.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-b", base, "-F", "qcow2", backed)
	ext := filepath.Join(dir, "ext.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-o", "data_file="+filepath.Join(dir, "ext.raw"), ext, "4M")
	l2 := filepath.Join(dir, "l2.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-o", "extended_l2=on", l2, "4M")
	// Patched headers: a real LUKS image needs a slow, flaky PBKDF benchmark.
	enc := newImage(t, "4M")
	patchByte(t, enc, 35, 2) // crypt_method = 2 (LUKS)
	unknown := newImage(t, "4M")
	patchByte(t, unknown, 78, 1) // incompatible_features bit 8
	for p, feature := range map[string]string{
		backed: "backing file", ext: "external data file", l2: "extended L2",
		enc: "encryption", unknown: "unknown incompatible features",
	} {
		err := openErr(t, p)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), feature) {
			t.Errorf("%s: err = %v, want ErrUnsupported naming %q", filepath.Base(p), err, feature)
		}
		if _, err := NewSource(p, "m1", "", cell); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: NewSource err = %v, want ErrUnsupported", filepath.Base(p), err)
		}
	}
}

func TestRefuseCompressed(t *testing.T) {
	src := newImage(t, "4M")
	qio(t, src, "write -P 0x11 0 1M")
	comp := filepath.Join(t.TempDir(), "comp.qcow2")
	run(t, "qemu-img", "convert", "-c", "-O", "qcow2", src, comp)
	snapshot(t, comp, "m1")
	s, err := NewSource(comp, "m1", "", cell)
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	defer s.Close()
	buf := make([]byte, cell)
	if _, _, err := s.ReadCell(0, buf); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "compressed") {
		t.Errorf("ReadCell(0) err = %v, want ErrUnsupported for compressed", err)
	}
	if _, zero, err := s.ReadCell(1, buf); err != nil || !zero {
		t.Errorf("ReadCell(1) = zero %v, err %v; want an unallocated zero cell", zero, err)
	}
}

func TestRefuseNotQcow2(t *testing.T) {
	requireQemu(t)
	dir := t.TempDir()
	raw := filepath.Join(dir, "disk.raw")
	run(t, "qemu-img", "create", "-q", "-f", "raw", raw, "1M")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{raw, empty} {
		if err := openErr(t, p); err == nil || !strings.Contains(err.Error(), "not a qcow2 image") {
			t.Errorf("%s: err = %v, want 'not a qcow2 image'", filepath.Base(p), err)
		}
	}
	if _, err := NewSource(filepath.Join(dir, "missing"), "m1", "", cell); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestRefuseCorrupt(t *testing.T) {
	p := newImage(t, "4M")
	snapshot(t, p, "m1")
	patchByte(t, p, 79, 2) // incompatible_features bit 1: corrupt
	if _, err := NewSource(p, "m1", "", cell); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("err = %v, want corrupt image refused", err)
	}
}

// patchByte ORs bits into the header byte at off.
func patchByte(t *testing.T, p string, off int64, bits byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] |= bits
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}
