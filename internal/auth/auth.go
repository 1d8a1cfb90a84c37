// Package auth issues and checks API tokens. A token's secret is shown once
// at creation; only its SHA-256 is stored.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Store keeps token records.
type Store interface {
	CreateToken(ctx context.Context, t *desktop.Token) error
	TokenByHash(ctx context.Context, hash string) (*desktop.Token, error)
	TokenByID(ctx context.Context, id string) (*desktop.Token, error)
	TouchToken(ctx context.Context, id string, at time.Time) error
	ListTokens(ctx context.Context, owner string) ([]*desktop.Token, error)
	ListTeamTokensOf(ctx context.Context, member string) ([]*desktop.Token, error)
	CountTokens(ctx context.Context) (int, error)
	// RevokeToken revokes a token and, transitively, the tokens it minted
	// and what they made (console tokens, share links, public ports), and
	// returns the ids of the tokens it revoked.
	RevokeToken(ctx context.Context, id string, at time.Time) ([]string, error)
}

// Service issues and checks tokens.
type Service struct {
	store Store
	now   func() time.Time
}

// New returns a token service over store.
func New(store Store) *Service { return &Service{store: store, now: time.Now} }

const secretPrefix = "bureau_"

// Hash is the stored form of a secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewSecret returns a fresh random secret with bureau's prefix.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// CreateRequest describes a token to issue.
type CreateRequest struct {
	Owner  string
	Name   string
	Scope  string
	TTL    time.Duration // 0 = no expiry
	Secret string        // "" = generate
	// DesktopID and ComputerOnly narrow a desktop-scoped token.
	DesktopID    string
	ComputerOnly bool
	// Parent is the token asking for this one through the API (nil on the
	// host: CLI, bootstrap). The new token may not reach further or live
	// longer than it, and is revoked with it. A sign-in (Parent.Session)
	// is not a parent: what it mints reaches no further than it, but is
	// no child of it (it outlives signing out).
	Parent *desktop.Token
	// Session mints a sign-in (docs/sign-in.md): only the single sign-on
	// callback does, never a caller of the API (Parent must be nil).
	Session bool
	// Role and Member make a team token (docs/teams.md): Owner is the
	// team, Role the role it acts with, Member the person it acts for.
	// The API checks that Member is in the team with at least Role before
	// asking; a maker with a role hands on no more than its own.
	// MemberScope is a team sign-in's person's own scope.
	Role        string
	Member      string
	MemberScope string
}

