package backup

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Source is a disk at a point in time, cut into cells
// (internal/backup/qcow2.Source implements it).
type Source interface {
	Size() int64
	CellSize() int64
	Cells() int
	// Changed reports whether cell i differs from the parent backup's
	// disk (every cell for a full backup).
	Changed(i int) bool
	// ReadCell reads cell i into buf (at least CellSize long): n bytes,
	// or zero when the cell is known to read as zeros.
	ReadCell(i int, buf []byte) (n int, zero bool, err error)
}

// workers is how many chunks are hashed, sealed and uploaded (or
// fetched, for a restore or a verify) at once.
const workers = 4

// maxCellSize bounds a source's cell size (buffers are that big).
const maxCellSize = 64 << 20

// cellLen is the length of cell i of a disk of size bytes.
func cellLen(i int, cellSize, size int64) int64 {
	return min(cellSize, size-int64(i)*cellSize)
}

// resized is a source whose disk changed size since the parent backup:
// a cell whose length differs from the parent's (the parent's last cell,
// cells past its end) is read whatever the source says.
type resized struct {
	Source
	parentSize int64
}

func (r resized) Changed(i int) bool {
	cs := r.CellSize()
	return r.Source.Changed(i) || cellLen(i, cs, r.Size()) != cellLen(i, cs, r.parentSize)
}

// job is one read cell on its way to a worker.
type job struct {
	index int
	buf   *[]byte
	n     int
}

// emptier is a Source that knows from its map, without reading, that a
// cell reads as zeros (qcow2.Source).
type emptier interface{ Empty(i int) bool }

// Backup backs src up: it reads every changed cell (in order, in this
// goroutine), carries the parent's chunks over for the cells that did not
// change (a nil parent needs every cell changed), uploads the chunks the
// target lacks with a few workers, and writes the manifest last. progress
// (may be nil) is called at most about four times a second and once at
// the end. On an error or a cancelled ctx no manifest is written (chunks
// already uploaded stay: they are content-addressed and harmless).
func (r *Repo) Backup(ctx context.Context, src Source, parent *Manifest, meta Meta, progress func(Progress)) (*Manifest, Progress, error) {
	cs, size, cells := src.CellSize(), src.Size(), src.Cells()
	switch {
	case !validBackupID(meta.ID):
		return nil, Progress{}, fmt.Errorf("backup id %q: not a valid id", meta.ID)
	case cs <= 0 || cs > maxCellSize || size < 0 || int64(cells) != (size+cs-1)/cs:
		return nil, Progress{}, fmt.Errorf("backup %s: a source of %d bytes in %d cells of %d bytes makes no sense", meta.ID, size, cells, cs)
	case parent != nil && parent.CellSize != cs:
		return nil, Progress{}, fmt.Errorf("backup %s: cell size %d differs from the parent backup %s's %d", meta.ID, cs, parent.ID, parent.CellSize)
	}
	if parent == nil {
		for i := range cells {
			if !src.Changed(i) {
				return nil, Progress{}, fmt.Errorf("backup %s: no parent backup, yet cell %d is reported unchanged", meta.ID, i)
			}
		}
	} else if parent.DiskBytes != size {
		src = resized{src, parent.DiskBytes}
	}
	chunks := make([]string, cells)
	var p Progress
	empty, _ := src.(emptier)
	for i := range cells {
		if src.Changed(i) && (empty == nil || !empty.Empty(i)) {
			p.ReadTotal += cellLen(i, cs, size)
		}
	}
	if parent != nil {
		for _, c := range parent.Cells {
			if c.Index < cells && !src.Changed(c.Index) {
				chunks[c.Index] = c.Chunk
				p.Chunks++
			}
		}
	}
	m := newMeter(p, progress)
	err := r.upload(ctx, src, chunks, m)
	if err == nil {
		err = ctx.Err()
	}
	var man *Manifest
	if err == nil {
		man = &Manifest{Version: manifestVersion, ID: meta.ID, DesktopID: meta.DesktopID, DesktopName: meta.DesktopName,
			Owner: meta.Owner, Image: meta.Image, VCPUs: meta.VCPUs, MemoryMiB: meta.MemoryMiB, Kind: meta.Kind,
			WhyFull: meta.WhyFull, Consistency: meta.Consistency, Parent: meta.Parent, CreatedAt: meta.CreatedAt,
			DiskBytes: size, CellSize: cs, Cells: []Cell{}}
		for i, id := range chunks {
			if id != "" {
				man.Cells = append(man.Cells, Cell{Index: i, Chunk: id})
			}
		}
		err = r.putManifest(ctx, man)
	}
	p = m.finish()
	if err != nil {
		return nil, p, fmt.Errorf("backup %s: %w", meta.ID, err)
	}
	return man, p, nil
}

