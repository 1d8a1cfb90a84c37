package signin

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/signin/signintest"
)

// fakeMinter records the session it is asked for.
type fakeMinter struct{ req auth.CreateRequest }

func (m *fakeMinter) Create(_ context.Context, req auth.CreateRequest) (string, *desktop.Token, error) {
	m.req = req
	exp := time.Now().Add(req.TTL)
	return "bureau_secret", &desktop.Token{ID: "tok_1", Owner: req.Owner, Name: req.Name, Scope: req.Scope, Session: req.Session,
		CreatedAt: time.Now(), ExpiresAt: &exp}, nil
}

const redirect = "https://bureau.example.com/auth/callback"

func newTest(t *testing.T, tweak func(*Config)) (*Service, *signintest.Provider, *fakeMinter) {
	t.Helper()
	p := signintest.New(t, "bureau")
	cfg := Config{Issuer: p.Issuer(), ClientID: "bureau", Scopes: []string{"email", "profile"}, Session: 8 * time.Hour}
	if tweak != nil {
		tweak(&cfg)
	}
	m := &fakeMinter{}
	s, err := New(cfg, make([]byte, 32), m, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, p, m
}

// begin starts a sign-in and goes through the provider: the callback's
// query and the state cookie.
func begin(t *testing.T, s *Service, returnTo string) (url.Values, string) {
	t.Helper()
	authURL, cookie, err := s.Begin(context.Background(), redirect, returnTo)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" ||
		q.Get("redirect_uri") != redirect || !strings.Contains(q.Get("scope"), "openid") {
		t.Fatalf("authorization URL %s", authURL)
	}
	return signintest.Authorize(t, authURL), cookie
}

func wantRefusal(t *testing.T, err error, status int, says string) {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) || r.Status != status || !strings.Contains(r.Message, says) {
		t.Fatalf("got %v, want a %d refusal saying %q", err, status, says)
	}
}

func TestSignIn(t *testing.T) {
	s, p, m := newTest(t, nil)
	p.Set(func(p *Provider) {
		p.Claims = map[string]any{"email": "alice@example.com", "email_verified": true, "name": "Alice Liddell"}
	})
	q, cookie := begin(t, s, "/desktops/d1?tab=steps")
	res, err := s.Finish(context.Background(), q, cookie)
	if err != nil {
		t.Fatal(err)
	}
	if res.Secret == "" || res.ReturnTo != "/desktops/d1?tab=steps" {
		t.Errorf("result %+v", res)
	}
	if r := m.req; r.Owner != "alice@example.com" || r.Scope != desktop.ScopeOwner || !r.Session || r.TTL != 8*time.Hour ||
		r.Name != "signed in: Alice Liddell" || r.Parent != nil {
		t.Errorf("minted %+v", r)
	}
	// The code is spent: the same callback again is refused.
	_, err = s.Finish(context.Background(), q, cookie)
	wantRefusal(t, err, http.StatusUnauthorized, "refused the code")
}

// Provider is the fake provider's type, for Set's callbacks.
type Provider = signintest.Provider

func TestSignInAdminByGroupFromUserinfo(t *testing.T) {
	s, p, m := newTest(t, func(c *Config) { c.AdminGroups = []string{"ops admins"}; c.AllowedGroups = []string{"eng"} })
	p.Set(func(p *Provider) {
		p.Claims = map[string]any{"email": "root@example.com"}
		p.UserInfo = map[string]any{"groups": []string{"staff", "ops admins"}, "email": "ignored@example.com"}
	})
	q, cookie := begin(t, s, "")
	res, err := s.Finish(context.Background(), q, cookie)
	if err != nil {
		t.Fatal(err)
	}
	if m.req.Scope != desktop.ScopeAdmin || m.req.Owner != "root@example.com" || res.ReturnTo != "/" {
		t.Errorf("minted %+v, back to %q", m.req, res.ReturnTo)
	}
}

