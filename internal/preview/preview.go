// Package preview keeps who may open a desktop's live URLs: share links
// (hashed secrets that expire and can be revoked), ports made public, the
// one-time codes that sign a browser in from the web console, and the
// signed cookies that keep it signed in.
package preview

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Store keeps share links and public ports.
type Store interface {
	CreateShare(ctx context.Context, l *desktop.Share) error
	ShareByHash(ctx context.Context, hash string) (*desktop.Share, error)
	ShareByID(ctx context.Context, id string) (*desktop.Share, error)
	ListShares(ctx context.Context, desktopID string) ([]*desktop.Share, error)
	RevokeShare(ctx context.Context, desktopID, id string, at time.Time) error
	SetPortPublic(ctx context.Context, desktopID string, port int, public bool, actor, madeBy string, until *time.Time, at time.Time) error
	PublicPorts(ctx context.Context, desktopID string) ([]int, error)
	ForgetDesktopURLs(ctx context.Context, desktopID string) error
}

// Limits.
const (
	MaxShareTTL     = 30 * 24 * time.Hour
	DefaultShareTTL = 24 * time.Hour
	loginCodeTTL    = time.Minute
	// SessionTTL is how long a browser stays signed in to a URL.
	SessionTTL = 12 * time.Hour
)

// Service hands out and checks access to live URLs.
type Service struct {
	st  Store
	key []byte // signs cookies

	mu    sync.Mutex
	codes map[string]loginCode // sha256(code) → what it signs in to

	// OnForget, when set, is told of each desktop whose URLs are
	// forgotten (to drop its metrics).
	OnForget func(desktopID string)
}

type loginCode struct {
	claims  Claims
	expires time.Time
}

// New builds the service; key (any length, secret) signs cookies.
func New(st Store, key []byte) *Service {
	k := sha256.Sum256(append([]byte("bureau live-URL cookies\x00"), key...))
	return &Service{st: st, key: k[:], codes: map[string]loginCode{}}
}

