// Package signin is single sign-on with an OpenID Connect provider
// (docs/sign-in.md): the authorization code flow with PKCE, its state in a
// sealed cookie, and a sign-in minted as an API token of the kind
// "session" whose secret becomes the browser's cookie.
package signin

import (
	"context"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/secrets"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config is the provider bureau signs people in with (BUREAU_OIDC_*).
type Config struct {
	// Issuer is the provider's issuer URL ("": single sign-on is off).
	Issuer   string
	ClientID string
	// ClientSecret is "" for a public client (PKCE alone).
	ClientSecret string
	// OwnerClaim becomes the person's owner; GroupsClaim lists their groups.
	OwnerClaim, GroupsClaim string
	// AdminGroups sign in as admins; AllowedGroups (none: anyone) may
	// sign in at all.
	AdminGroups, AllowedGroups []string
	// Scopes asked for ("openid" is always added).
	Scopes []string
	// Session is how long a sign-in lasts.
	Session time.Duration
	// HTTPClient reaches the provider (nil: http.DefaultClient).
	HTTPClient *http.Client
}

// Minter mints the session token of a sign-in (auth.Service).
type Minter interface {
	Create(ctx context.Context, req auth.CreateRequest) (string, *desktop.Token, error)
}

// ErrNotReady is a sign-in while the provider's discovery document could
// not be read yet.
var ErrNotReady = fmt.Errorf("the sign-in provider is not reachable yet: %w", desktop.ErrUnavailable)

// Service signs people in. Its CSRF tokens work whether single sign-on
// is on or not (sessions minted before it was turned off end at expiry).
type Service struct {
	cfg   Config
	mint  Minter
	log   *slog.Logger
	state cipher.AEAD // seals the bureau_oidc cookie
	csrf  []byte      // keys CSRF tokens
	now   func() time.Time

	mu       sync.RWMutex
	provider *oidc.Provider
}

// New returns the service. key is bureau's secrets key: the cookie and
// CSRF keys are derived from it, so every bureau sharing it finishes a
// sign-in another began.
func New(cfg Config, key []byte, mint Minter, log *slog.Logger) (*Service, error) {
	stateKey, err := hkdf.Key(sha256.New, key, nil, "bureau sign-in state cookie", secrets.KeySize)
	if err != nil {
		return nil, fmt.Errorf("sign-in: %w", err)
	}
	csrfKey, err := hkdf.Key(sha256.New, key, nil, "bureau sign-in csrf", 32)
	if err != nil {
		return nil, fmt.Errorf("sign-in: %w", err)
	}
	aead, err := secrets.AEAD(stateKey)
	if err != nil {
		return nil, fmt.Errorf("sign-in: %w", err)
	}
	if cfg.Session <= 0 {
		cfg.Session = 12 * time.Hour
	}
	if cfg.OwnerClaim == "" {
		cfg.OwnerClaim = "email"
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	return &Service{cfg: cfg, mint: mint, log: log, state: aead, csrf: csrfKey, now: time.Now}, nil
}

// Enabled says whether single sign-on is configured.
func (s *Service) Enabled() bool { return s != nil && s.cfg.Issuer != "" }

// Provider names the provider for the sign-in page: the issuer's host.
func (s *Service) Provider() string {
	u, err := url.Parse(s.cfg.Issuer)
	if err != nil || u.Host == "" {
		return s.cfg.Issuer
	}
	return u.Host
}

// SessionLength is how long a sign-in lasts.
func (s *Service) SessionLength() time.Duration { return s.cfg.Session }

// Discover reads the provider's discovery document, retrying with
// backoff (up to a minute apart) while the provider is down, until it has
// it or ctx ends. Run it in the background at start.
func (s *Service) Discover(ctx context.Context) error {
	if !s.Enabled() {
		return nil
	}
	wait := time.Second
	for {
		p, err := oidc.NewProvider(s.client(ctx), s.cfg.Issuer)
		if err == nil {
			s.mu.Lock()
			s.provider = p
			s.mu.Unlock()
			s.log.Info("sign-in provider discovered", "issuer", s.cfg.Issuer)
			return nil
		}
		s.log.Warn("sign-in provider not reachable yet; retrying", "issuer", s.cfg.Issuer, "in", wait.String(), "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("discover %s: %w", s.cfg.Issuer, errors.Join(ctx.Err(), err))
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Minute)
	}
}

// ready returns the discovered provider and the OAuth 2 client of it.
func (s *Service) ready() (*oidc.Provider, *oauth2.Config, error) {
	s.mu.RLock()
	p := s.provider
	s.mu.RUnlock()
	if p == nil {
		return nil, nil, ErrNotReady
	}
	scopes := []string{oidc.ScopeOpenID}
	for _, sc := range s.cfg.Scopes {
		if sc != oidc.ScopeOpenID {
			scopes = append(scopes, sc)
		}
	}
	ep := p.Endpoint()
	if s.cfg.ClientSecret == "" {
		ep.AuthStyle = oauth2.AuthStyleInParams // a public client names itself in the body
	}
	return p, &oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, Endpoint: ep, Scopes: scopes}, nil
}

// client is ctx carrying the HTTP client that reaches the provider, for
// go-oidc and oauth2.
func (s *Service) client(ctx context.Context) context.Context {
	if s.cfg.HTTPClient == nil {
		return ctx
	}
	return context.WithValue(oidc.ClientContext(ctx, s.cfg.HTTPClient), oauth2.HTTPClient, s.cfg.HTTPClient)
}
