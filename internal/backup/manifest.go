package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"
)

// manifestVersion is the manifest format this package writes.
const manifestVersion = 1

const manifestPrefix = "backups/"

// Manifest describes one complete backup: the desktop it is of and the
// chunk of every cell of its data disk that is not all zeros.
type Manifest struct {
	Version     int       `json:"version"`
	ID          string    `json:"id"`
	DesktopID   string    `json:"desktop_id"`
	DesktopName string    `json:"desktop_name"`
	Owner       string    `json:"owner"`
	Image       string    `json:"image"`
	VCPUs       int       `json:"vcpus"`
	MemoryMiB   int       `json:"memory_mib"`
	Kind        string    `json:"kind"`
	WhyFull     string    `json:"why_full,omitempty"`
	Consistency string    `json:"consistency"`
	Parent      string    `json:"parent,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	DiskBytes   int64     `json:"disk_bytes"`
	CellSize    int64     `json:"cell_size"`
	// Cells are the cells that are not all zeros, ascending by Index.
	Cells []Cell `json:"cells"`
}

// Cell is one non-zero cell of a disk and the chunk holding its content.
type Cell struct {
	Index int    `json:"i"`
	Chunk string `json:"c"`
}

// Meta is what the caller knows of the backup being taken.
type Meta struct {
	ID          string
	DesktopID   string
	DesktopName string
	Owner       string
	Image       string
	VCPUs       int
	MemoryMiB   int
	Kind        string
	WhyFull     string
	Consistency string
	Parent      string
	CreatedAt   time.Time
}

// manifestKey returns the object key of backup id's manifest.
func manifestKey(id string) string { return manifestPrefix + id }

// validBackupID accepts ids that make a single, plain object key.
func validBackupID(id string) bool {
	return id != "" && len(id) <= 200 && !strings.ContainsAny(id, "/\\") && checkKey(id) == nil
}

// putManifest seals m (JSON, zstd, AES-GCM bound to its id) and stores it.
func (r *Repo) putManifest(ctx context.Context, m *Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("manifest of backup %s: %w", m.ID, err)
	}
	obj, _ := seal(r.manifestAEAD, nil, b, nil, "backup:"+m.ID)
	if err := r.t.Put(ctx, manifestKey(m.ID), obj); err != nil {
		return fmt.Errorf("write the manifest of backup %s: %w", m.ID, err)
	}
	return nil
}

// Manifest reads and checks the manifest of backup id; ErrNotFound when
// the target has none.
func (r *Repo) Manifest(ctx context.Context, id string) (*Manifest, error) {
	if !validBackupID(id) {
		return nil, fmt.Errorf("backup id %q: %w", id, ErrNotFound)
	}
	obj, err := r.t.Get(ctx, manifestKey(id))
	if err != nil {
		return nil, fmt.Errorf("manifest of backup %s: %w", id, err)
	}
	b, err := unseal(r.manifestAEAD, nil, obj, "backup:"+id)
	if err != nil {
		return nil, fmt.Errorf("manifest of backup %s: %w", id, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest of backup %s: %w: %v", id, ErrCorrupt, err)
	}
	if err := m.check(id); err != nil {
		return nil, fmt.Errorf("manifest of backup %s: %w: %v", id, ErrCorrupt, err)
	}
	return &m, nil
}

// check validates a decoded manifest.
func (m *Manifest) check(id string) error {
	switch {
	case m.Version != manifestVersion:
		return fmt.Errorf("unknown manifest version %d", m.Version)
	case m.ID != id:
		return fmt.Errorf("it is of backup %q", m.ID)
	case m.CellSize <= 0 || m.DiskBytes < 0:
		return fmt.Errorf("cell size %d, disk bytes %d", m.CellSize, m.DiskBytes)
	}
	cells := (m.DiskBytes + m.CellSize - 1) / m.CellSize
	for i, c := range m.Cells {
		if c.Index < 0 || int64(c.Index) >= cells || (i > 0 && c.Index <= m.Cells[i-1].Index) || !validID(c.Chunk) {
			return fmt.Errorf("bad cell %d: %+v", i, c)
		}
	}
	return nil
}

// Manifests returns the manifests of every backup in the target, oldest
// first.
func (r *Repo) Manifests(ctx context.Context) ([]*Manifest, error) {
	keys, err := r.t.List(ctx, manifestPrefix)
	if err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	var list []*Manifest
	for _, k := range keys {
		id := strings.TrimPrefix(k, manifestPrefix)
		if !validBackupID(id) {
			continue
		}
		m, err := r.Manifest(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since the listing
		}
		if errors.Is(err, ErrCorrupt) {
			slog.Warn("a backup manifest in the target is damaged: left out", "backup", id, "err", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		list = append(list, m)
	}
	sort.SliceStable(list, func(i, j int) bool {
		if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
			return list[i].CreatedAt.Before(list[j].CreatedAt)
		}
		return list[i].ID < list[j].ID
	})
	return list, nil
}