// upload reads the changed cells of src and stores their chunks, filling
// chunks[i] with the id of each non-zero one.
func (r *Repo) upload(ctx context.Context, src Source, chunks []string, m *meter) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cs := src.CellSize()
	pool := sync.Pool{New: func() any { b := make([]byte, cs); return &b }}
	jobs := make(chan job, workers)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]bool{} // chunks this run stored or found stored
	)
	for range workers {
		wg.Go(func() {
			var obj, zbuf []byte
			for j := range jobs {
				plain := (*j.buf)[:j.n]
				id := r.chunkID(plain)
				mu.Lock()
				chunks[j.index] = id
				dup := seen[id]
				seen[id] = true
				mu.Unlock()
				var err error
				stored := 0
				if !dup && ctx.Err() == nil {
					stored, obj, zbuf, err = r.storeChunk(ctx, id, plain, obj, zbuf)
				}
				pool.Put(j.buf)
				if err != nil {
					cancel(err)
					continue
				}
				m.add(func(p *Progress) {
					p.Chunks++
					if stored > 0 {
						p.ChunksNew++
						p.BytesNew += int64(stored)
					}
				})
			}
		})
	}
	err := readIdle(func() error { return readCells(ctx, src, jobs, &pool, m) })
	close(jobs)
	wg.Wait()
	if err == nil {
		err = context.Cause(ctx) // a worker's error, or ctx cancelled
	}
	return err
}

// readCells reads the changed cells in order and hands the non-zero ones
// to the workers.
func readCells(ctx context.Context, src Source, jobs chan<- job, pool *sync.Pool, m *meter) error {
	cs, size := src.CellSize(), src.Size()
	for i := range src.Cells() {
		if !src.Changed(i) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if e, ok := src.(emptier); ok && e.Empty(i) {
			continue // zeros by the map: nothing to read or store
		}
		want := cellLen(i, cs, size)
		buf := pool.Get().(*[]byte)
		n, zero, err := src.ReadCell(i, *buf)
		if err != nil {
			pool.Put(buf)
			return fmt.Errorf("read cell %d of the disk: %w", i, err)
		}
		if !zero && int64(n) != want {
			pool.Put(buf)
			return fmt.Errorf("read cell %d of the disk: %d bytes, want %d", i, n, want)
		}
		m.add(func(p *Progress) { p.BytesRead += want })
		if zero || allZero((*buf)[:n]) {
			pool.Put(buf)
			continue
		}
		select {
		case jobs <- job{index: i, buf: buf, n: n}:
		case <-ctx.Done():
			pool.Put(buf)
			return context.Cause(ctx)
		}
	}
	return nil
}

// storeChunk uploads the chunk id unless the target has it, returning the
// stored object's size (0 when it was there) and the grown buffers.
func (r *Repo) storeChunk(ctx context.Context, id string, plain, obj, zbuf []byte) (int, []byte, []byte, error) {
	key := ChunkKey(id)
	ok, err := r.t.Exists(ctx, key)
	if err != nil || ok {
		return 0, obj, zbuf, err
	}
	obj, zbuf = seal(r.chunkAEAD, obj, plain, zbuf, id)
	if err := r.t.Put(ctx, key, obj); err != nil {
		return 0, obj, zbuf, err
	}
	return len(obj), obj, zbuf, nil
}

var zeroPage [4096]byte

// allZero reports whether b is all zero bytes.
func allZero(b []byte) bool {
	for len(b) > 0 {
		k := min(len(b), len(zeroPage))
		if !bytes.Equal(b[:k], zeroPage[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}
