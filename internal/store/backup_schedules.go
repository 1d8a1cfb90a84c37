package store

import (
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

const scheduleCols = `desktop_id, target_id, every_minutes, keep_last, keep_hourly, keep_daily, keep_weekly, next_at, updated_at, updated_by`

// PutSchedule sets a desktop's backup schedule (replacing the one it had).
func (r *BackupRecords) PutSchedule(ctx context.Context, s *desktop.BackupSchedule) error {
	_, err := r.s.exec(ctx, `INSERT INTO backup_schedules (`+scheduleCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (desktop_id) DO UPDATE SET target_id=excluded.target_id, every_minutes=excluded.every_minutes,
		keep_last=excluded.keep_last, keep_hourly=excluded.keep_hourly, keep_daily=excluded.keep_daily,
		keep_weekly=excluded.keep_weekly, next_at=excluded.next_at, updated_at=excluded.updated_at, updated_by=excluded.updated_by`,
		s.DesktopID, s.TargetID, s.EveryMinutes, s.KeepLast, s.KeepHourly, s.KeepDaily, s.KeepWeekly,
		millis(s.NextAt), millis(s.UpdatedAt), s.UpdatedBy)
	if err != nil {
		return fmt.Errorf("put backup schedule: %w", err)
	}
	return nil
}

// Schedule returns a desktop's backup schedule.
func (r *BackupRecords) Schedule(ctx context.Context, desktopID string) (*desktop.BackupSchedule, error) {
	s, err := scanSchedule(r.s.queryRow(ctx, `SELECT `+scheduleCols+` FROM backup_schedules WHERE desktop_id=?`, desktopID))
	if err != nil {
		return nil, fmt.Errorf("backup schedule of %s: %w", desktopID, notFound(err))
	}
	return s, nil
}

// DeleteSchedule removes a desktop's backup schedule (none is not an error).
func (r *BackupRecords) DeleteSchedule(ctx context.Context, desktopID string) error {
	if _, err := r.s.exec(ctx, `DELETE FROM backup_schedules WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("delete backup schedule: %w", err)
	}
	return nil
}

// DueSchedules returns the schedules whose next backup is due at now.
func (r *BackupRecords) DueSchedules(ctx context.Context, now time.Time) ([]*desktop.BackupSchedule, error) {
	rows, err := r.s.query(ctx, `SELECT `+scheduleCols+` FROM backup_schedules WHERE next_at<=? ORDER BY next_at`, millis(now))
	if err != nil {
		return nil, fmt.Errorf("due backup schedules: %w", err)
	}
	defer rows.Close()
	var out []*desktop.BackupSchedule
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("due backup schedules: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ScheduleNext records when a desktop's next scheduled backup is due.
func (r *BackupRecords) ScheduleNext(ctx context.Context, desktopID string, at time.Time) error {
	if _, err := r.s.exec(ctx, `UPDATE backup_schedules SET next_at=? WHERE desktop_id=?`, millis(at), desktopID); err != nil {
		return fmt.Errorf("next backup of %s: %w", desktopID, err)
	}
	return nil
}

// DeleteBackup forgets one backup.
func (r *BackupRecords) DeleteBackup(ctx context.Context, id string) error {
	if _, err := r.s.exec(ctx, `DELETE FROM backups WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete backup: %w", err)
	}
	return nil
}

func scanSchedule(row scanner) (*desktop.BackupSchedule, error) {
	var s desktop.BackupSchedule
	var next, updated int64
	if err := row.Scan(&s.DesktopID, &s.TargetID, &s.EveryMinutes, &s.KeepLast, &s.KeepHourly, &s.KeepDaily, &s.KeepWeekly,
		&next, &updated, &s.UpdatedBy); err != nil {
		return nil, err
	}
	s.NextAt, s.UpdatedAt = fromMillis(next), fromMillis(updated)
	return &s, nil
}
