package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
)

// roundTrip takes a full backup, an incremental one with 3 changed cells
// and one that zeroes a cell and repeats another's content, restores each
// and verifies each, in the repository r.
func roundTrip(t *testing.T, r *Repo) {
	ctx := context.Background()
	data := disk(16, 1000) // 12 non-zero cells, all different
	full, p, err := r.Backup(ctx, &fakeSource{data: data, cellSize: CellSize}, nil, meta("b1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ChunksNew != 12 || p.Chunks != 12 || len(full.Cells) != 12 || p.BytesRead != int64(len(data)) || p.ReadTotal != int64(len(data)) || p.BytesNew == 0 {
		t.Errorf("full backup: %+v, %d cells", p, len(full.Cells))
	}
	for i, c := range full.Cells {
		if c.Index%4 == 2 || (i > 0 && c.Index <= full.Cells[i-1].Index) {
			t.Errorf("full backup cell %d: %+v (zero cells must be left out, the rest ascending)", i, c)
		}
	}
	checkRestore(t, r, full, data)

	// Three cells change: one that was zero, a text one and a random one.
	data2 := bytes.Clone(data)
	rand.Read(data2[2*CellSize : 3*CellSize])
	fillText(data2[5*CellSize:6*CellSize], 99)
	rand.Read(data2[8*CellSize : 9*CellSize])
	m2 := meta("b2")
	m2.Kind, m2.Parent = "incremental", full.ID
	inc, p, err := r.Backup(ctx, &fakeSource{data: data2, cellSize: CellSize, changed: map[int]bool{2: true, 5: true, 8: true}}, full, m2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ChunksNew != 3 || p.ReadTotal != 3*CellSize || p.BytesRead != 3*CellSize || p.Chunks != 13 || len(inc.Cells) != 13 {
		t.Errorf("incremental backup: %+v, %d cells; want 3 new chunks of 13", p, len(inc.Cells))
	}
	checkRestore(t, r, inc, data2)

	// Cell 4 is zeroed, cell 9 takes cell 1's content: nothing new.
	data3 := bytes.Clone(data2)
	clear(data3[4*CellSize : 5*CellSize])
	copy(data3[9*CellSize:10*CellSize], data3[1*CellSize:2*CellSize])
	m3 := meta("b3")
	m3.Kind, m3.Parent = "incremental", inc.ID
	third, p, err := r.Backup(ctx, &fakeSource{data: data3, cellSize: CellSize, changed: map[int]bool{4: true, 9: true}}, inc, m3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ChunksNew != 0 || p.Chunks != 12 || len(third.Cells) != 12 {
		t.Errorf("third backup: %+v, %d cells; want no new chunk, 12 cells", p, len(third.Cells))
	}
	checkRestore(t, r, third, data3)

	if keys, err := r.t.List(ctx, "chunks/"); err != nil || len(keys) != 15 {
		t.Errorf("chunks in the target: %d (%v), want 15", len(keys), err)
	}
	list, err := r.Manifests(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("manifests: %d, %v", len(list), err)
	}
	for i, want := range []*Manifest{full, inc, third} {
		got := list[i]
		if got.ID != want.ID || got.Parent != want.Parent || got.DesktopName != "work" || got.Owner != "alice" || got.VCPUs != 2 ||
			got.MemoryMiB != 4096 || got.Image != "ubuntu-24.04" || !got.CreatedAt.Equal(want.CreatedAt) ||
			got.DiskBytes != int64(len(data)) || got.CellSize != CellSize || len(got.Cells) != len(want.Cells) {
			t.Errorf("manifest %d: %+v, want %+v", i, got, want)
		}
		distinct := map[string]bool{}
		for _, c := range want.Cells {
			distinct[c.Chunk] = true
		}
		check, err := r.Verify(ctx, got)
		if err != nil || !check.OK || check.Chunks != len(distinct) || check.BackupID != want.ID {
			t.Errorf("verify %s: %+v, %v", want.ID, check, err)
		}
	}
}

func checkRestore(t *testing.T, r *Repo, m *Manifest, want []byte) {
	t.Helper()
	got, err := restoreTo(t, r, m)
	if err != nil {
		t.Fatalf("restore %s: %v", m.ID, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("restore %s: the disk differs from the one backed up", m.ID)
	}
}

func TestRoundTripDir(t *testing.T) {
	r, _, _ := newDirRepo(t)
	roundTrip(t, r)
}

// Two desktops with the same content share every chunk; so do two equal
// cells of one disk.
func TestDedup(t *testing.T) {
	ctx := context.Background()
	r, _, _ := newDirRepo(t)
	data := disk(8, 0)
	copy(data[7*CellSize:], data[0:CellSize]) // cell 7 = cell 0
	_, p, err := r.Backup(ctx, &fakeSource{data: data, cellSize: CellSize}, nil, meta("a"), nil)
	if err != nil || p.Chunks != 6 || p.ChunksNew != 5 {
		t.Fatalf("desktop a: %+v, %v; want 6 chunks, 5 new", p, err)
	}
	mb := meta("b")
	mb.DesktopID, mb.DesktopName = "d-2", "other"
	_, p, err = r.Backup(ctx, &fakeSource{data: bytes.Clone(data), cellSize: CellSize}, nil, mb, nil)
	if err != nil || p.Chunks != 6 || p.ChunksNew != 0 || p.BytesNew != 0 {
		t.Fatalf("desktop b: %+v, %v; want no new chunk", p, err)
	}
}

// Progress is reported while a backup runs and once at the end, with the
// final numbers.
func TestProgress(t *testing.T) {
	r, _, _ := newDirRepo(t)
	var calls []Progress
	src := &fakeSource{data: disk(6, 0), cellSize: CellSize}
	_, p, err := r.Backup(context.Background(), src, nil, meta("p"), func(p Progress) { calls = append(calls, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[len(calls)-1] != p || p.BytesRead != p.ReadTotal {
		t.Errorf("progress calls %+v, result %+v", calls, p)
	}
}

// A disk that grew since its parent backup: the parent's short last cell
// and the new cells are read even when the source calls them unchanged.
func TestResizedDisk(t *testing.T) {
	ctx := context.Background()
	r, _, _ := newDirRepo(t)
	small := disk(4, 1000)
	full, _, err := r.Backup(ctx, &fakeSource{data: small, cellSize: CellSize}, nil, meta("s1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 6*CellSize)
	copy(big, small)
	rand.Read(big[len(small) : len(small)+10]) // the old tail grew into content
	rand.Read(big[5*CellSize:])
	rand.Read(big[CellSize : CellSize+100])
	m2 := meta("s2")
	m2.Parent = full.ID
	inc, p, err := r.Backup(ctx, &fakeSource{data: big, cellSize: CellSize, changed: map[int]bool{1: true}}, full, m2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ReadTotal != 4*CellSize {
		t.Errorf("read %d bytes, want cells 1, 3, 4 and 5", p.ReadTotal)
	}
	checkRestore(t, r, inc, big)
}
