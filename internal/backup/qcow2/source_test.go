package qcow2

import (
	"errors"
	"maps"
	"os"
	"slices"
	"testing"
)

// buildMarks creates a 16 MiB image with snapshots m1 and m2 and writes
// after m2. Between m1 and m2 exactly cells 1, 4, 10 and 12 change (cells
// 5 and 7 are rewritten with zeros but read as zeros in both).
func buildMarks(t *testing.T, opts ...string) string {
	t.Helper()
	p := newImage(t, "16M", opts...)
	qio(t, p,
		"write -P 0x11 0 3M",   // cells 0-2
		"write -z 5M 1M",       // cell 5: zeros
		"write -P 0x22 8M 1M",  // cell 8
		"write -P 0x33 10M 1M", // cell 10, discarded later
		"write -P 0x44 12M 1M", // cell 12, zeroed later
		"write -P 0 14M 64k",   // cell 14: allocated, zero bytes
		"write -P 0x99 15M 4k", // cell 15: partial cluster
	)
	snapshot(t, p, "m1")
	qio(t, p,
		"write -P 0x55 1052672 4k", // cell 1: part of a cluster
		"write -P 0x66 4M 1M",      // cell 4: new
		"discard 10M 1M",           // cell 10
		"write -z 12M 1M",          // cell 12
		"write -z 5M 1M",           // cell 5 again: still zeros
		"write -z 7M 1M",           // cell 7: unallocated → zero flag, unchanged
	)
	snapshot(t, p, "m2")
	qio(t, p, // after m2: must not show in m1 or m2
		"write -P 0x77 0 2M",
		"write -P 0x88 6M 1M",
		"discard 8M 1M",
		"write -z 15M 1M",
	)
	return p
}

func TestReadCellsMatchQemu(t *testing.T) {
	p := buildMarks(t)
	z1 := checkCells(t, p, "m1")
	z2 := checkCells(t, p, "m2")
	if want := set(3, 4, 5, 6, 7, 9, 11, 13, 14); !maps.Equal(z1, want) {
		t.Errorf("m1 zero cells = %v, want %v", slices.Sorted(maps.Keys(z1)), slices.Sorted(maps.Keys(want)))
	}
	if want := set(3, 5, 6, 7, 9, 10, 11, 12, 13, 14); !maps.Equal(z2, want) {
		t.Errorf("m2 zero cells = %v, want %v", slices.Sorted(maps.Keys(z2)), slices.Sorted(maps.Keys(want)))
	}
	// Cell 14 is zero only by its data: the cluster is allocated.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := ReadSnapshot(f, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if off, zero := m.Cluster(14 << 4); off <= 0 || zero {
		t.Errorf("m1 cluster at 14M: Cluster = (%d, %v), want allocated data", off, zero)
	}
	if off, zero := m.Cluster(4 << 4); off != 0 || !zero {
		t.Errorf("m1 cluster at 4M: Cluster = (%d, %v), want unallocated", off, zero)
	}
}

func TestReadCellsVersion2(t *testing.T) {
	requireQemu(t)
	p := t.TempDir() + "/v2.qcow2"
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-o", "compat=0.10", p, "4M")
	qio(t, p, "write -P 0x11 0 1M", "write -P 0x22 2M 64k")
	snapshot(t, p, "m1")
	qio(t, p, "write -z 0 1M", "write -P 0x33 3M 1M")
	snapshot(t, p, "m2")
	checkCells(t, p, "m1")
	checkCells(t, p, "m2")
	s, err := NewSource(p, "m2", "m1", cell)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := changedSet(s), set(0, 3); !maps.Equal(got, want) {
		t.Errorf("v2 changed = %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

func TestChanged(t *testing.T) {
	p := buildMarks(t)
	s, err := NewSource(p, "m2", "m1", cell)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Size() != 16<<20 || s.CellSize() != cell || s.Cells() != 16 {
		t.Fatalf("Size/CellSize/Cells = %d/%d/%d", s.Size(), s.CellSize(), s.Cells())
	}
	if got, want := changedSet(s), set(1, 4, 10, 12); !maps.Equal(got, want) {
		t.Errorf("changed = %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}

	full, err := NewSource(p, "m2", "", cell)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if got := changedSet(full); len(got) != full.Cells() {
		t.Errorf("without prev: %d of %d cells changed", len(got), full.Cells())
	}

	_, err = NewSource(p, "m2", "gone", cell)
	if !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("missing prev: err = %v, want ErrNoSnapshot", err)
	}
	_, err = NewSource(p, "gone", "", cell)
	if !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("missing mark: err = %v, want ErrNoSnapshot", err)
	}
	if _, err := NewSource(p, "m2", "", 3<<15); err == nil {
		t.Error("cell size not a multiple of the cluster size: no error")
	}
}

func TestGrownDisk(t *testing.T) {
	p := newImage(t, "4M")
	qio(t, p, "write -P 0x11 0 2M")
	snapshot(t, p, "m1")
	run(t, "qemu-img", "resize", "-q", p, "7680K") // 7.5 MiB: short last cell
	qio(t, p, "write -P 0x22 6M 64k")
	snapshot(t, p, "m2")

	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snaps, err := Snapshots(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Name != "m1" || snaps[1].Name != "m2" || snaps[0].ID == snaps[1].ID {
		t.Fatalf("Snapshots = %+v", snaps)
	}
	if snaps[0].VirtualSize != 4<<20 || snaps[1].VirtualSize != 7680<<10 {
		t.Errorf("snapshot sizes = %d, %d", snaps[0].VirtualSize, snaps[1].VirtualSize)
	}
	if snaps[0].Date.IsZero() {
		t.Error("snapshot date is zero")
	}

	checkCells(t, p, "m1") // m1 is 4 MiB though the header now says 7.5
	checkCells(t, p, "m2")
	s, err := NewSource(p, "m2", "m1", cell)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Cells() != 8 {
		t.Fatalf("Cells = %d, want 8", s.Cells())
	}
	if got, want := changedSet(s), set(4, 5, 6, 7); !maps.Equal(got, want) {
		t.Errorf("changed = %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	buf := make([]byte, cell)
	if n, _, err := s.ReadCell(7, buf); err != nil || n != 512<<10 {
		t.Errorf("last cell: n = %d, err = %v; want %d", n, err, 512<<10)
	}
}

// TestEmpty: a cell is empty by its map alone only when no cluster of it
// holds data at the mark (cell 14 holds zero bytes in an allocated cluster:
// it must be read to know).
func TestEmpty(t *testing.T) {
	p := buildMarks(t)
	s, err := NewSource(p, "m2", "", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var empty []int
	for i := range s.Cells() {
		if s.Empty(i) {
			empty = append(empty, i)
		}
	}
	if want := []int{3, 5, 6, 7, 9, 10, 11, 12, 13}; !slices.Equal(empty, want) {
		t.Errorf("empty cells at m2 = %v, want %v", empty, want)
	}
}
