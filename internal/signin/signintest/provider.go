// Package signintest is an OpenID Connect provider in process, for tests:
// discovery, JWKS, an authorization endpoint that grants at once, a token
// endpoint that checks the PKCE verifier and spends each code once, and
// userinfo. ID tokens are RS256.
package signintest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Provider is a fake OpenID Connect provider. Set Claims (the ID token's,
// besides iss, aud, sub, exp, iat and nonce) and UserInfo before a sign-in.
type Provider struct {
	Server   *httptest.Server
	ClientID string

	mu sync.Mutex
	// Claims go into the next ID tokens; UserInfo is what userinfo says
	// (its "sub" is added).
	Claims, UserInfo map[string]any
	// Subject is the person's sub.
	Subject string
	// Nonce, when set, replaces the nonce the sign-in sent (a replay).
	Nonce string
	// Error, when set, makes the authorization endpoint answer with it.
	Error, ErrorDescription string

	key    *rsa.PrivateKey
	grants map[string]*grant
	access map[string]bool
}

type grant struct {
	challenge, nonce, redirect string
	used                       bool
}

// New starts a provider for the client clientID, closed with the test.
func New(t testing.TB, clientID string) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: clientID, Subject: "sub-1", key: key, grants: map[string]*grant{}, access: map[string]bool{},
		Claims: map[string]any{}, UserInfo: map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /userinfo", p.userinfo)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Server.Close)
	return p
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.Server.URL }

// Set changes the provider's settings under its lock.
func (p *Provider) Set(fn func(p *Provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	iss := p.Issuer()
	writeJSON(w, http.StatusOK, map[string]any{"issuer": iss, "authorization_endpoint": iss + "/authorize",
		"token_endpoint": iss + "/token", "jwks_uri": iss + "/jwks", "userinfo_endpoint": iss + "/userinfo",
		"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"}})
}

func (p *Provider) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

// authorize grants at once: back to redirect_uri with a code (or Error).
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	v := url.Values{"state": {q.Get("state")}}
	if p.Error != "" {
		v.Set("error", p.Error)
		v.Set("error_description", p.ErrorDescription)
	} else {
		code := random()
		p.grants[code] = &grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: back.String()}
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token spends a code once, checking the verifier and redirect URI.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[r.PostForm.Get("code")]
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if g == nil || g.used || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge ||
		r.PostForm.Get("redirect_uri") != g.redirect || r.PostForm.Get("client_id") != p.ClientID {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "code expired, used or not for this verifier"})
		return
	}
	g.used = true
	nonce := g.nonce
	if p.Nonce != "" {
		nonce = p.Nonce
	}
	now := time.Now()
	c := map[string]any{"iss": p.Issuer(), "aud": p.ClientID, "sub": p.Subject, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "nonce": nonce}
	for k, v := range p.Claims {
		c[k] = v
	}
	idt, err := p.sign(c)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	at := random()
	p.access[at] = true
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "id_token": idt})
}

func (p *Provider) userinfo(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := cutBearer(r.Header.Get("Authorization"))
	if !ok || !p.access[at] {
		http.Error(w, "bad access token", http.StatusUnauthorized)
		return
	}
	c := map[string]any{"sub": p.Subject}
	for k, v := range p.UserInfo {
		c[k] = v
	}
	writeJSON(w, http.StatusOK, c)
}

// sign makes an RS256 JWT of claims.
func (p *Provider) sign(claims map[string]any) (string, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: p.key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := s.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// Authorize follows an authorization URL to the provider and returns the
// query it sends the browser back to the callback with.
func Authorize(t testing.TB, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query()
}

func cutBearer(h string) (string, bool) {
	if len(h) > 7 && h[:7] == "Bearer " {
		return h[7:], true
	}
	return "", false
}

func random() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
