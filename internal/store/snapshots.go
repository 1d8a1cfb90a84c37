package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
)

// Snapshots keeps desktops' snapshots.
type Snapshots struct{ *conn }

const snapshotCols = `id, desktop_id, name, description, scope, memory, parent, size_bytes, created_at, reverted_at`

// ErrSnapshotExists is returned for a second snapshot of the same name.
var ErrSnapshotExists = fmt.Errorf("snapshot name taken: %w", desktop.ErrNameTaken)

// CreateSnapshot records a snapshot that now exists on disk.
func (s *Snapshots) CreateSnapshot(ctx context.Context, sn *desktop.Snapshot) error {
	return insertSnapshot(ctx, s.exec, sn)
}

func insertSnapshot(ctx context.Context, exec execFunc, sn *desktop.Snapshot) error {
	_, err := exec(ctx, `INSERT INTO snapshots (`+snapshotCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		sn.ID, sn.DesktopID, sn.Name, sn.Description, sn.Scope, sn.Memory, sn.Parent, sn.SizeBytes,
		millis(sn.CreatedAt), nullMillis(sn.RevertedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("snapshot %q: %w", sn.Name, ErrSnapshotExists)
	}
	if err != nil {
		return fmt.Errorf("insert snapshot: %w", err)
	}
	return nil
}

// GetSnapshot returns a desktop's snapshot by name.
func (s *Snapshots) GetSnapshot(ctx context.Context, desktopID, name string) (*desktop.Snapshot, error) {
	sn, err := scanSnapshot(s.queryRow(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE desktop_id=? AND name=?`, desktopID, name))
	if err != nil {
		return nil, fmt.Errorf("snapshot %q: %w", name, notFound(err))
	}
	return sn, nil
}

// ListSnapshots returns a desktop's snapshots, oldest first.
func (s *Snapshots) ListSnapshots(ctx context.Context, desktopID string) ([]*desktop.Snapshot, error) {
	rows, err := s.query(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE desktop_id=? ORDER BY created_at, name`, desktopID)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	defer rows.Close()
	out := []*desktop.Snapshot{}
	for rows.Next() {
		sn, err := scanSnapshot(rows)
		if err != nil {
			return nil, fmt.Errorf("list snapshots: %w", err)
		}
		out = append(out, sn)
	}
	return out, rows.Err()
}

// MarkSnapshotReverted records that the desktop was reverted to sn now.
func (s *Snapshots) MarkSnapshotReverted(ctx context.Context, sn *desktop.Snapshot) error {
	_, err := s.exec(ctx, `UPDATE snapshots SET reverted_at=? WHERE id=?`, nullMillis(sn.RevertedAt), sn.ID)
	if err != nil {
		return fmt.Errorf("update snapshot: %w", err)
	}
	return nil
}

// SetSnapshotSize records the space a snapshot took.
func (s *Snapshots) SetSnapshotSize(ctx context.Context, id string, size int64) error {
	if _, err := s.exec(ctx, `UPDATE snapshots SET size_bytes=? WHERE id=?`, size, id); err != nil {
		return fmt.Errorf("update snapshot: %w", err)
	}
	return nil
}

// DeleteSnapshot forgets a snapshot.
func (s *Snapshots) DeleteSnapshot(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `DELETE FROM snapshots WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	return nil
}

// DeleteSnapshots forgets every snapshot of a desktop (its disks are gone).
func (s *Snapshots) DeleteSnapshots(ctx context.Context, desktopID string) error {
	if _, err := s.exec(ctx, `DELETE FROM snapshots WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("delete snapshots: %w", err)
	}
	return nil
}

func scanSnapshot(r interface{ Scan(...any) error }) (*desktop.Snapshot, error) {
	var sn desktop.Snapshot
	var created int64
	var reverted sql.NullInt64
	if err := r.Scan(&sn.ID, &sn.DesktopID, &sn.Name, &sn.Description, &sn.Scope, &sn.Memory, &sn.Parent,
		&sn.SizeBytes, &created, &reverted); err != nil {
		return nil, err
	}
	sn.CreatedAt = fromMillis(created)
	if reverted.Valid {
		t := fromMillis(reverted.Int64)
		sn.RevertedAt = &t
	}
	return &sn, nil
}
