package store

import (
	"context"
	"fmt"
	"math"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
)

// Steps keeps desktops' step logs (internal/steps).
type Steps struct{ *conn }

const stepColumns = `desktop_id, seq, at, duration_ms, actor, kind, input, result, status, error, thumbs, checkpoint, checkpoint_error`

// AddStep records a step.
func (s *Steps) AddStep(ctx context.Context, st *steps.Step) error {
	_, err := s.exec(ctx, `INSERT INTO steps (`+stepColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		st.DesktopID, st.Seq, millis(st.At), st.DurationMS, st.Actor, st.Kind,
		string(st.Input), string(st.Result), st.Status, st.Error, st.Thumbs(), st.Checkpoint, st.CheckpointError)
	if isUniqueViolation(err) || isPrimaryKeyViolation(err) {
		return fmt.Errorf("step %d of %s: %w", st.Seq, st.DesktopID, steps.ErrTaken)
	}
	if err != nil {
		return fmt.Errorf("add step: %w", err)
	}
	return nil
}

// LastStep is the number of a desktop's newest step (0: none).
func (s *Steps) LastStep(ctx context.Context, desktopID string) (int64, error) {
	var n int64
	if err := s.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM steps WHERE desktop_id=?`, desktopID).Scan(&n); err != nil {
		return 0, fmt.Errorf("last step: %w", err)
	}
	return n, nil
}

// ListSteps returns a page of a desktop's steps, oldest first.
func (s *Steps) ListSteps(ctx context.Context, desktopID string, p steps.Page) ([]*steps.Step, error) {
	before := p.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	q := `SELECT ` + stepColumns + ` FROM steps WHERE desktop_id=? AND seq>? AND seq<? ORDER BY seq LIMIT ?`
	if p.Newest {
		q = `SELECT ` + stepColumns + ` FROM (SELECT ` + stepColumns + ` FROM steps WHERE desktop_id=? AND seq>? AND seq<? ORDER BY seq DESC LIMIT ?) newest ORDER BY seq`
	}
	rows, err := s.query(ctx, q, desktopID, p.After, before, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list steps: %w", err)
	}
	defer rows.Close()
	out := []*steps.Step{}
	for rows.Next() {
		var st steps.Step
		var at int64
		var input, result string
		var thumbs int
		if err := rows.Scan(&st.DesktopID, &st.Seq, &at, &st.DurationMS, &st.Actor, &st.Kind, &input, &result, &st.Status, &st.Error, &thumbs, &st.Checkpoint, &st.CheckpointError); err != nil {
			return nil, fmt.Errorf("list steps: %w", err)
		}
		st.At, st.Input, st.Result = fromMillis(at), []byte(input), []byte(result)
		st.SetThumbs(thumbs)
		out = append(out, &st)
	}
	return out, rows.Err()
}

// GetStep returns one step.
func (s *Steps) GetStep(ctx context.Context, desktopID string, seq int64) (*steps.Step, error) {
	list, err := s.ListSteps(ctx, desktopID, steps.Page{After: seq - 1, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 || list[0].Seq != seq {
		return nil, fmt.Errorf("step %d: %w", seq, desktop.ErrNotFound)
	}
	return list[0], nil
}

// DeleteSteps forgets a desktop's steps numbered up to through (all of
// them with through < 0).
func (s *Steps) DeleteSteps(ctx context.Context, desktopID string, through int64) error {
	q, args := `DELETE FROM steps WHERE desktop_id=? AND seq<=?`, []any{desktopID, through}
	if through < 0 {
		q, args = `DELETE FROM steps WHERE desktop_id=?`, []any{desktopID}
	}
	if _, err := s.exec(ctx, q, args...); err != nil {
		return fmt.Errorf("delete steps: %w", err)
	}
	return nil
}
