package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Shares keeps share links and desktops' public ports.
type Shares struct{ *conn }

const shareCols = `id, desktop_id, owner, port, hash, read_only, created_by, created_at, expires_at, revoked_at, made_by`

// CreateShare stores a share link.
func (s *Shares) CreateShare(ctx context.Context, l *desktop.Share) error {
	_, err := s.exec(ctx, `INSERT INTO share_links (`+shareCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
		l.ID, l.DesktopID, l.Owner, l.Port, l.Hash, l.ReadOnly, l.CreatedBy, millis(l.CreatedAt), millis(l.ExpiresAt), nullMillis(l.RevokedAt), l.MadeBy)
	if err != nil {
		return fmt.Errorf("create share link: %w", err)
	}
	return nil
}

func scanShare(r interface{ Scan(...any) error }) (*desktop.Share, error) {
	var l desktop.Share
	var created, expires int64
	var revoked sql.NullInt64
	if err := r.Scan(&l.ID, &l.DesktopID, &l.Owner, &l.Port, &l.Hash, &l.ReadOnly, &l.CreatedBy, &created, &expires, &revoked, &l.MadeBy); err != nil {
		return nil, err
	}
	l.CreatedAt, l.ExpiresAt, l.RevokedAt = fromMillis(created), fromMillis(expires), fromNullMillis(revoked)
	return &l, nil
}

// ShareByHash finds the share link whose secret hashes to hash.
func (s *Shares) ShareByHash(ctx context.Context, hash string) (*desktop.Share, error) {
	l, err := scanShare(s.queryRow(ctx, `SELECT `+shareCols+` FROM share_links WHERE hash=?`, hash))
	if err != nil {
		return nil, fmt.Errorf("share link: %w", notFound(err))
	}
	return l, nil
}

// ShareByID finds a share link.
func (s *Shares) ShareByID(ctx context.Context, id string) (*desktop.Share, error) {
	l, err := scanShare(s.queryRow(ctx, `SELECT `+shareCols+` FROM share_links WHERE id=?`, id))
	if err != nil {
		return nil, fmt.Errorf("share link %s: %w", id, notFound(err))
	}
	return l, nil
}

// ListShares lists a desktop's share links, newest first.
func (s *Shares) ListShares(ctx context.Context, desktopID string) ([]*desktop.Share, error) {
	rows, err := s.query(ctx, `SELECT `+shareCols+` FROM share_links WHERE desktop_id=? ORDER BY created_at DESC, id`, desktopID)
	if err != nil {
		return nil, fmt.Errorf("list share links: %w", err)
	}
	defer rows.Close()
	out := []*desktop.Share{}
	for rows.Next() {
		l, err := scanShare(rows)
		if err != nil {
			return nil, fmt.Errorf("list share links: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// RevokeShare revokes a desktop's share link.
func (s *Shares) RevokeShare(ctx context.Context, desktopID, id string, at time.Time) error {
	res, err := s.exec(ctx, `UPDATE share_links SET revoked_at=? WHERE id=? AND desktop_id=? AND revoked_at IS NULL`, millis(at), id, desktopID)
	if err != nil {
		return fmt.Errorf("revoke share link: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("share link %s: %w", id, notFound(sql.ErrNoRows))
	}
	return nil
}

// SetPortPublic makes a desktop's port public, or private again. A port
// made public records the token that made it (madeBy: revoking that token
// makes the port private again) and stops being public at until (nil:
// never), the token's own expiry. Making a public port public again
// records the new maker and expiry.
func (s *Shares) SetPortPublic(ctx context.Context, desktopID string, port int, public bool, actor, madeBy string, until *time.Time, at time.Time) error {
	var err error
	if public {
		_, err = s.exec(ctx, `INSERT INTO public_ports (desktop_id, port, created_by, created_at, made_by, expires_at) VALUES (?,?,?,?,?,?)
ON CONFLICT (desktop_id, port) DO UPDATE SET created_by=excluded.created_by, created_at=excluded.created_at, made_by=excluded.made_by, expires_at=excluded.expires_at`,
			desktopID, port, actor, millis(at), madeBy, nullMillis(until))
	} else {
		_, err = s.exec(ctx, `DELETE FROM public_ports WHERE desktop_id=? AND port=?`, desktopID, port)
	}
	if err != nil {
		return fmt.Errorf("set port %d public=%t: %w", port, public, err)
	}
	return nil
}

// PublicPorts lists a desktop's public ports (those whose maker's expiry
// has passed are not).
func (s *Shares) PublicPorts(ctx context.Context, desktopID string) ([]int, error) {
	rows, err := s.query(ctx, `SELECT port FROM public_ports WHERE desktop_id=? AND (expires_at IS NULL OR expires_at>?) ORDER BY port`,
		desktopID, millis(time.Now()))
	if err != nil {
		return nil, fmt.Errorf("public ports: %w", err)
	}
	defer rows.Close()
	out := []int{}
	for rows.Next() {
		var p int
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ForgetDesktopURLs deletes a deleted desktop's share links and public ports.
func (s *Shares) ForgetDesktopURLs(ctx context.Context, desktopID string) error {
	if _, err := s.exec(ctx, `DELETE FROM share_links WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("forget share links: %w", err)
	}
	if _, err := s.exec(ctx, `DELETE FROM public_ports WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("forget public ports: %w", err)
	}
	return nil
}
