package signin

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Cookie names and how long a started sign-in may take.
const (
	StateCookie   = "bureau_oidc"
	SessionCookie = "bureau_session"
	// StateCookiePath is where the browser sends the state cookie.
	StateCookiePath = "/auth"
	stateLifetime   = 10 * time.Minute
)

// pending is a started sign-in, carried by the browser in the sealed
// state cookie between /auth/login and /auth/callback.
type pending struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	ReturnTo string    `json:"r"`
	Redirect string    `json:"u"` // the redirect URI the provider was given
	Expires  time.Time `json:"e"`
}

// stateAAD binds sealed values to their use.
var stateAAD = []byte("bureau sign-in state v1")

// seal returns the cookie value of p: base64url(nonce || AES-GCM).
func (s *Service) seal(p *pending) (string, error) {
	plain, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("seal sign-in state: %w", err)
	}
	nonce := make([]byte, s.state.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal sign-in state: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(s.state.Seal(nonce, nonce, plain, stateAAD)), nil
}

// open reads a state cookie: anything not sealed here, or expired, is an
// error.
func (s *Service) open(value string) (*pending, error) {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) < s.state.NonceSize() {
		return nil, errors.New("not a sign-in state cookie")
	}
	n := s.state.NonceSize()
	plain, err := s.state.Open(nil, b[:n], b[n:], stateAAD)
	if err != nil {
		return nil, fmt.Errorf("sign-in state cookie not sealed by this bureau's key: %w", err)
	}
	var p pending
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("sign-in state cookie: %w", err)
	}
	if !s.now().Before(p.Expires) {
		return nil, errors.New("sign-in state cookie expired")
	}
	return &p, nil
}

// random is a fresh random value for state and nonce.
func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewStateCookie carries a started sign-in to the callback: HttpOnly,
// SameSite=Lax (the provider's redirect back is a top-level GET), under
// /auth only, for 10 minutes.
func NewStateCookie(value string, secure bool) *http.Cookie {
	return &http.Cookie{Name: StateCookie, Value: value, Path: StateCookiePath, MaxAge: int(stateLifetime.Seconds()),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
}

// NewSessionCookie holds a sign-in's secret for maxAge: HttpOnly (scripts
// never read it), SameSite=Lax, on every path.
func NewSessionCookie(secret string, maxAge time.Duration, secure bool) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
}

// Cleared is c emptied and expired, for the browser to drop.
func Cleared(c *http.Cookie) *http.Cookie {
	c.Value, c.MaxAge = "", -1
	return c
}