// Create issues a token and returns its secret (shown only now) and record.
func (s *Service) Create(ctx context.Context, req CreateRequest) (string, *desktop.Token, error) {
	if req.Owner == "" || len(req.Owner) > 64 || strings.ContainsAny(req.Owner, " \t\n/") {
		return "", nil, &desktop.ValidationError{Field: "owner", Message: "must be 1-64 characters without spaces or '/'"}
	}
	if err := desktop.ValidateText("owner", req.Owner, 64, false); err != nil {
		return "", nil, err
	}
	if err := desktop.ValidateText("name", req.Name, 128, false); err != nil {
		return "", nil, err
	}
	switch req.Scope {
	case desktop.ScopeAdmin, desktop.ScopeOwner:
		if req.DesktopID != "" || req.ComputerOnly {
			return "", nil, &desktop.ValidationError{Field: "desktop_id", Message: `only a "desktop" token names a desktop`}
		}
	case desktop.ScopeDesktop:
		if req.DesktopID == "" {
			return "", nil, &desktop.ValidationError{Field: "desktop_id", Message: "a desktop token needs the desktop it reaches"}
		}
	default:
		return "", nil, &desktop.ValidationError{Field: "scope", Message: "must be admin, owner or desktop"}
	}
	if err := checkRole(req); err != nil {
		return "", nil, err
	}
	if req.TTL < 0 {
		return "", nil, &desktop.ValidationError{Field: "ttl", Message: "must not be negative"}
	}
	if req.Session && (req.Parent != nil || req.Scope == desktop.ScopeDesktop) {
		return "", nil, fmt.Errorf("a sign-in is made by signing in only, as an admin or owner: %w", desktop.ErrForbidden)
	}
	now := s.now().UTC()
	if req.Parent != nil {
		if err := withinParent(req, now); err != nil {
			return "", nil, err
		}
	}
	secret := req.Secret
	if secret == "" {
		secret = NewSecret()
	} else if len(secret) < 24 {
		return "", nil, &desktop.ValidationError{Field: "secret", Message: "must be at least 24 characters"}
	}
	id := make([]byte, 8)
	rand.Read(id)
	t := &desktop.Token{ID: "tok_" + hex.EncodeToString(id), Owner: req.Owner, Name: req.Name, Hash: Hash(secret), Scope: req.Scope, CreatedAt: now,
		DesktopID: req.DesktopID, ComputerOnly: req.ComputerOnly, Session: req.Session,
		Role: req.Role, Member: req.Member, MemberScope: req.MemberScope}
	if req.Parent != nil && !req.Parent.Session {
		t.ParentID = req.Parent.ID
	}
	if req.TTL > 0 {
		exp := now.Add(req.TTL)
		t.ExpiresAt = &exp
	}
	if err := s.store.CreateToken(ctx, t); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// Authenticate returns the usable token whose secret this is.
func (s *Service) Authenticate(ctx context.Context, secret string) (*desktop.Token, error) {
	if secret == "" {
		return nil, fmt.Errorf("missing bearer token: %w", desktop.ErrUnauthorized)
	}
	t, err := s.store.TokenByHash(ctx, Hash(secret))
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, fmt.Errorf("unknown token: %w", desktop.ErrUnauthorized)
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !t.Usable(now) {
		return nil, fmt.Errorf("token revoked or expired: %w", desktop.ErrUnauthorized)
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		s.store.TouchToken(ctx, t.ID, now)
	}
	return t, nil
}

// List returns the tokens of owner ("" = all).
func (s *Service) List(ctx context.Context, owner string) ([]*desktop.Token, error) {
	return s.store.ListTokens(ctx, owner)
}

// ListTeamTokensOf lists the team tokens that act for the person member.
func (s *Service) ListTeamTokensOf(ctx context.Context, member string) ([]*desktop.Token, error) {
	return s.store.ListTeamTokensOf(ctx, member)
}

// Usable returns the token with this id if it may still authenticate: a
// long-lived request (an event stream) checks it again now and then, so
// revoking or expiry ends it.
func (s *Service) Usable(ctx context.Context, id string) (*desktop.Token, error) {
	t, err := s.store.TokenByID(ctx, id)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, fmt.Errorf("unknown token: %w", desktop.ErrUnauthorized)
	}
	if err != nil {
		return nil, err
	}
	if !t.Usable(s.now()) {
		return nil, fmt.Errorf("token revoked or expired: %w", desktop.ErrUnauthorized)
	}
	return t, nil
}

// Revoke revokes a token by id and every token minted from it, however
// deep, with what they made, and returns the ids of the tokens it revoked.
func (s *Service) Revoke(ctx context.Context, id string) ([]string, error) {
	return s.store.RevokeToken(ctx, id, s.now().UTC())
}

// Bootstrap makes sure an admin token exists. When none was ever issued it
// creates one, from secret if given (BUREAU_ADMIN_TOKEN), and returns the
// secret so the caller can show it once; otherwise it returns "".
func (s *Service) Bootstrap(ctx context.Context, secret string) (string, error) {
	if secret != "" {
		if _, err := s.store.TokenByHash(ctx, Hash(secret)); err == nil {
			return "", nil
		}
		sec, _, err := s.Create(ctx, CreateRequest{Owner: "admin", Name: "bootstrap (BUREAU_ADMIN_TOKEN)", Scope: desktop.ScopeAdmin, Secret: secret})
		return sec, err
	}
	n, err := s.store.CountTokens(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	sec, _, err := s.Create(ctx, CreateRequest{Owner: "admin", Name: "bootstrap", Scope: desktop.ScopeAdmin})
	return sec, err
}
