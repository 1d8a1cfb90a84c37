package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Forget removes a backup's manifest: the backup no longer exists (its
// chunks stay until Sweep finds nothing uses them). Each manifest lists
// every cell, so other backups, incremental ones taken against this one
// included, are unaffected. A manifest already gone is not an error.
func (r *Repo) Forget(ctx context.Context, id string) error {
	if !validBackupID(id) {
		return fmt.Errorf("backup id %q: not a valid id", id)
	}
	if err := r.t.Delete(ctx, manifestKey(id)); err != nil {
		return fmt.Errorf("forget backup %s: %w", id, err)
	}
	return nil
}

// SweepResult is what a sweep found and removed.
type SweepResult struct {
	Manifests int // backups whose chunks were kept
	Chunks    int // chunks in the target before the sweep
	Deleted   int // chunks no backup used, removed
}

// Sweep removes the chunks no manifest uses. Every manifest must read: a
// damaged one stops the sweep (its chunks would otherwise go with it). The
// caller makes sure no backup to this repository is running meanwhile: a
// chunk uploaded for a manifest not written yet is used by nothing.
func (r *Repo) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	keys, err := r.t.List(ctx, manifestPrefix)
	if err != nil {
		return res, fmt.Errorf("list backups: %w", err)
	}
	used := map[string]bool{}
	for _, k := range keys {
		id := strings.TrimPrefix(k, manifestPrefix)
		if !validBackupID(id) {
			continue
		}
		m, err := r.Manifest(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // forgotten since the listing
		}
		if err != nil {
			return res, fmt.Errorf("sweep stopped: backup %s cannot be read, so the chunks it uses are not known: %w", id, err)
		}
		res.Manifests++
		for _, c := range m.Cells {
			used[c.Chunk] = true
		}
	}
	chunks, err := r.t.List(ctx, "chunks/")
	if err != nil {
		return res, fmt.Errorf("list chunks: %w", err)
	}
	res.Chunks = len(chunks)
	for _, k := range chunks {
		if id := path.Base(k); used[id] || !validID(id) {
			continue
		}
		if err := r.t.Delete(ctx, k); err != nil {
			return res, fmt.Errorf("delete unused chunk %s: %w", k, err)
		}
		res.Deleted++
	}
	return res, nil
}
