package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// ConsoleTokens keeps the tokens that open a desktop's console.
type ConsoleTokens struct{ *conn }

const consoleCols = `id, desktop_id, owner, hash, view_only, created_by, created_at, expires_at, revoked_at, revoke_reason, made_by, screen_only, name`

// CreateConsoleToken stores a console token record.
func (s *ConsoleTokens) CreateConsoleToken(ctx context.Context, t *desktop.ConsoleToken) error {
	_, err := s.exec(ctx, `INSERT INTO console_tokens (`+consoleCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		t.ID, t.DesktopID, t.Owner, t.Hash, t.ViewOnly, t.CreatedBy, millis(t.CreatedAt), millis(t.ExpiresAt),
		nullMillis(t.RevokedAt), t.RevokeReason, t.MadeBy, t.ScreenOnly, t.Name)
	if err != nil {
		return fmt.Errorf("create console token: %w", err)
	}
	return nil
}

// ConsoleTokenByHash finds the console token whose secret hashes to hash.
func (s *ConsoleTokens) ConsoleTokenByHash(ctx context.Context, hash string) (*desktop.ConsoleToken, error) {
	t, err := scanConsoleToken(s.queryRow(ctx, `SELECT `+consoleCols+` FROM console_tokens WHERE hash=?`, hash))
	if err != nil {
		return nil, fmt.Errorf("console token: %w", notFound(err))
	}
	return t, nil
}

// ActiveConsoleTokens lists a desktop's console tokens that are neither
// revoked nor expired at now.
func (s *ConsoleTokens) ActiveConsoleTokens(ctx context.Context, desktopID string, now time.Time) ([]*desktop.ConsoleToken, error) {
	rows, err := s.query(ctx, `SELECT `+consoleCols+` FROM console_tokens
		WHERE desktop_id=? AND revoked_at IS NULL AND expires_at>? ORDER BY created_at, id`, desktopID, millis(now))
	if err != nil {
		return nil, fmt.Errorf("list console tokens: %w", err)
	}
	defer rows.Close()
	var out []*desktop.ConsoleToken
	for rows.Next() {
		t, err := scanConsoleToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list console tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeConsoleToken revokes one of a desktop's console tokens.
func (s *ConsoleTokens) RevokeConsoleToken(ctx context.Context, desktopID, id, reason string, at time.Time) error {
	res, err := s.exec(ctx, `UPDATE console_tokens SET revoked_at=?, revoke_reason=?
		WHERE id=? AND desktop_id=? AND revoked_at IS NULL`, millis(at), reason, id, desktopID)
	if err != nil {
		return fmt.Errorf("revoke console token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("console token %s: %w", id, desktop.ErrNotFound)
	}
	return nil
}

// RevokeConsoleTokens revokes every live console token of a desktop and
// returns how many it revoked.
func (s *ConsoleTokens) RevokeConsoleTokens(ctx context.Context, desktopID, reason string, at time.Time) (int, error) {
	res, err := s.exec(ctx, `UPDATE console_tokens SET revoked_at=?, revoke_reason=?
		WHERE desktop_id=? AND revoked_at IS NULL AND expires_at>?`, millis(at), reason, desktopID, millis(at))
	if err != nil {
		return 0, fmt.Errorf("revoke console tokens: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// PruneConsoleTokens deletes console tokens that expired or were revoked
// before cutoff; they can never be used again.
func (s *ConsoleTokens) PruneConsoleTokens(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.exec(ctx, `DELETE FROM console_tokens WHERE expires_at<? OR revoked_at<?`, millis(cutoff), millis(cutoff))
	if err != nil {
		return 0, fmt.Errorf("prune console tokens: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func scanConsoleToken(r scanner) (*desktop.ConsoleToken, error) {
	var t desktop.ConsoleToken
	var created, expires int64
	var revoked sql.NullInt64
	if err := r.Scan(&t.ID, &t.DesktopID, &t.Owner, &t.Hash, &t.ViewOnly, &t.CreatedBy, &created, &expires, &revoked, &t.RevokeReason, &t.MadeBy, &t.ScreenOnly, &t.Name); err != nil {
		return nil, err
	}
	t.CreatedAt, t.ExpiresAt, t.RevokedAt = fromMillis(created), fromMillis(expires), fromNullMillis(revoked)
	return &t, nil
}
