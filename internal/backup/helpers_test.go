package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeSource is a disk in memory: cells cut from data, changed (nil: all)
// the cells that differ from the parent's disk.
type fakeSource struct {
	data     []byte
	cellSize int64
	changed  map[int]bool
	// onRead, when set, runs before each ReadCell.
	onRead func(i int) error
}

func (f *fakeSource) Size() int64     { return int64(len(f.data)) }
func (f *fakeSource) CellSize() int64 { return f.cellSize }
func (f *fakeSource) Cells() int      { return int((int64(len(f.data)) + f.cellSize - 1) / f.cellSize) }
func (f *fakeSource) Changed(i int) bool {
	return f.changed == nil || f.changed[i]
}

// ReadCell reports an all-zero cell as zero when its index is even (as
// qcow2 knows of unallocated clusters), and reads it as bytes otherwise,
// so both paths are exercised.
func (f *fakeSource) ReadCell(i int, buf []byte) (int, bool, error) {
	if f.onRead != nil {
		if err := f.onRead(i); err != nil {
			return 0, false, err
		}
	}
	lo := int64(i) * f.cellSize
	hi := min(lo+f.cellSize, int64(len(f.data)))
	if i%2 == 0 && allZero(f.data[lo:hi]) {
		return 0, true, nil
	}
	return copy(buf, f.data[lo:hi]), false, nil
}

// disk makes test content of cells cells (the last one short by tail
// bytes): a mix of random, compressible and all-zero cells.
func disk(cells int, tail int) []byte {
	d := make([]byte, cells*CellSize-tail)
	for i := range cells {
		c := d[i*CellSize : min((i+1)*CellSize, len(d))]
		switch i % 4 {
		case 0:
			rand.Read(c)
		case 1:
			fillText(c, i)
		case 2: // zeros
		case 3:
			rand.Read(c[:len(c)/2])
		}
	}
	return d
}

// fillText fills b with compressible text that differs with seed.
func fillText(b []byte, seed int) {
	r := mrand.New(mrand.NewPCG(uint64(seed), 7))
	words := []string{"desktop ", "backup ", "bureau ", "chunk ", "qemu ", "cell "}
	for i := 0; i < len(b); {
		i += copy(b[i:], words[r.IntN(len(words))])
	}
}

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func newDirRepo(t testing.TB) (*Repo, Target, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "target")
	tg, err := NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), tg, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	return r, tg, dir
}

func meta(id string) Meta {
	return Meta{ID: id, DesktopID: "d-1", DesktopName: "work", Owner: "alice", Image: "ubuntu-24.04", VCPUs: 2, MemoryMiB: 4096,
		Kind: "full", Consistency: "filesystem", CreatedAt: time.Now().UTC().Truncate(time.Second)}
}

// restoreTo restores m into a fresh sparse file and returns its content.
func restoreTo(t testing.TB, r *Repo, m *Manifest) ([]byte, error) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "disk.raw"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(m.DiskBytes); err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(context.Background(), m, f, nil); err != nil {
		return nil, err
	}
	return os.ReadFile(f.Name())
}

// nonZeroCells counts the cells of d that are not all zeros.
func nonZeroCells(d []byte) int {
	n := 0
	for lo := 0; lo < len(d); lo += CellSize {
		if !allZero(d[lo:min(lo+CellSize, len(d))]) {
			n++
		}
	}
	return n
}
