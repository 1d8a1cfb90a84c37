package qcow2

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const cell = 1 << 20

// requireQemu fails (never skips) when qemu-img or qemu-io is missing.
func requireQemu(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"qemu-img", "qemu-io"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found in PATH: these tests need the real QEMU tools (install qemu-utils): %v", tool, err)
		}
	}
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newImage creates a lazy_refcounts qcow2 image of the given size with
// extra create options.
func newImage(t testing.TB, size string, opts ...string) string {
	t.Helper()
	requireQemu(t)
	p := filepath.Join(t.TempDir(), "disk.qcow2")
	o := strings.Join(append([]string{"lazy_refcounts=on"}, opts...), ",")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-o", o, p, size)
	return p
}

// qio runs qemu-io commands against the image.
func qio(t testing.TB, path string, cmds ...string) {
	t.Helper()
	args := []string{"-f", "qcow2"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	run(t, "qemu-io", append(args, path)...)
}

func snapshot(t testing.TB, path, name string) {
	t.Helper()
	run(t, "qemu-img", "snapshot", "-c", name, path)
}

// rawOf returns the content of snapshot name as qemu-img converts it.
func rawOf(t testing.TB, path, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".raw")
	run(t, "qemu-img", "convert", "-l", "snapshot.name="+name, "-O", "raw", path, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkCells compares every cell of mark read through a Source with
// qemu-img's conversion of the snapshot, and returns the cells reported zero.
func checkCells(t *testing.T, path, mark string) map[int]bool {
	t.Helper()
	want := rawOf(t, path, mark)
	s, err := NewSource(path, mark, "", cell)
	if err != nil {
		t.Fatalf("NewSource %s: %v", mark, err)
	}
	defer s.Close()
	if s.Size() > int64(len(want)) {
		t.Fatalf("%s: Size %d > converted size %d", mark, s.Size(), len(want))
	}
	if !allZero(want[s.Size():]) {
		t.Errorf("%s: converted image has data beyond the snapshot size %d", mark, s.Size())
	}
	zeros := map[int]bool{}
	buf := make([]byte, cell)
	for i := range s.Cells() {
		n, zero, err := s.ReadCell(i, buf)
		if err != nil {
			t.Fatalf("%s: ReadCell(%d): %v", mark, i, err)
		}
		start := int64(i) * cell
		exp := want[start:min(start+cell, s.Size())]
		if n != len(exp) {
			t.Fatalf("%s: cell %d: n = %d, want %d", mark, i, n, len(exp))
		}
		if !bytes.Equal(buf[:n], exp) {
			t.Errorf("%s: cell %d content differs from qemu-img convert", mark, i)
		}
		if zero != allZero(exp) {
			t.Errorf("%s: cell %d: zero = %v, want %v", mark, i, zero, !zero)
		}
		if zero {
			zeros[i] = true
		}
	}
	return zeros
}

// changedSet returns the cells Changed reports.
func changedSet(s *Source) map[int]bool {
	got := map[int]bool{}
	for i := range s.Cells() {
		if s.Changed(i) {
			got[i] = true
		}
	}
	return got
}

func set(cells ...int) map[int]bool {
	m := map[int]bool{}
	for _, c := range cells {
		m[c] = true
	}
	return m
}
