package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/loop"
)

// Loop keeps the records of people in the loop (internal/loop): help and
// approval requests, and desktops' approval policies.
type Loop struct{ *conn }

var _ loop.Store = (*Store)(nil)

const requestCols = `id, desktop_id, owner, kind, status, question, choices, action, screenshot, asked_by, asked_at, expires_at,
gated, decided_by, decided_at, answer, choice, reason`

// defaultRequestLimit bounds a list of requests that does not say.
const defaultRequestLimit = 200

// AddRequest stores a new request.
func (s *Loop) AddRequest(ctx context.Context, r *loop.Request) error {
	choices, action, err := requestJSON(r)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO loop_requests (`+requestCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.DesktopID, r.Owner, r.Kind, r.Status, r.Question, choices, action, r.Screenshot, r.AskedBy,
		millis(r.AskedAt), millis(r.ExpiresAt), r.Gated, r.DecidedBy, nullMillis(r.DecidedAt), r.Answer, r.Choice, r.Reason)
	if err != nil {
		return fmt.Errorf("add request: %w", err)
	}
	return nil
}

// requestJSON is how a request's choices and action are kept ("" for
// none).
func requestJSON(r *loop.Request) (choices, action string, err error) {
	if len(r.Choices) > 0 {
		b, err := json.Marshal(r.Choices)
		if err != nil {
			return "", "", fmt.Errorf("request %s: choices: %w", r.ID, err)
		}
		choices = string(b)
	}
	if r.Action != nil {
		b, err := json.Marshal(r.Action)
		if err != nil {
			return "", "", fmt.Errorf("request %s: action: %w", r.ID, err)
		}
		action = string(b)
	}
	return choices, action, nil
}

// GetRequest returns one request (loop.ErrNotFound: none by that id).
func (s *Loop) GetRequest(ctx context.Context, id string) (*loop.Request, error) {
	r, err := scanRequest(s.queryRow(ctx, `SELECT `+requestCols+` FROM loop_requests WHERE id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("request %s: %w", id, loop.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

// ListRequests lists the requests f selects, newest first.
func (s *Loop) ListRequests(ctx context.Context, f loop.Filter) ([]*loop.Request, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{
		{"owner", f.Owner}, {"desktop_id", f.DesktopID}, {"kind", f.Kind}, {"status", f.Status},
	} {
		if c.v != "" {
			where = append(where, c.col+"=?")
			args = append(args, c.v)
		}
	}
	q := `SELECT ` + requestCols + ` FROM loop_requests`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultRequestLimit
	}
	rows, err := s.query(ctx, q+` ORDER BY asked_at DESC, id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	defer rows.Close()
	out := []*loop.Request{}
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("list requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// DecideRequest stores how r ended if the stored request is still
// pending: of two deciders, only the first gets through. Otherwise it
// returns the stored request and loop.ErrAlreadyDecided.
func (s *Loop) DecideRequest(ctx context.Context, r *loop.Request) (*loop.Request, error) {
	res, err := s.exec(ctx, `UPDATE loop_requests SET status=?, decided_by=?, decided_at=?, answer=?, choice=?, reason=?
		WHERE id=? AND status=?`, r.Status, r.DecidedBy, nullMillis(r.DecidedAt), r.Answer, r.Choice, r.Reason,
		r.ID, loop.StatusPending)
	if err != nil {
		return nil, fmt.Errorf("decide request %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("decide request %s: %w", r.ID, err)
	} else if n == 0 {
		stored, err := s.GetRequest(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		return stored, fmt.Errorf("request %s is %s: %w", r.ID, stored.Status, loop.ErrAlreadyDecided)
	}
	out := *r
	return &out, nil
}

func scanRequest(row scanner) (*loop.Request, error) {
	var r loop.Request
	var choices, action string
	var asked, expires int64
	var decided sql.NullInt64
	if err := row.Scan(&r.ID, &r.DesktopID, &r.Owner, &r.Kind, &r.Status, &r.Question, &choices, &action, &r.Screenshot,
		&r.AskedBy, &asked, &expires, &r.Gated, &r.DecidedBy, &decided, &r.Answer, &r.Choice, &r.Reason); err != nil {
		return nil, err
	}
	r.AskedAt, r.ExpiresAt, r.DecidedAt = fromMillis(asked), fromMillis(expires), fromNullMillis(decided)
	if choices != "" {
		if err := json.Unmarshal([]byte(choices), &r.Choices); err != nil {
			return nil, fmt.Errorf("request %s: choices: %w", r.ID, err)
		}
	}
	if action != "" {
		r.Action = &loop.Action{}
		if err := json.Unmarshal([]byte(action), r.Action); err != nil {
			return nil, fmt.Errorf("request %s: action: %w", r.ID, err)
		}
	}
	return &r, nil
}

// ApprovalPolicy is a desktop's approval policy as stored (nil: none).
func (s *Loop) ApprovalPolicy(ctx context.Context, desktopID string) ([]byte, error) {
	var p string
	err := s.queryRow(ctx, `SELECT policy FROM approval_policies WHERE desktop_id=?`, desktopID).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval policy of %s: %w", desktopID, err)
	}
	return []byte(p), nil
}

// SetApprovalPolicy sets a desktop's approval policy (replacing the one
// it had).
func (s *Loop) SetApprovalPolicy(ctx context.Context, desktopID string, policy []byte) error {
	_, err := s.exec(ctx, `INSERT INTO approval_policies (desktop_id, policy, updated_at) VALUES (?,?,?)
		ON CONFLICT (desktop_id) DO UPDATE SET policy=excluded.policy, updated_at=excluded.updated_at`,
		desktopID, string(policy), millis(time.Now()))
	if err != nil {
		return fmt.Errorf("set approval policy: %w", err)
	}
	return nil
}

// DeleteApprovalPolicy removes a desktop's approval policy (none is not
// an error).
func (s *Loop) DeleteApprovalPolicy(ctx context.Context, desktopID string) error {
	if _, err := s.exec(ctx, `DELETE FROM approval_policies WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("delete approval policy: %w", err)
	}
	return nil
}