func random(prefix string) string {
	b := make([]byte, 24)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// Maker is who makes a share link or a public port: Actor ("owner/token")
// for the record, Token the API token's id (revoking it revokes what it
// made) and Until its expiry (nil: none), which what it makes never
// outlives.
type Maker struct {
	Actor, Token string
	Until        *time.Time
}

// Share makes a share link; the secret is returned once. Its expiry is
// capped at its maker's.
func (s *Service) Share(ctx context.Context, d *desktop.Desktop, port int, ttl time.Duration, readOnly bool, by Maker) (string, *desktop.Share, error) {
	if port < 1 || port > 65535 {
		return "", nil, &desktop.ValidationError{Field: "port", Message: "must be 1..65535"}
	}
	if ttl == 0 {
		ttl = DefaultShareTTL
	}
	if ttl < time.Minute || ttl > MaxShareTTL {
		return "", nil, &desktop.ValidationError{Field: "ttl_s", Message: fmt.Sprintf("must be 60..%d seconds", int(MaxShareTTL.Seconds()))}
	}
	secret := random("bsh_")
	id := random("sh-")[:15]
	now := time.Now().UTC().Truncate(time.Millisecond)
	expires := now.Add(ttl)
	if by.Until != nil && by.Until.Before(expires) {
		expires = by.Until.UTC()
	}
	l := &desktop.Share{ID: id, DesktopID: d.ID, Owner: d.Owner, Port: port, Hash: hash(secret), ReadOnly: readOnly,
		CreatedBy: by.Actor, MadeBy: by.Token, CreatedAt: now, ExpiresAt: expires}
	if err := s.st.CreateShare(ctx, l); err != nil {
		return "", nil, err
	}
	return secret, l, nil
}

// Shares lists a desktop's share links.
func (s *Service) Shares(ctx context.Context, desktopID string) ([]*desktop.Share, error) {
	return s.st.ListShares(ctx, desktopID)
}

// Revoke revokes a share link; browsers it signed in lose access at once.
func (s *Service) Revoke(ctx context.Context, desktopID, id string) error {
	return s.st.RevokeShare(ctx, desktopID, id, time.Now())
}

// ErrDenied: the secret, code or cookie does not open this URL.
var ErrDenied = errors.New("not a valid link for this URL")

// Redeem checks a share secret for a desktop's port.
func (s *Service) Redeem(ctx context.Context, secret, desktopID string, port int) (*desktop.Share, error) {
	l, err := s.st.ShareByHash(ctx, hash(secret))
	if err != nil || l.DesktopID != desktopID || l.Port != port || !l.Usable(time.Now()) {
		return nil, ErrDenied
	}
	return l, nil
}

// ShareUsable returns a share link if it still opens its URL.
func (s *Service) ShareUsable(ctx context.Context, id string) (*desktop.Share, error) {
	l, err := s.st.ShareByID(ctx, id)
	if err != nil || !l.Usable(time.Now()) {
		return nil, ErrDenied
	}
	return l, nil
}

// SetPublic makes a port public (anyone with the URL) or private again.
// A public port stays so while its maker's token is good: until it
// expires or is revoked.
func (s *Service) SetPublic(ctx context.Context, desktopID string, port int, public bool, by Maker) error {
	if port < 1 || port > 65535 {
		return &desktop.ValidationError{Field: "port", Message: "must be 1..65535"}
	}
	return s.st.SetPortPublic(ctx, desktopID, port, public, by.Actor, by.Token, by.Until, time.Now())
}

// PublicPorts lists a desktop's public ports.
func (s *Service) PublicPorts(ctx context.Context, desktopID string) ([]int, error) {
	return s.st.PublicPorts(ctx, desktopID)
}

// Forget drops a deleted desktop's links and public ports.
func (s *Service) Forget(ctx context.Context, desktopID string) error {
	if s.OnForget != nil {
		s.OnForget(desktopID)
	}
	return s.st.ForgetDesktopURLs(ctx, desktopID)
}

// Claims are what a cookie (or a login code) grants: one desktop's port,
// as its owner (Sub: the API token's id) or through a share link (Sub:
// the link's id), until Exp.
type Claims struct {
	Kind     string `json:"k"` // "owner" or "share"
	Desktop  string `json:"d"`
	Port     int    `json:"p"`
	Sub      string `json:"s"`
	ReadOnly bool   `json:"r,omitempty"`
	Exp      int64  `json:"e"` // Unix seconds
}

// Kinds of claims.
const (
	KindOwner = "owner"
	KindShare = "share"
)

// Sign makes a cookie value of c.
func (s *Service) Sign(c Claims) string {
	b, _ := json.Marshal(c)
	body := base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify reads a cookie value made by Sign, unexpired.
func (s *Service) Verify(v string) (Claims, error) {
	body, sig, ok := strings.Cut(v, ".")
	if !ok {
		return Claims{}, ErrDenied
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	want := m.Sum(nil)
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, want) {
		return Claims{}, ErrDenied
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	var c Claims
	if err != nil || json.Unmarshal(b, &c) != nil || time.Now().Unix() >= c.Exp {
		return Claims{}, ErrDenied
	}
	return c, nil
}

// LoginCode is a one-time code (a minute) that signs a browser in to a
// port's URL as the owner whose token asked for it.
func (s *Service) LoginCode(c Claims) string {
	code := random("blc_")
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, v := range s.codes {
		if now.After(v.expires) {
			delete(s.codes, k)
		}
	}
	s.codes[hash(code)] = loginCode{claims: c, expires: now.Add(loginCodeTTL)}
	return code
}

// RedeemCode spends a login code for a desktop's port.
func (s *Service) RedeemCode(code, desktopID string, port int) (Claims, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hash(code)
	lc, ok := s.codes[h]
	delete(s.codes, h)
	if !ok || time.Now().After(lc.expires) || lc.claims.Desktop != desktopID || lc.claims.Port != port {
		return Claims{}, ErrDenied
	}
	return lc.claims, nil
}
