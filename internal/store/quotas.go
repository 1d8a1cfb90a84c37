package store

import (
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Quotas keeps owners' quotas and what they use, and makes the writes
// checked against them.
type Quotas struct{ *conn }

// GetQuota returns an owner's quota; desktop.ErrNotFound when none was set.
func (s *Quotas) GetQuota(ctx context.Context, owner string) (*desktop.Quota, error) {
	return s.getQuota(ctx, s.queryRow, owner)
}

func (s *Quotas) getQuota(ctx context.Context, queryRow queryRowFunc, owner string) (*desktop.Quota, error) {
	var q desktop.Quota
	err := queryRow(ctx, `SELECT owner, plan, max_desktops, max_vcpus, max_memory_mib, max_disk_gib, max_snapshots FROM quotas WHERE owner=?`, owner).
		Scan(&q.Owner, &q.Plan, &q.MaxDesktops, &q.MaxVCPUs, &q.MaxMemoryMiB, &q.MaxDiskGiB, &q.MaxSnapshots)
	if err != nil {
		return nil, fmt.Errorf("quota of %s: %w", owner, notFound(err))
	}
	return &q, nil
}

// PutQuota sets an owner's quota.
func (s *Quotas) PutQuota(ctx context.Context, q *desktop.Quota) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("set quota: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM quotas WHERE owner=?`), q.Owner); err != nil {
		return fmt.Errorf("set quota: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO quotas (owner, plan, max_desktops, max_vcpus, max_memory_mib, max_disk_gib, max_snapshots, updated_at) VALUES (?,?,?,?,?,?,?,?)`),
		q.Owner, q.Plan, q.MaxDesktops, q.MaxVCPUs, q.MaxMemoryMiB, q.MaxDiskGiB, q.MaxSnapshots, millis(time.Now())); err != nil {
		return fmt.Errorf("set quota: %w", err)
	}
	return tx.Commit()
}

// Usage sums what an owner's live desktops and their snapshots use.
func (s *Quotas) Usage(ctx context.Context, owner string) (desktop.Usage, error) {
	return s.usage(ctx, s.queryRow, owner)
}

// usage counts every desktop not deleted, whatever its state: one still
// creating, or failed, holds its place in the quota until it is deleted.
func (s *Quotas) usage(ctx context.Context, queryRow queryRowFunc, owner string) (desktop.Usage, error) {
	var u desktop.Usage
	var snapBytes int64
	err := queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(vcpus),0), COALESCE(SUM(memory_mib),0), COALESCE(SUM(data_disk_gib),0)*1024
FROM desktops WHERE owner=? AND deleted_at IS NULL`, owner).Scan(&u.Desktops, &u.VCPUs, &u.MemoryMiB, &u.DiskMiB)
	if err != nil {
		return u, fmt.Errorf("usage of %s: %w", owner, err)
	}
	err = queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(s.size_bytes),0) FROM snapshots s JOIN desktops d ON d.id = s.desktop_id
WHERE d.owner=? AND d.deleted_at IS NULL`, owner).Scan(&u.Snapshots, &snapBytes)
	if err != nil {
		return u, fmt.Errorf("usage of %s: %w", owner, err)
	}
	u.DiskMiB += int((snapBytes + 1<<20 - 1) >> 20)
	return u, nil
}
