// Package console lets browsers watch and drive desktops: short-lived console
// tokens (only their hashes are stored), a WebSocket↔VNC pipe whose RFB
// filter enforces view-only sessions on the server, and the registry that
// ends live sessions when their token is revoked or expires or their desktop
// stops.
package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
)

// Token lifetimes.
const (
	DefaultTTL = 10 * time.Minute
	MaxTTL     = time.Hour
)

// Store keeps console tokens.
type Store interface {
	CreateConsoleToken(ctx context.Context, t *desktop.ConsoleToken) error
	ConsoleTokenByHash(ctx context.Context, hash string) (*desktop.ConsoleToken, error)
	ActiveConsoleTokens(ctx context.Context, desktopID string, now time.Time) ([]*desktop.ConsoleToken, error)
	RevokeConsoleToken(ctx context.Context, desktopID, id, reason string, at time.Time) error
	RevokeConsoleTokens(ctx context.Context, desktopID, reason string, at time.Time) (int, error)
	PruneConsoleTokens(ctx context.Context, cutoff time.Time) (int, error)
}

// Service issues and checks console tokens and tracks live sessions.
type Service struct {
	store Store
	log   *slog.Logger
	now   func() time.Time

	mu       sync.Mutex
	sessions map[*session]struct{}
}

// New returns a console service over store.
func New(store Store, log *slog.Logger) *Service {
	return &Service{store: store, log: log, now: time.Now, sessions: map[*session]struct{}{}}
}

// CreateRequest describes a console token to issue.
type CreateRequest struct {
	DesktopID string
	Owner     string // the desktop's owner
	CreatedBy string // who asked (owner/token id)
	ViewOnly  bool
	TTL       time.Duration // 0 = DefaultTTL
	// MadeBy is the API token asking: revoking it revokes the console
	// token. Until, when set, is that token's expiry: the console token
	// expires no later.
	MadeBy string
	Until  *time.Time
	// ScreenOnly shows the screen and nothing else (it implies ViewOnly):
	// for a token that may only see the screen and use mouse and keyboard.
	ScreenOnly bool
	// Name, optional, is who the link is for (1-64 characters).
	Name string
}

// Create issues a console token and returns its secret (shown only now).
func (s *Service) Create(ctx context.Context, req CreateRequest) (string, *desktop.ConsoleToken, error) {
	ttl := req.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < 10*time.Second || ttl > MaxTTL {
		return "", nil, &desktop.ValidationError{Field: "ttl_seconds", Message: fmt.Sprintf("must be between 10 and %d", int(MaxTTL.Seconds()))}
	}
	secret := auth.NewSecret()
	id := make([]byte, 8)
	rand.Read(id)
	now := s.now().UTC()
	expires := now.Add(ttl)
	if req.Until != nil && req.Until.Before(expires) {
		// Capped rather than refused: the answer says when it ends.
		expires = req.Until.UTC()
	}
	t := &desktop.ConsoleToken{ID: "con_" + hex.EncodeToString(id), DesktopID: req.DesktopID, Owner: req.Owner,
		Hash: auth.Hash(secret), ViewOnly: req.ViewOnly || req.ScreenOnly, ScreenOnly: req.ScreenOnly, CreatedBy: req.CreatedBy, Name: req.Name,
		MadeBy: req.MadeBy, CreatedAt: now, ExpiresAt: expires}
	if err := s.store.CreateConsoleToken(ctx, t); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// Authenticate returns the usable console token secret grants for desktopID.
// A token of another desktop is refused like an unknown one.
func (s *Service) Authenticate(ctx context.Context, desktopID, secret string) (*desktop.ConsoleToken, error) {
	if secret == "" {
		return nil, fmt.Errorf("missing console token (?token=): %w", desktop.ErrUnauthorized)
	}
	t, err := s.store.ConsoleTokenByHash(ctx, auth.Hash(secret))
	if errors.Is(err, desktop.ErrNotFound) || (err == nil && t.DesktopID != desktopID) {
		return nil, fmt.Errorf("unknown console token for this desktop: %w", desktop.ErrUnauthorized)
	}
	if err != nil {
		return nil, err
	}
	if t.RevokedAt != nil {
		return nil, fmt.Errorf("console token revoked (%s): %w", t.RevokeReason, desktop.ErrUnauthorized)
	}
	if !t.Usable(s.now()) {
		return nil, fmt.Errorf("console token expired at %s: %w", t.ExpiresAt.Format(time.RFC3339), desktop.ErrUnauthorized)
	}
	return t, nil
}

// List returns a desktop's usable console tokens.
func (s *Service) List(ctx context.Context, desktopID string) ([]*desktop.ConsoleToken, error) {
	return s.store.ActiveConsoleTokens(ctx, desktopID, s.now())
}

// Revoke revokes one console token and ends its live sessions.
func (s *Service) Revoke(ctx context.Context, desktopID, tokenID, by string) error {
	if err := s.store.RevokeConsoleToken(ctx, desktopID, tokenID, "revoked by "+by, s.now().UTC()); err != nil {
		return err
	}
	s.end(func(ss *session) bool { return ss.tokenID == tokenID }, &CloseError{Code: CodeRevoked, Reason: "console token revoked"})
	return nil
}

// RevokeDesktop revokes every console token of a desktop (it stopped or was
// deleted) and ends its live sessions.
func (s *Service) RevokeDesktop(ctx context.Context, desktopID, reason string) error {
	n, err := s.store.RevokeConsoleTokens(ctx, desktopID, reason, s.now().UTC())
	s.end(func(ss *session) bool { return ss.desktopID == desktopID }, &CloseError{Code: CodeDesktopGone, Reason: reason})
	if n > 0 {
		s.log.Info("console tokens revoked", "desktop", desktopID, "count", n, "reason", reason)
	}
	return err
}

// Prune deletes tokens that expired or were revoked more than a day ago.
func (s *Service) Prune(ctx context.Context) (int, error) {
	return s.store.PruneConsoleTokens(ctx, s.now().Add(-24*time.Hour))
}
