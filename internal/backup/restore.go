package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// parallel calls fn for every item with a few workers; the first error
// cancels the rest and is returned.
func parallel[T any](ctx context.Context, items []T, fn func(ctx context.Context, item T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ch := make(chan T)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for it := range ch {
				if err := fn(ctx, it); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for _, it := range items {
		select {
		case ch <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	return context.Cause(ctx)
}

// Restore writes the disk image of m into w, a file the caller created
// and truncated to m.DiskBytes: each cell's chunk is fetched, checked,
// decrypted, decompressed and written at Index*CellSize by a few workers
// at once (w must take concurrent WriteAt calls at distinct offsets, as
// an *os.File does). Cells not in m are left alone: holes read as zeros.
// progress (may be nil) is called at most about four times a second and
// once at the end; BytesRead counts bytes written.
func (r *Repo) Restore(ctx context.Context, m *Manifest, w io.WriterAt, progress func(Progress)) error {
	if err := m.check(m.ID); err != nil {
		return fmt.Errorf("restore backup %s: %w", m.ID, err)
	}
	var p Progress
	for _, c := range m.Cells {
		p.ReadTotal += cellLen(c.Index, m.CellSize, m.DiskBytes)
	}
	meter := newMeter(p, progress)
	bufs := sync.Pool{New: func() any { return new([]byte) }}
	err := parallel(ctx, m.Cells, func(ctx context.Context, c Cell) error {
		want := cellLen(c.Index, m.CellSize, m.DiskBytes)
		obj, err := r.t.Get(ctx, ChunkKey(c.Chunk))
		if err != nil {
			return fmt.Errorf("cell %d: chunk %s: %w", c.Index, c.Chunk, err)
		}
		buf := bufs.Get().(*[]byte)
		defer bufs.Put(buf)
		plain, err := r.openChunk(c.Chunk, obj, (*buf)[:0])
		if err != nil {
			return fmt.Errorf("cell %d: %w", c.Index, err)
		}
		*buf = plain
		if int64(len(plain)) != want {
			return fmt.Errorf("cell %d: chunk %s holds %d bytes, the cell %d", c.Index, c.Chunk, len(plain), want)
		}
		if _, err := w.WriteAt(plain, int64(c.Index)*m.CellSize); err != nil {
			return fmt.Errorf("cell %d: write: %w", c.Index, err)
		}
		meter.add(func(p *Progress) { p.BytesRead += want; p.Chunks++ })
		return nil
	})
	meter.finish()
	if err != nil {
		return fmt.Errorf("restore backup %s: %w", m.ID, err)
	}
	return nil
}

// Verify reads back every distinct chunk m uses and checks it: those the
// target lacks are listed as missing, those that fail to authenticate,
// decompress or hash back to their id as corrupt (both sorted by id). Any
// other failure (the target unreachable, …) is returned as an error.
func (r *Repo) Verify(ctx context.Context, m *Manifest) (*desktop.BackupCheck, error) {
	begun := time.Now()
	var ids []string
	seen := map[string]bool{}
	for _, c := range m.Cells {
		if !seen[c.Chunk] {
			seen[c.Chunk] = true
			ids = append(ids, c.Chunk)
		}
	}
	check := &desktop.BackupCheck{BackupID: m.ID, Chunks: len(ids), Missing: []string{}, Corrupt: []string{}}
	var mu sync.Mutex
	err := parallel(ctx, ids, func(ctx context.Context, id string) error {
		_, err := r.Chunk(ctx, id)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, ErrNotFound):
			check.Missing = append(check.Missing, id)
		case errors.Is(err, ErrCorrupt):
			check.Corrupt = append(check.Corrupt, id)
		case err != nil:
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify backup %s: %w", m.ID, err)
	}
	slices.Sort(check.Missing)
	slices.Sort(check.Corrupt)
	check.OK = len(check.Missing) == 0 && len(check.Corrupt) == 0
	check.Took = time.Since(begun)
	return check, nil
}
