package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Secrets keeps sealed secrets and the desktops each is granted to.
type Secrets struct{ *conn }

var b64 = base64.StdEncoding

// PutSecret creates or replaces a secret's sealed value.
func (s *Secrets) PutSecret(ctx context.Context, owner, desktopID, name string, nonce, sealed []byte, at time.Time) (*desktop.Secret, error) {
	_, err := s.exec(ctx, `INSERT INTO secrets (owner, desktop_id, name, nonce, ciphertext, created_at, updated_at) VALUES (?,?,?,?,?,?,?)
ON CONFLICT (owner, desktop_id, name) DO UPDATE SET nonce=excluded.nonce, ciphertext=excluded.ciphertext, updated_at=excluded.updated_at`,
		owner, desktopID, name, b64.EncodeToString(nonce), b64.EncodeToString(sealed), millis(at), millis(at))
	if err != nil {
		return nil, fmt.Errorf("put secret %s: %w", name, err)
	}
	list, err := s.ListSecrets(ctx, owner, desktopID, false)
	if err != nil {
		return nil, err
	}
	for _, sec := range list {
		if sec.Name == name {
			return sec, nil
		}
	}
	return nil, fmt.Errorf("put secret %s: not found after writing", name)
}

// SealedSecret returns a secret's nonce and sealed value.
func (s *Secrets) SealedSecret(ctx context.Context, owner, desktopID, name string) ([]byte, []byte, error) {
	var n, c string
	err := s.queryRow(ctx, `SELECT nonce, ciphertext FROM secrets WHERE owner=? AND desktop_id=? AND name=?`, owner, desktopID, name).Scan(&n, &c)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %s: %w", name, notFound(err))
	}
	nonce, err1 := b64.DecodeString(n)
	sealed, err2 := b64.DecodeString(c)
	if err1 != nil || err2 != nil {
		return nil, nil, fmt.Errorf("secret %s: its stored form is damaged", name)
	}
	return nonce, sealed, nil
}

// ListSecrets lists an owner's secrets (desktopID ""), or a desktop's and,
// withOwner, its owner's too; by name.
func (s *Secrets) ListSecrets(ctx context.Context, owner, desktopID string, withOwner bool) ([]*desktop.Secret, error) {
	q := `SELECT owner, desktop_id, name, created_at, updated_at FROM secrets WHERE owner=? AND desktop_id=?`
	args := []any{owner, desktopID}
	if withOwner && desktopID != "" {
		q = `SELECT owner, desktop_id, name, created_at, updated_at FROM secrets WHERE owner=? AND desktop_id IN (?, '')`
	}
	rows, err := s.query(ctx, q+` ORDER BY name, desktop_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	defer rows.Close()
	out := []*desktop.Secret{}
	for rows.Next() {
		var sec desktop.Secret
		var created, updated int64
		if err := rows.Scan(&sec.Owner, &sec.DesktopID, &sec.Name, &created, &updated); err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		sec.Scope = desktop.SecretOwner
		if sec.DesktopID != "" {
			sec.Scope = desktop.SecretDesktop
		}
		sec.CreatedAt, sec.UpdatedAt = fromMillis(created), fromMillis(updated)
		out = append(out, &sec)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	grants, err := s.secretGrants(ctx, owner)
	if err != nil {
		return nil, err
	}
	for _, sec := range out {
		if sec.Scope == desktop.SecretOwner {
			sec.Desktops = grants[sec.Name]
		}
	}
	return out, nil
}

// secretGrants are the desktops each of owner's secrets is allowed on, by
// name: one query for a whole listing.
func (s *Secrets) secretGrants(ctx context.Context, owner string) (map[string][]string, error) {
	rows, err := s.query(ctx, `SELECT name, desktop_id FROM secret_grants WHERE owner=? ORDER BY name, desktop_id`, owner)
	if err != nil {
		return nil, fmt.Errorf("list secrets: their desktops: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var name, id string
		if err := rows.Scan(&name, &id); err != nil {
			return nil, err
		}
		out[name] = append(out[name], id)
	}
	return out, rows.Err()
}

// SetSecretGrants replaces the desktops an owner secret reaches on its own
// (desktop.AllDesktops: all of them); add only adds to them.
func (s *Secrets) SetSecretGrants(ctx context.Context, owner, name string, desktops []string, add bool, at time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("secret %s: its desktops: %w", name, err)
	}
	defer tx.Rollback()
	if !add {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM secret_grants WHERE owner=? AND name=?`), owner, name); err != nil {
			return fmt.Errorf("secret %s: its desktops: %w", name, err)
		}
	}
	for _, id := range desktops {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO secret_grants (owner, name, desktop_id, created_at) VALUES (?,?,?,?)
ON CONFLICT (owner, name, desktop_id) DO NOTHING`), owner, name, id, millis(at)); err != nil {
			return fmt.Errorf("secret %s: its desktops: %w", name, err)
		}
	}
	return tx.Commit()
}

// SecretGranted says whether an owner secret reaches desktopID on its own.
func (s *Secrets) SecretGranted(ctx context.Context, owner, name, desktopID string) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM secret_grants WHERE owner=? AND name=? AND desktop_id IN (?, ?)`,
		owner, name, desktopID, desktop.AllDesktops).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("secret %s: its desktops: %w", name, err)
	}
	return n > 0, nil
}

// DeleteSecret deletes a secret; desktop.ErrNotFound when there is none.
func (s *Secrets) DeleteSecret(ctx context.Context, owner, desktopID, name string) error {
	res, err := s.exec(ctx, `DELETE FROM secrets WHERE owner=? AND desktop_id=? AND name=?`, owner, desktopID, name)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("secret %s: %w", name, notFound(sql.ErrNoRows))
	}
	if desktopID == "" {
		if _, err := s.exec(ctx, `DELETE FROM secret_grants WHERE owner=? AND name=?`, owner, name); err != nil {
			return fmt.Errorf("delete secret %s: its desktops: %w", name, err)
		}
	}
	return nil
}

// DeleteDesktopSecrets deletes every secret of a desktop.
func (s *Secrets) DeleteDesktopSecrets(ctx context.Context, desktopID string) error {
	if desktopID == "" {
		return nil
	}
	if _, err := s.exec(ctx, `DELETE FROM secrets WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("delete the secrets of desktop %s: %w", desktopID, err)
	}
	if _, err := s.exec(ctx, `DELETE FROM secret_grants WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("forget desktop %s in owner secrets: %w", desktopID, err)
	}
	return nil
}
