package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bureau/bureau/internal/recording"
)

// Recordings keeps desktops' screen recordings (internal/recording).
type Recordings struct{ *conn }

const recordingColumns = `id, desktop_id, state, actor, fps, max_seconds, width, height, frames, size_bytes, ended_why, error, started_at, ended_at, kept, owner, desktop_name`

// recordingSelect reads recordings (r) with their desktop (d), which may be
// deleted or gone.
const recordingSelect = `SELECT r.id, r.desktop_id, r.state, r.actor, r.fps, r.max_seconds, r.width, r.height, r.frames, r.size_bytes,
r.ended_why, r.error, r.started_at, r.ended_at, r.kept, r.owner, r.desktop_name, d.id, d.name, d.deleted_at
FROM recordings r LEFT JOIN desktops d ON d.id = r.desktop_id`

// InsertRecording records a recording that began.
func (s *Recordings) InsertRecording(ctx context.Context, r *recording.Recording) error {
	_, err := s.exec(ctx, `INSERT INTO recordings (`+recordingColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.DesktopID, r.State, r.Actor, r.FPS, r.MaxSeconds, r.Width, r.Height, r.Frames, r.SizeBytes,
		r.EndedWhy, r.Error, millis(r.StartedAt), nullMillis(r.EndedAt), r.Kept, r.Owner, r.DesktopName)
	if err != nil {
		return fmt.Errorf("insert recording: %w", err)
	}
	return nil
}

// UpdateRecording records how a recording went on or ended (not whether
// it is kept: SetRecordingKept writes that).
func (s *Recordings) UpdateRecording(ctx context.Context, r *recording.Recording) error {
	_, err := s.exec(ctx, `UPDATE recordings SET state=?, frames=?, size_bytes=?, ended_why=?, error=?, ended_at=? WHERE id=?`,
		r.State, r.Frames, r.SizeBytes, r.EndedWhy, r.Error, nullMillis(r.EndedAt), r.ID)
	if err != nil {
		return fmt.Errorf("update recording: %w", err)
	}
	return nil
}

// GetRecording returns a desktop's recording.
func (s *Recordings) GetRecording(ctx context.Context, desktopID, id string) (*recording.Recording, error) {
	r, err := scanRecording(s.queryRow(ctx, recordingSelect+` WHERE r.desktop_id=? AND r.id=?`, desktopID, id))
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", id, notFound(err))
	}
	return r, nil
}

// FindRecording returns a recording by its id alone (its desktop may be
// gone).
func (s *Recordings) FindRecording(ctx context.Context, id string) (*recording.Recording, error) {
	r, err := scanRecording(s.queryRow(ctx, recordingSelect+` WHERE r.id=?`, id))
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", id, notFound(err))
	}
	return r, nil
}

// ListRecordings returns a desktop's recordings, oldest first.
func (s *Recordings) ListRecordings(ctx context.Context, desktopID string) ([]*recording.Recording, error) {
	return s.listRecordings(ctx, recordingSelect+` WHERE r.desktop_id=? ORDER BY r.started_at, r.id`, desktopID)
}

// OwnerRecordings returns an owner's recordings ("": everyone's), those
// of deleted desktops included, oldest first.
func (s *Recordings) OwnerRecordings(ctx context.Context, owner string) ([]*recording.Recording, error) {
	if owner == "" {
		return s.listRecordings(ctx, recordingSelect+` ORDER BY r.started_at, r.id`)
	}
	return s.listRecordings(ctx, recordingSelect+` WHERE r.owner=? ORDER BY r.started_at, r.id`, owner)
}

// UnfinishedRecordings returns the recordings still marked under way.
func (s *Recordings) UnfinishedRecordings(ctx context.Context) ([]*recording.Recording, error) {
	return s.listRecordings(ctx, recordingSelect+` WHERE r.state=?`, recording.StateRecording)
}

// SetRecordingKept marks a recording kept or not.
func (s *Recordings) SetRecordingKept(ctx context.Context, id string, kept bool) error {
	res, err := s.exec(ctx, `UPDATE recordings SET kept=? WHERE id=?`, kept, id)
	if err != nil {
		return fmt.Errorf("keep recording %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("recording %s: %w", id, errNotFound)
	}
	return nil
}

func (s *Recordings) listRecordings(ctx context.Context, q string, args ...any) ([]*recording.Recording, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list recordings: %w", err)
	}
	defer rows.Close()
	out := []*recording.Recording{}
	for rows.Next() {
		r, err := scanRecording(rows)
		if err != nil {
			return nil, fmt.Errorf("list recordings: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// DeleteRecording forgets a recording.
func (s *Recordings) DeleteRecording(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `DELETE FROM recordings WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete recording: %w", err)
	}
	return nil
}

func scanRecording(row interface{ Scan(...any) error }) (*recording.Recording, error) {
	var r recording.Recording
	var started int64
	var ended, deleted sql.NullInt64
	var desktopID, name sql.NullString
	if err := row.Scan(&r.ID, &r.DesktopID, &r.State, &r.Actor, &r.FPS, &r.MaxSeconds, &r.Width, &r.Height,
		&r.Frames, &r.SizeBytes, &r.EndedWhy, &r.Error, &started, &ended, &r.Kept, &r.Owner, &r.DesktopName,
		&desktopID, &name, &deleted); err != nil {
		return nil, err
	}
	r.DesktopDeleted = !desktopID.Valid || deleted.Valid
	if name.Valid && name.String != "" {
		r.DesktopName = name.String
	}
	r.StartedAt = fromMillis(started)
	if ended.Valid {
		t := fromMillis(ended.Int64)
		r.EndedAt = &t
	}
	return &r, nil
}
