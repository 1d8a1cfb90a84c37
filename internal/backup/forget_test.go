package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestForgetAndSweep: forgetting the first of two backups leaves the
// second restorable; the sweep removes only the chunks nothing uses, and
// refuses to run past a damaged manifest.
func TestForgetAndSweep(t *testing.T) {
	ctx := context.Background()
	r, tg, dir := newDirRepo(t)
	data := disk(8, 0) // 6 non-zero cells
	first, _, err := r.Backup(ctx, &fakeSource{data: data, cellSize: CellSize}, nil, meta("b1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	data2 := bytes.Clone(data)
	rand.Read(data2[0:CellSize])              // replaces a random cell
	rand.Read(data2[2*CellSize : 3*CellSize]) // a zero cell gets data
	m2 := meta("b2")
	m2.Kind, m2.Parent = "incremental", first.ID
	second, _, err := r.Backup(ctx, &fakeSource{data: data2, cellSize: CellSize, changed: map[int]bool{0: true, 2: true}}, first, m2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Forget(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Manifest(ctx, first.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a forgotten backup's manifest: %v", err)
	}
	res, err := r.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifests != 1 || res.Chunks != 8 || res.Deleted != 1 {
		t.Errorf("sweep: %+v, want 1 manifest, 8 chunks, the 1 only the first backup used deleted", res)
	}
	checkRestore(t, r, second, data2)
	if err := r.Forget(ctx, first.ID); err != nil {
		t.Errorf("forgetting it twice: %v", err)
	}
	if err := r.Forget(ctx, "../config"); err == nil {
		t.Error("a path trick as a backup id was accepted")
	}
	// A damaged manifest stops the sweep before anything is deleted.
	if err := r.Forget(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	third, _, err := r.Backup(ctx, &fakeSource{data: data2, cellSize: CellSize}, nil, meta("b3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, "backups", third.ID)
	b, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.WriteFile(mf, b, 0o600)
	if _, err := r.Sweep(ctx); err == nil {
		t.Fatal("the sweep ran past a damaged manifest")
	}
	if keys, _ := tg.List(ctx, "chunks/"); len(keys) != 7 {
		t.Errorf("%d chunks left after a refused sweep, want 7", len(keys))
	}
}
