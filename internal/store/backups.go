package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// BackupRecords keeps backup targets and the backups taken to them.
type BackupRecords struct{ s *Store }

// Backups returns the store's backup records.
func (s *Store) Backups() *BackupRecords { return &BackupRecords{s: s} }

// targetLocation is a target's location as kept in the database (the S3
// secret key is kept sealed beside it, never here).
type targetLocation struct {
	Dir       string `json:"dir,omitempty"`
	Endpoint  string `json:"endpoint,omitempty"`
	Bucket    string `json:"bucket,omitempty"`
	Prefix    string `json:"prefix,omitempty"`
	Region    string `json:"region,omitempty"`
	AccessKey string `json:"access_key,omitempty"`
	Insecure  bool   `json:"insecure,omitempty"`
}

const targetCols = `id, name, kind, location, secret_sealed, created_at, created_by`

// CreateTarget records a target; sealed is its secret key, encrypted.
func (r *BackupRecords) CreateTarget(ctx context.Context, t *desktop.BackupTarget, sealed string) error {
	loc, err := json.Marshal(targetLocation{Dir: t.Dir, Endpoint: t.S3.Endpoint, Bucket: t.S3.Bucket, Prefix: t.S3.Prefix,
		Region: t.S3.Region, AccessKey: t.S3.AccessKey, Insecure: t.S3.Insecure})
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO backup_targets (`+targetCols+`) VALUES (?,?,?,?,?,?,?)`,
		t.ID, t.Name, t.Kind, string(loc), sealed, millis(t.CreatedAt), t.CreatedBy)
	if isUniqueViolation(err) {
		return fmt.Errorf("backup target %q: %w", t.Name, desktop.ErrNameTaken)
	}
	if err != nil {
		return fmt.Errorf("insert backup target: %w", err)
	}
	return nil
}

// Target returns a target by id or name, and its sealed secret key.
func (r *BackupRecords) Target(ctx context.Context, idOrName string) (*desktop.BackupTarget, string, error) {
	t, sealed, err := scanTarget(r.s.queryRow(ctx, `SELECT `+targetCols+` FROM backup_targets WHERE id=? OR name=?`, idOrName, idOrName))
	if err != nil {
		return nil, "", fmt.Errorf("backup target %q: %w", idOrName, notFound(err))
	}
	return t, sealed, nil
}

// Targets lists the targets by name (without their secret keys).
func (r *BackupRecords) Targets(ctx context.Context) ([]*desktop.BackupTarget, error) {
	rows, err := r.s.query(ctx, `SELECT `+targetCols+` FROM backup_targets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list backup targets: %w", err)
	}
	defer rows.Close()
	out := []*desktop.BackupTarget{}
	for rows.Next() {
		t, _, err := scanTarget(rows)
		if err != nil {
			return nil, fmt.Errorf("list backup targets: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// DeleteTarget forgets a target and the backups recorded in it.
func (r *BackupRecords) DeleteTarget(ctx context.Context, id string) error {
	if _, err := r.s.exec(ctx, `DELETE FROM backups WHERE target_id=?`, id); err != nil {
		return fmt.Errorf("delete backups of target: %w", err)
	}
	if _, err := r.s.exec(ctx, `DELETE FROM backup_targets WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete backup target: %w", err)
	}
	return nil
}

func scanTarget(row scanner) (*desktop.BackupTarget, string, error) {
	var t desktop.BackupTarget
	var loc, sealed string
	var created int64
	if err := row.Scan(&t.ID, &t.Name, &t.Kind, &loc, &sealed, &created, &t.CreatedBy); err != nil {
		return nil, "", err
	}
	var l targetLocation
	if err := json.Unmarshal([]byte(loc), &l); err != nil {
		return nil, "", fmt.Errorf("backup target %s location: %w", t.Name, err)
	}
	t.Dir = l.Dir
	t.S3 = desktop.S3Location{Endpoint: l.Endpoint, Bucket: l.Bucket, Prefix: l.Prefix, Region: l.Region, AccessKey: l.AccessKey, Insecure: l.Insecure}
	t.CreatedAt = fromMillis(created)
	return &t, sealed, nil
}

const backupCols = `id, desktop_id, desktop_name, owner, target_id, state, kind, why_full, consistency, parent, mark,
	disk_bytes, image, vcpus, memory_mib, bytes_read, read_total, chunks, chunks_new, bytes_new, started_at, finished_at, error`

// CreateBackup records a backup as it starts.
func (r *BackupRecords) CreateBackup(ctx context.Context, b *desktop.Backup) error {
	_, err := r.s.exec(ctx, `INSERT INTO backups (`+backupCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		b.ID, b.DesktopID, b.DesktopName, b.Owner, b.TargetID, b.State, b.Kind, b.WhyFull, b.Consistency, b.Parent, b.Mark,
		b.DiskBytes, b.Image, b.VCPUs, b.MemoryMiB, b.BytesRead, b.ReadTotal, b.Chunks, b.ChunksNew, b.BytesNew,
		millis(b.StartedAt), nullMillis(b.FinishedAt), b.Error)
	if err != nil {
		return fmt.Errorf("insert backup: %w", err)
	}
	return nil
}

// UpdateBackup records a backup's progress, kind and outcome.
func (r *BackupRecords) UpdateBackup(ctx context.Context, b *desktop.Backup) error {
	_, err := r.s.exec(ctx, `UPDATE backups SET state=?, kind=?, why_full=?, consistency=?, parent=?, mark=?, disk_bytes=?,
		bytes_read=?, read_total=?, chunks=?, chunks_new=?, bytes_new=?, finished_at=?, error=? WHERE id=?`,
		b.State, b.Kind, b.WhyFull, b.Consistency, b.Parent, b.Mark, b.DiskBytes, b.BytesRead, b.ReadTotal,
		b.Chunks, b.ChunksNew, b.BytesNew, nullMillis(b.FinishedAt), b.Error, b.ID)
	if err != nil {
		return fmt.Errorf("update backup: %w", err)
	}
	return nil
}

// GetBackup returns one backup.
func (r *BackupRecords) GetBackup(ctx context.Context, id string) (*desktop.Backup, error) {
	b, err := scanBackup(r.s.queryRow(ctx, `SELECT `+backupCols+` FROM backups WHERE id=?`, id))
	if err != nil {
		return nil, fmt.Errorf("backup %q: %w", id, notFound(err))
	}
	return b, nil
}

// ListBackups returns backups, newest first.
func (r *BackupRecords) ListBackups(ctx context.Context, f desktop.BackupFilter) ([]*desktop.Backup, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"owner", f.Owner}, {"desktop_id", f.DesktopID}, {"target_id", f.TargetID}, {"state", f.State}} {
		if c.v != "" {
			where = append(where, c.col+"=?")
			args = append(args, c.v)
		}
	}
	q := `SELECT ` + backupCols + ` FROM backups`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := r.s.query(ctx, q+` ORDER BY started_at DESC, id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	defer rows.Close()
	out := []*desktop.Backup{}
	for rows.Next() {
		b, err := scanBackup(rows)
		if err != nil {
			return nil, fmt.Errorf("list backups: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// FailRunning marks every backup still running as failed with why (a
// bureau that starts again finds those its last run left half-done).
func (r *BackupRecords) FailRunning(ctx context.Context, why string) (int64, error) {
	res, err := r.s.exec(ctx, `UPDATE backups SET state=?, error=?, finished_at=? WHERE state=?`,
		desktop.BackupFailed, why, millis(time.Now()), desktop.BackupRunning)
	if err != nil {
		return 0, fmt.Errorf("fail running backups: %w", err)
	}
	return res.RowsAffected()
}

func scanBackup(row scanner) (*desktop.Backup, error) {
	var b desktop.Backup
	var started int64
	var finished sql.NullInt64
	if err := row.Scan(&b.ID, &b.DesktopID, &b.DesktopName, &b.Owner, &b.TargetID, &b.State, &b.Kind, &b.WhyFull,
		&b.Consistency, &b.Parent, &b.Mark, &b.DiskBytes, &b.Image, &b.VCPUs, &b.MemoryMiB, &b.BytesRead, &b.ReadTotal,
		&b.Chunks, &b.ChunksNew, &b.BytesNew, &started, &finished, &b.Error); err != nil {
		return nil, err
	}
	b.StartedAt = fromMillis(started)
	if finished.Valid {
		t := fromMillis(finished.Int64)
		b.FinishedAt = &t
	}
	return &b, nil
}