func TestSignInRefusals(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		cfg    func(*Config)
		set    func(*Provider)
		status int
		says   string
	}{
		{"not in an allowed group", func(c *Config) { c.AllowedGroups = []string{"eng"} },
			func(p *Provider) { p.Claims = map[string]any{"email": "a@example.com", "groups": "sales"} }, 403, "eng"},
		{"provider error", nil, func(p *Provider) { p.Error, p.ErrorDescription = "access_denied", "the user said no" }, 401, "access_denied: the user said no"},
		{"nonce mismatch", nil, func(p *Provider) { p.Claims = map[string]any{"email": "a@example.com"}; p.Nonce = "replayed" }, 401, "nonce"},
		{"no owner claim", nil, func(p *Provider) { p.Claims = map[string]any{"name": "A"} }, 403, `"email"`},
		{"owner claim not an owner", func(c *Config) { c.OwnerClaim = "preferred_username" },
			func(p *Provider) { p.Claims = map[string]any{"preferred_username": "a/b"} }, 403, "preferred_username"},
		{"unverified email", nil, func(p *Provider) { p.Claims = map[string]any{"email": "a@example.com", "email_verified": false} }, 403, "not verified"},
		{"unverified email as a string", nil, func(p *Provider) { p.Claims = map[string]any{"email": "a@example.com", "email_verified": "false"} }, 403, "not verified"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, p, _ := newTest(t, c.cfg)
			p.Set(c.set)
			q, cookie := begin(t, s, "/")
			_, err := s.Finish(ctx, q, cookie)
			wantRefusal(t, err, c.status, c.says)
		})
	}
}

func TestSignInStateMismatch(t *testing.T) {
	ctx := context.Background()
	s, p, _ := newTest(t, nil)
	p.Set(func(p *Provider) { p.Claims = map[string]any{"email": "a@example.com"} })
	q, cookie := begin(t, s, "/")
	_, err := s.Finish(ctx, q, "")
	wantRefusal(t, err, http.StatusBadRequest, "state mismatch")
	other, _ := begin(t, s, "/")
	_, err = s.Finish(ctx, other, cookie)
	wantRefusal(t, err, http.StatusBadRequest, "state mismatch")
	_, err = s.Finish(ctx, q, cookie[:len(cookie)-2]+"AA")
	wantRefusal(t, err, http.StatusBadRequest, "state mismatch")
	s.now = func() time.Time { return time.Now().Add(11 * time.Minute) }
	_, err = s.Finish(ctx, q, cookie)
	wantRefusal(t, err, http.StatusBadRequest, "state mismatch")
}

func TestSignInBeforeDiscovery(t *testing.T) {
	s, err := New(Config{Issuer: "http://127.0.0.1:1", ClientID: "bureau"}, make([]byte, 32), &fakeMinter{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Begin(context.Background(), redirect, "/"); !errors.Is(err, ErrNotReady) {
		t.Errorf("Begin before discovery: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Discover(ctx); err == nil {
		t.Error("Discover of a provider that is down returned no error at its context's end")
	}
	if s.Provider() != "127.0.0.1:1" || !s.Enabled() {
		t.Errorf("provider %q", s.Provider())
	}
}

func TestSafeReturnTo(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "/",
		"/":                    "/",
		"/desktops/d1?x=1#top": "/desktops/d1?x=1#top",
		"//evil.example":       "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"evil":                 "/",
		"/\t/evil.example":     "/",
		"javascript:alert(1)":  "/",
	} {
		if got := SafeReturnTo(in); got != want {
			t.Errorf("SafeReturnTo(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSRF(t *testing.T) {
	a, _ := New(Config{}, make([]byte, 32), nil, slog.New(slog.DiscardHandler))
	key := make([]byte, 32)
	key[0] = 1
	b, _ := New(Config{}, key, nil, slog.New(slog.DiscardHandler))
	tok := a.CSRFToken("bureau_one")
	if tok == "" || tok != a.CSRFToken("bureau_one") || tok == a.CSRFToken("bureau_two") || tok == b.CSRFToken("bureau_one") {
		t.Fatal("CSRF tokens are not a keyed function of the secret")
	}
	if !a.CheckCSRF("bureau_one", tok) || a.CheckCSRF("bureau_one", "") || a.CheckCSRF("bureau_two", tok) || a.Enabled() {
		t.Error("CheckCSRF")
	}
}
