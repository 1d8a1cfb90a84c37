package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flipped byte in a chunk is found by Verify and stops a restore; a
// deleted chunk is listed as missing.
func TestVerifyCorruptAndMissing(t *testing.T) {
	ctx := context.Background()
	r, _, dir := newDirRepo(t)
	m, _, err := r.Backup(ctx, &fakeSource{data: disk(8, 0), cellSize: CellSize}, nil, meta("v"), nil)
	if err != nil {
		t.Fatal(err)
	}
	bad, gone := m.Cells[1].Chunk, m.Cells[3].Chunk
	file := filepath.Join(dir, filepath.FromSlash(ChunkKey(bad)))
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	check, err := r.Verify(ctx, m)
	if err != nil || check.OK || len(check.Corrupt) != 1 || check.Corrupt[0] != bad || len(check.Missing) != 0 {
		t.Errorf("verify after corrupting %s: %+v, %v", bad, check, err)
	}
	if _, err := restoreTo(t, r, m); err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("restore with a corrupt chunk: %v; want an error naming %s", err, bad)
	}
	if _, err := r.Chunk(ctx, bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Chunk(corrupt): %v", err)
	}

	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(ChunkKey(gone)))); err != nil {
		t.Fatal(err)
	}
	check, err = r.Verify(ctx, m)
	if err != nil || check.OK || len(check.Missing) != 1 || check.Missing[0] != gone || len(check.Corrupt) != 1 {
		t.Errorf("verify after deleting %s: %+v, %v", gone, check, err)
	}
	if _, err := r.Chunk(ctx, gone); !errors.Is(err, ErrNotFound) {
		t.Errorf("Chunk(missing): %v", err)
	}
}

// A chunk stored under another chunk's name fails to open: its id is the
// additional data of its encryption.
func TestSwappedChunk(t *testing.T) {
	ctx := context.Background()
	r, tg, _ := newDirRepo(t)
	m, _, err := r.Backup(ctx, &fakeSource{data: disk(4, 0), cellSize: CellSize}, nil, meta("s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := m.Cells[0].Chunk, m.Cells[1].Chunk
	obj, err := tg.Get(ctx, ChunkKey(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Put(ctx, ChunkKey(b), obj); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Chunk(ctx, b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("chunk %s holding %s's object: %v", b, a, err)
	}
	// Likewise a manifest copied under another backup's name.
	mobj, _ := tg.Get(ctx, manifestKey("s"))
	tg.Put(ctx, manifestKey("t"), mobj)
	if _, err := r.Manifest(ctx, "t"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("manifest of s under t: %v", err)
	}
}

func TestWrongKey(t *testing.T) {
	ctx := context.Background()
	_, tg, _ := newDirRepo(t)
	if _, err := Open(ctx, tg, testKey(2)); !errors.Is(err, ErrWrongKey) {
		t.Errorf("open with another key: %v", err)
	}
	if _, err := Open(ctx, tg, testKey(1)); err != nil {
		t.Errorf("open again with the key: %v", err)
	}
	if _, err := Open(ctx, tg, []byte("short")); err == nil {
		t.Error("a short key was taken")
	}
}

// A cancelled or failed backup writes no manifest.
func TestFailedBackupWritesNoManifest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, _, _ := newDirRepo(t)
	src := &fakeSource{data: disk(12, 0), cellSize: CellSize, onRead: func(i int) error {
		if i == 6 {
			cancel()
		}
		return nil
	}}
	if _, _, err := r.Backup(ctx, src, nil, meta("c"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled backup: %v", err)
	}
	boom := errors.New("disk on fire")
	src = &fakeSource{data: disk(12, 0), cellSize: CellSize, onRead: func(i int) error {
		if i == 9 {
			return boom
		}
		return nil
	}}
	if _, _, err := r.Backup(context.Background(), src, nil, meta("e"), nil); !errors.Is(err, boom) {
		t.Errorf("failed read: %v", err)
	}
	if list, err := r.Manifests(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("manifests after a cancelled and a failed backup: %d, %v", len(list), err)
	}
	if _, err := r.Manifest(context.Background(), "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("manifest of the cancelled backup: %v", err)
	}
}

func TestBackupRefuses(t *testing.T) {
	ctx := context.Background()
	r, _, _ := newDirRepo(t)
	data := disk(4, 0)
	partial := &fakeSource{data: data, cellSize: CellSize, changed: map[int]bool{1: true}}
	if _, _, err := r.Backup(ctx, partial, nil, meta("x"), nil); err == nil || !strings.Contains(err.Error(), "unchanged") {
		t.Errorf("unchanged cells without a parent: %v", err)
	}
	for _, id := range []string{"", "../x", "a/b", ".hidden"} {
		if _, _, err := r.Backup(ctx, &fakeSource{data: data, cellSize: CellSize}, nil, meta(id), nil); err == nil {
			t.Errorf("backup id %q was taken", id)
		}
	}
	parent := &Manifest{ID: "p", CellSize: 4096}
	if _, _, err := r.Backup(ctx, &fakeSource{data: data, cellSize: CellSize}, parent, meta("y"), nil); err == nil {
		t.Error("a parent of another cell size was taken")
	}
}
