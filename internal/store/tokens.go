package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Tokens keeps API tokens.
type Tokens struct{ *conn }

const tokenCols = `id, owner, name, hash, scope, created_at, last_used_at, expires_at, revoked_at, desktop_id, computer_only, parent_id, is_session, role, member, member_scope`

// CreateToken stores a token record.
func (s *Tokens) CreateToken(ctx context.Context, t *desktop.Token) error {
	_, err := s.exec(ctx, `INSERT INTO api_tokens (`+tokenCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		t.ID, t.Owner, t.Name, t.Hash, t.Scope, millis(t.CreatedAt), nullMillis(t.LastUsedAt), nullMillis(t.ExpiresAt), nullMillis(t.RevokedAt),
		t.DesktopID, t.ComputerOnly, t.ParentID, t.Session, t.Role, t.Member, t.MemberScope)
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// TokenByHash finds the token whose secret hashes to hash.
func (s *Tokens) TokenByHash(ctx context.Context, hash string) (*desktop.Token, error) {
	t, err := scanToken(s.queryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE hash=?`, hash))
	if err != nil {
		return nil, fmt.Errorf("token: %w", notFound(err))
	}
	return t, nil
}

// TokenByID finds a token by its id.
func (s *Tokens) TokenByID(ctx context.Context, id string) (*desktop.Token, error) {
	t, err := scanToken(s.queryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE id=?`, id))
	if err != nil {
		return nil, fmt.Errorf("token %s: %w", id, notFound(err))
	}
	return t, nil
}

// TouchToken records that a token was just used.
func (s *Tokens) TouchToken(ctx context.Context, id string, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE api_tokens SET last_used_at=? WHERE id=?`, millis(at), id)
	return err
}

// ListTokens lists tokens, of one owner or ("" ) of all.
func (s *Tokens) ListTokens(ctx context.Context, owner string) ([]*desktop.Token, error) {
	query, args := `SELECT `+tokenCols+` FROM api_tokens`, []any{}
	if owner != "" {
		query += ` WHERE owner=?`
		args = append(args, owner)
	}
	return s.listTokens(ctx, query, args)
}

// ListTeamTokensOf lists the team tokens that act for member (a person's
// tokens for the teams they are in), oldest first.
func (s *Tokens) ListTeamTokensOf(ctx context.Context, member string) ([]*desktop.Token, error) {
	return s.listTokens(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE member=? AND role<>''`, []any{member})
}

func (s *Tokens) listTokens(ctx context.Context, query string, args []any) ([]*desktop.Token, error) {
	rows, err := s.query(ctx, query+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []*desktop.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// CountTokens counts tokens ever created, revoked ones included.
func (s *Tokens) CountTokens(ctx context.Context) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM api_tokens`).Scan(&n)
	return n, err
}

// RevokeToken revokes a token and, transitively, the tokens it minted,
// and with them what any of those made: console tokens and share links are
// revoked and public ports made private again, in one transaction. It
// returns the ids of the tokens it revoked.
func (s *Tokens) RevokeToken(ctx context.Context, id string, at time.Time) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("revoke token: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, s.q(`WITH RECURSIVE tree(id) AS (
			SELECT id FROM api_tokens WHERE id=?
			UNION SELECT t.id FROM api_tokens t JOIN tree ON t.parent_id=tree.id)
		SELECT t.id FROM api_tokens t JOIN tree ON t.id=tree.id WHERE t.revoked_at IS NULL ORDER BY t.id`), id)
	if err != nil {
		return nil, fmt.Errorf("revoke token: %w", err)
	}
	var ids []string
	for rows.Next() {
		var tid string
		if err := rows.Scan(&tid); err != nil {
			rows.Close()
			return nil, fmt.Errorf("revoke token: %w", err)
		}
		ids = append(ids, tid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("revoke token: %w", err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("token %s: %w", id, desktop.ErrNotFound)
	}
	in, args := inList(ids)
	for _, st := range []struct {
		query string
		args  []any
	}{
		{`UPDATE api_tokens SET revoked_at=? WHERE revoked_at IS NULL AND id IN ` + in, append([]any{millis(at)}, args...)},
		{`UPDATE console_tokens SET revoked_at=?, revoke_reason='the token that made it was revoked' WHERE revoked_at IS NULL AND made_by IN ` + in, append([]any{millis(at)}, args...)},
		{`UPDATE share_links SET revoked_at=? WHERE revoked_at IS NULL AND made_by IN ` + in, append([]any{millis(at)}, args...)},
		{`DELETE FROM public_ports WHERE made_by IN ` + in, args},
	} {
		if _, err := tx.ExecContext(ctx, s.q(st.query), st.args...); err != nil {
			return nil, fmt.Errorf("revoke token: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("revoke token: %w", err)
	}
	return ids, nil
}

// inList is "(?,?,…)" for values, and values as arguments.
func inList(values []string) (string, []any) {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?,", len(values)), ",") + ")", args
}

func scanToken(r scanner) (*desktop.Token, error) {
	var t desktop.Token
	var created int64
	var used, expires, revoked sql.NullInt64
	if err := r.Scan(&t.ID, &t.Owner, &t.Name, &t.Hash, &t.Scope, &created, &used, &expires, &revoked, &t.DesktopID, &t.ComputerOnly, &t.ParentID, &t.Session,
		&t.Role, &t.Member, &t.MemberScope); err != nil {
		return nil, err
	}
	t.CreatedAt = fromMillis(created)
	t.LastUsedAt, t.ExpiresAt, t.RevokedAt = fromNullMillis(used), fromNullMillis(expires), fromNullMillis(revoked)
	return &t, nil
}
