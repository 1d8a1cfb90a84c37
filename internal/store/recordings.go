package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bureau/bureau/internal/recording"
)

const recordingColumns = `id, desktop_id, state, actor, fps, max_seconds, width, height, frames, size_bytes, ended_why, error, started_at, ended_at`

// InsertRecording records a recording that began.
func (s *Store) InsertRecording(ctx context.Context, r *recording.Recording) error {
	_, err := s.exec(ctx, `INSERT INTO recordings (`+recordingColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.DesktopID, r.State, r.Actor, r.FPS, r.MaxSeconds, r.Width, r.Height, r.Frames, r.SizeBytes,
		r.EndedWhy, r.Error, millis(r.StartedAt), nullMillis(r.EndedAt))
	if err != nil {
		return fmt.Errorf("insert recording: %w", err)
	}
	return nil
}

// UpdateRecording records how a recording went on or ended.
func (s *Store) UpdateRecording(ctx context.Context, r *recording.Recording) error {
	_, err := s.exec(ctx, `UPDATE recordings SET state=?, frames=?, size_bytes=?, ended_why=?, error=?, ended_at=? WHERE id=?`,
		r.State, r.Frames, r.SizeBytes, r.EndedWhy, r.Error, nullMillis(r.EndedAt), r.ID)
	if err != nil {
		return fmt.Errorf("update recording: %w", err)
	}
	return nil
}

// GetRecording returns a desktop's recording.
func (s *Store) GetRecording(ctx context.Context, desktopID, id string) (*recording.Recording, error) {
	r, err := scanRecording(s.queryRow(ctx, `SELECT `+recordingColumns+` FROM recordings WHERE desktop_id=? AND id=?`, desktopID, id))
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", id, notFound(err))
	}
	return r, nil
}

// ListRecordings returns a desktop's recordings, oldest first.
func (s *Store) ListRecordings(ctx context.Context, desktopID string) ([]*recording.Recording, error) {
	return s.listRecordings(ctx, `SELECT `+recordingColumns+` FROM recordings WHERE desktop_id=? ORDER BY started_at, id`, desktopID)
}

// UnfinishedRecordings returns the recordings still marked under way.
func (s *Store) UnfinishedRecordings(ctx context.Context) ([]*recording.Recording, error) {
	return s.listRecordings(ctx, `SELECT `+recordingColumns+` FROM recordings WHERE state=?`, recording.StateRecording)
}

func (s *Store) listRecordings(ctx context.Context, q string, args ...any) ([]*recording.Recording, error) {
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
func (s *Store) DeleteRecording(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `DELETE FROM recordings WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete recording: %w", err)
	}
	return nil
}

func scanRecording(row interface{ Scan(...any) error }) (*recording.Recording, error) {
	var r recording.Recording
	var started int64
	var ended sql.NullInt64
	if err := row.Scan(&r.ID, &r.DesktopID, &r.State, &r.Actor, &r.FPS, &r.MaxSeconds, &r.Width, &r.Height,
		&r.Frames, &r.SizeBytes, &r.EndedWhy, &r.Error, &started, &ended); err != nil {
		return nil, err
	}
	r.StartedAt = fromMillis(started)
	if ended.Valid {
		t := fromMillis(ended.Int64)
		r.EndedAt = &t
	}
	return &r, nil
}
