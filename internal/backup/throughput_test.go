package backup

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/backup/backuptest"
)

// TestThroughput backs a 256 MiB disk (half random, a quarter zeros, a
// quarter half-random) up to a directory and to S3 and restores it, and
// logs the rates; it asserts none (the race detector slows it down).
func TestThroughput(t *testing.T) {
	const cells = 256
	data := make([]byte, cells*CellSize)
	for i := range cells {
		c := data[i*CellSize : (i+1)*CellSize]
		switch i % 4 {
		case 0, 1:
			rand.Read(c)
		case 3:
			rand.Read(c[:CellSize/2])
		}
	}
	src := &fakeSource{data: data, cellSize: CellSize}
	ctx := context.Background()
	mbps := func(n int64, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

	dirRepo, _, _ := newDirRepo(t)
	loc := backuptest.StartS3(t)
	s3t, err := NewS3(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	s3Repo, err := Open(ctx, s3t, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		r    *Repo
	}{{"directory", dirRepo}, {"s3 (SeaweedFS on loopback)", s3Repo}} {
		begun := time.Now()
		m, p, err := c.r.Backup(ctx, src, nil, meta("tp"), nil)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(begun)
		t.Logf("backup to %s: %d MiB disk in %s: %.0f MB/s read, %d chunks (%d new, %.0f MiB stored)",
			c.name, len(data)>>20, took.Round(time.Millisecond), mbps(p.BytesRead, took), p.Chunks, p.ChunksNew, float64(p.BytesNew)/(1<<20))

		f, err := os.Create(filepath.Join(t.TempDir(), "disk.raw"))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(m.DiskBytes)
		begun = time.Now()
		if err := c.r.Restore(ctx, m, f, nil); err != nil {
			t.Fatal(err)
		}
		took = time.Since(begun)
		f.Close()
		t.Logf("restore from %s: %d cells in %s: %.0f MB/s written", c.name, len(m.Cells), took.Round(time.Millisecond), mbps(int64(len(m.Cells))*CellSize, took))
	}
}
