package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/signin"
	"github.com/bureau/bureau/internal/signin/signintest"
)

// signInEnv is an env whose bureau signs people in at a fake provider
// (issuer "" leaves single sign-on off but still takes session cookies).
func signInEnv(t *testing.T, on bool) (*env, *signintest.Provider, Tokens) {
	t.Helper()
	p := signintest.New(t, "bureau")
	var tokens Tokens
	e := newEnvDeps(t, nil, func(d *Deps) {
		cfg := signin.Config{ClientID: "bureau", Session: 2 * time.Hour, AdminGroups: []string{"admins"}}
		if on {
			cfg.Issuer = p.Issuer()
		}
		s, err := signin.New(cfg, make([]byte, 32), d.Tokens, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Discover(context.Background()); err != nil {
			t.Fatal(err)
		}
		d.SignIn, tokens = s, d.Tokens
	})
	return e, p, tokens
}

// browser sends a request as the console would: cookies, headers, no
// redirects followed.
func (e *env) browser(t *testing.T, method, path, body string, cookies []*http.Cookie, h map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func jsonOf(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not JSON: %s", data)
	}
	return m
}

// signInAs goes through /auth/login, the provider and /auth/callback, and
// returns the session cookie.
func signInAs(t *testing.T, e *env, p *signintest.Provider, claims map[string]any) *http.Cookie {
	t.Helper()
	p.Set(func(p *signintest.Provider) { p.Claims = claims })
	resp, _ := e.browser(t, "GET", "/auth/login?return_to=/tokens", "", nil, nil)
	state := cookieNamed(resp, signin.StateCookie)
	if resp.StatusCode != http.StatusFound || state == nil || !state.HttpOnly || state.Path != "/auth" || state.SameSite != http.SameSiteLaxMode {
		t.Fatalf("login: %d, state cookie %+v", resp.StatusCode, state)
	}
	back := signintest.Authorize(t, resp.Header.Get("Location"))
	resp, body := e.browser(t, "GET", "/auth/callback?"+back.Encode(), "", []*http.Cookie{state}, nil)
	sess := cookieNamed(resp, signin.SessionCookie)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/tokens" || sess == nil || !sess.HttpOnly ||
		sess.Path != "/" || sess.MaxAge != 7200 || sess.Secure {
		t.Fatalf("callback: %d %s, session cookie %+v: %s", resp.StatusCode, resp.Header.Get("Location"), sess, body)
	}
	return sess
}

func TestSignInSession(t *testing.T) {
	e, p, _ := signInEnv(t, true)
	resp, body := e.browser(t, "GET", "/auth/config", "", nil, nil)
	if m := jsonOf(t, body); resp.StatusCode != 200 || m["oidc"] != true || m["provider"] != strings.TrimPrefix(p.Issuer(), "http://") {
		t.Fatalf("config: %d %s", resp.StatusCode, body)
	}
	sess := signInAs(t, e, p, map[string]any{"email": "carol@example.com", "name": "Carol"})
	jar := []*http.Cookie{sess}

	// Who am I, by cookie: a sign-in with its CSRF token.
	resp, body = e.browser(t, "GET", "/api/v1/session", "", jar, nil)
	me := jsonOf(t, body)
	csrf, _ := me["csrf_token"].(string)
	if resp.StatusCode != 200 || me["via"] != "sign-in" || me["owner"] != "carol@example.com" || me["admin"] != false ||
		me["name"] != "signed in: Carol" || csrf == "" || me["expires_at"] == nil {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.browser(t, "GET", "/api/v1/desktops", "", jar, nil); resp.StatusCode != 200 {
		t.Errorf("GET by cookie: %d", resp.StatusCode)
	}

	// Changing something needs the CSRF token, from bureau's own pages.
	mint := `{"name":"agent","ttl_seconds":864000}`
	for _, h := range []map[string]string{nil, {"X-CSRF-Token": "wrong"}, {"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"},
		{"X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-site"}} {
		resp, body := e.browser(t, "POST", "/api/v1/tokens", mint, jar, h)
		if resp.StatusCode != 403 || errCode(jsonOf(t, body)) != "csrf" {
			t.Errorf("POST with %v: %d %s, want 403 csrf", h, resp.StatusCode, body)
		}
	}
	resp, body = e.browser(t, "POST", "/api/v1/tokens", mint, jar, map[string]string{"X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-origin"})
	made := jsonOf(t, body)
	info, _ := made["info"].(map[string]any)
	agent, _ := made["token"].(string)
	if resp.StatusCode != 201 || info["parent_id"] != nil || info["kind"] != "api" || info["owner"] != "carol@example.com" {
		t.Fatalf("mint by a session: %d %s", resp.StatusCode, body)
	}
	// Its expiry is its own (10 days), past the session's 2 hours.
	if exp, _ := time.Parse(time.RFC3339, info["expires_at"].(string)); time.Until(exp) < 9*24*time.Hour {
		t.Errorf("minted token expires %v", exp)
	}
	_, list := e.do(t, agent, "GET", "/api/v1/tokens", "")
	kinds := map[string]string{}
	for _, tk := range list["tokens"].([]any) {
		m := tk.(map[string]any)
		kinds[m["name"].(string)] = m["kind"].(string)
	}
	if kinds["signed in: Carol"] != "session" || kinds["agent"] != "api" {
		t.Errorf("token kinds %v", kinds)
	}
	// A header wins over the cookie.
	_, who := e.do(t, e.alice, "GET", "/api/v1/session", "")
	if who["via"] != "token" || who["owner"] != "alice" || who["csrf_token"] != nil {
		t.Errorf("session by bearer: %v", who)
	}

	// The audit log shows the person.
	rows := e.auditRows(t, audit.Filter{Action: "token.create"})
	if len(rows) == 0 || rows[0].Person != "Carol" || rows[0].Owner != "carol@example.com" {
		t.Errorf("audit rows %+v", rows)
	}

	// Signing out revokes the session, not what it minted.
	if resp, body := e.browser(t, "POST", "/auth/logout", "", jar, nil); resp.StatusCode != 403 || errCode(jsonOf(t, body)) != "csrf" {
		t.Errorf("logout without CSRF: %d %s", resp.StatusCode, body)
	}
	resp, _ = e.browser(t, "POST", "/auth/logout", "", jar, map[string]string{"X-CSRF-Token": csrf})
	if c := cookieNamed(resp, signin.SessionCookie); resp.StatusCode != 204 || c == nil || c.MaxAge >= 0 {
		t.Fatalf("logout: %d, cookie %+v", resp.StatusCode, c)
	}
	if resp, _ := e.browser(t, "GET", "/api/v1/session", "", jar, nil); resp.StatusCode != 401 {
		t.Errorf("session after signing out: %d", resp.StatusCode)
	}
	if code, _ := e.do(t, agent, "GET", "/api/v1/session", ""); code != 200 {
		t.Errorf("the agent's token after signing out: %d", code)
	}
}

func TestSignInAdminAndRefusals(t *testing.T) {
	e, p, _ := signInEnv(t, true)
	sess := signInAs(t, e, p, map[string]any{"email": "root@example.com", "groups": []string{"admins"}})
	_, body := e.browser(t, "GET", "/api/v1/session", "", []*http.Cookie{sess}, nil)
	if me := jsonOf(t, body); me["admin"] != true {
		t.Errorf("admin by group: %s", body)
	}
	// A state that is not the one sent: 400, a plain page.
	resp, body := e.browser(t, "GET", "/auth/callback?"+url.Values{"code": {"x"}, "state": {"y"}}.Encode(), "", nil, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(body), "state mismatch") || !strings.Contains(string(body), `href="/auth/login"`) {
		t.Errorf("state mismatch: %d %s", resp.StatusCode, body)
	}
	// An unverified email: 403.
	p.Set(func(p *signintest.Provider) {
		p.Claims = map[string]any{"email": "x@example.com", "email_verified": false}
	})
	resp, _ = e.browser(t, "GET", "/auth/login", "", nil, nil)
	state := cookieNamed(resp, signin.StateCookie)
	back := signintest.Authorize(t, resp.Header.Get("Location"))
	if resp, body := e.browser(t, "GET", "/auth/callback?"+back.Encode(), "", []*http.Cookie{state}, nil); resp.StatusCode != 403 {
		t.Errorf("unverified email: %d %s", resp.StatusCode, body)
	}
	// An open redirect is not taken.
	resp, _ = e.browser(t, "GET", "/auth/login?return_to=//evil.example", "", nil, nil)
	state = cookieNamed(resp, signin.StateCookie)
	p.Set(func(p *signintest.Provider) { p.Claims = map[string]any{"email": "x@example.com"} })
	back = signintest.Authorize(t, resp.Header.Get("Location"))
	if resp, _ := e.browser(t, "GET", "/auth/callback?"+back.Encode(), "", []*http.Cookie{state}, nil); resp.Header.Get("Location") != "/" {
		t.Errorf("return_to //evil.example went to %q", resp.Header.Get("Location"))
	}
}

func TestSessionCookieTakesSessionsOnly(t *testing.T) {
	e, _, tokens := signInEnv(t, false)
	// Single sign-on off: the sign-in page offers tokens; its routes are 404.
	if _, body := e.browser(t, "GET", "/auth/config", "", nil, nil); string(body) != `{"oidc":false}` {
		t.Errorf("config: %s", body)
	}
	for _, r := range []string{"GET /auth/login", "GET /auth/callback", "POST /auth/logout"} {
		m, path, _ := strings.Cut(r, " ")
		if resp, body := e.browser(t, m, path, "", nil, nil); resp.StatusCode != 404 || !strings.Contains(string(body), "BUREAU_OIDC_ISSUER") {
			t.Errorf("%s: %d %s", r, resp.StatusCode, body)
		}
	}
	// An API token in the cookie is not a sign-in.
	resp, _ := e.browser(t, "GET", "/api/v1/session", "", []*http.Cookie{{Name: signin.SessionCookie, Value: e.alice}}, nil)
	if resp.StatusCode != 401 {
		t.Errorf("API token as the cookie: %d", resp.StatusCode)
	}
	// A session still works by cookie; a session cannot mint a session
	// (only the callback does), and a desktop token reads who it is.
	secret, _, err := tokens.Create(context.Background(), auth.CreateRequest{Owner: "alice", Name: "signed in: A", Scope: desktop.ScopeOwner,
		TTL: time.Hour, Session: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := e.browser(t, "GET", "/api/v1/session", "", []*http.Cookie{{Name: signin.SessionCookie, Value: secret}}, nil); resp.StatusCode != 200 {
		t.Errorf("session by cookie with single sign-on off: %d", resp.StatusCode)
	}
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"who"}`)
	_, tok := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"desktop_id":"`+d["id"].(string)+`","computer_only":true}`)
	if code, who := e.do(t, tok["token"].(string), "GET", "/api/v1/session", ""); code != 200 || who["via"] != "token" {
		t.Errorf("computer-only token: %d %v", code, who)
	}
}
