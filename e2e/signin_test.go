//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The provider's people: an admin (in bureau-admins) and a member.
const (
	ssoAdminUser, ssoAdminPassword, ssoAdminEmail    = "alice", "alice-Pa55word", "alice@example.test"
	ssoMemberUser, ssoMemberPassword, ssoMemberEmail = "bob", "bob-Pa55word", "bob@example.test"
	ssoClientID, ssoClientSecret                     = "bureau-e2e", "bureau-e2e-client-secret-0123456789"
)

// TestSignIn signs people in to bureau with OpenID Connect against a real
// provider (tools/oidc-provider: ZITADEL's oidc library, on the loopback):
// in Chromium through the web console (the single sign-on button, the
// provider's login form, the desktop list signed in, an API token made on
// the API tokens page and used as a Bearer token, signing out ending the
// session cookie), and with a plain HTTP client (the CSRF header a
// cookie-authenticated change needs, a callback with a wrong state, the
// admin group, tokens that outlive signing out). It boots no desktop.
func TestSignIn(t *testing.T) {
	needE2E(t)
	bureauPort, providerPort := freePort(t), freePort(t)
	bureauURL := "http://127.0.0.1:" + bureauPort
	issuer := "http://127.0.0.1:" + providerPort + "/"
	startOIDCProvider(t, providerPort, bureauURL+"/auth/callback")
	secretFile := filepath.Join(t.TempDir(), "oidc-client-secret")
	if err := os.WriteFile(secretFile, []byte(ssoClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newServerWith(t, func(s *server) {
		s.listen = "127.0.0.1:" + bureauPort
		s.env = append(s.env, "BUREAU_WARM_SPARES=0",
			"BUREAU_OIDC_ISSUER="+issuer, "BUREAU_OIDC_CLIENT_ID="+ssoClientID, "BUREAU_OIDC_CLIENT_SECRET_FILE="+secretFile,
			"BUREAU_OIDC_ADMIN_GROUPS=bureau-admins")
	})

	t.Run("config", func(t *testing.T) {
		var c struct {
			OIDC     bool   `json:"oidc"`
			Provider string `json:"provider"`
		}
		// bureau reads the provider's discovery at start, in the
		// background when it was not there yet.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if code := s.call("", "GET", "/auth/config", nil, &c); code == 200 && c.OIDC {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /auth/config: %+v", c)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if c.Provider == "" {
			t.Errorf("GET /auth/config names no provider: %+v", c)
		}
	})

	t.Run("browser", func(t *testing.T) {
		listShot := filepath.Join(os.TempDir(), "bureau-e2e-signin-desktops.png")
		tokensShot := filepath.Join(os.TempDir(), "bureau-e2e-signin-tokens.png")
		signinShot := filepath.Join(os.TempDir(), "bureau-e2e-signin-page.png")
		var page struct {
			SSOButton        string `json:"sso_button"`
			ProviderPage     string `json:"provider_page"`
			Name, Owner      string
			Admin            bool
			ListShown        bool   `json:"list_shown"`
			NameError        string `json:"name_error"`
			APIError         string `json:"api_error"`
			Secret           string
			SecretTokenID    string `json:"secret_token_id"`
			Warning          string
			SessionCookie    string `json:"session_cookie"`
			CookieHTTPOnly   bool   `json:"cookie_http_only"`
			ScriptSeesCookie bool   `json:"script_sees_cookie"`
			SignedOut        bool   `json:"signed_out"`
			Errors           []string
		}
		consoleScript(t, s, "signin.mjs", "signing in with single sign-on in the console", &page,
			"OIDC_USER="+ssoMemberUser, "OIDC_PASSWORD="+ssoMemberPassword, "TOKEN_NAME=e2e agent from the console",
			"LIST_SHOT="+listShot, "TOKENS_SHOT="+tokensShot, "SIGNIN_SHOT="+signinShot)
		t.Logf("screenshots: %s %s %s", signinShot, listShot, tokensShot)
		if !strings.Contains(page.SSOButton, "single sign-on") || !strings.HasPrefix(page.ProviderPage, "http://127.0.0.1:"+providerPort+"/") {
			t.Errorf("sign-in button %q led to %q", page.SSOButton, page.ProviderPage)
		}
		if page.Owner != ssoMemberEmail || page.Name != "Bob Member" || page.Admin || !page.ListShown {
			t.Errorf("signed in as %q (owner %q, admin %v), desktop list shown %v: want %s, not an admin", page.Name, page.Owner, page.Admin, page.ListShown, ssoMemberEmail)
		}
		if page.NameError == "" || !strings.Contains(page.APIError, "d_nosuchdesktop") {
			t.Errorf("bad input: no name → %q; a desktop that is not there → %q (want the API's message)", page.NameError, page.APIError)
		}
		if !strings.Contains(page.Warning, "not see it again") {
			t.Errorf("the secret is shown without saying it is shown once: %q", page.Warning)
		}
		if !page.CookieHTTPOnly || page.ScriptSeesCookie {
			t.Errorf("the session cookie is readable by scripts (HttpOnly %v, in document.cookie %v)", page.CookieHTTPOnly, page.ScriptSeesCookie)
		}
		if len(page.Errors) > 0 {
			t.Errorf("page errors: %v", page.Errors)
		}
		// The token made in the console works as a Bearer token, and is
		// the person's.
		var list struct{ Desktops []any }
		if code := s.call(page.Secret, "GET", "/api/v1/desktops", nil, &list); code != 200 {
			t.Errorf("GET /api/v1/desktops with the console's token: %d", code)
		}
		var who sessionInfo
		if code := s.call(page.Secret, "GET", "/api/v1/session", nil, &who); code != 200 || who.Owner != ssoMemberEmail || who.Via != "token" || who.Admin || who.TokenID != page.SecretTokenID || who.CSRFToken != "" {
			t.Errorf("GET /api/v1/session with the console's token: %d %+v, want owner %s via token %s", code, who, ssoMemberEmail, page.SecretTokenID)
		}
		// Signing out ended the session: its cookie is refused.
		if !page.SignedOut || page.SessionCookie == "" {
			t.Fatalf("not signed out (%v) or no session cookie", page.SignedOut)
		}
		req, _ := http.NewRequest("GET", s.url+"/api/v1/session", nil)
		req.AddCookie(&http.Cookie{Name: "bureau_session", Value: page.SessionCookie})
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
			t.Errorf("the session cookie after signing out: %v %v, want 401", resp.StatusCode, err)
		} else {
			resp.Body.Close()
		}
	})

	t.Run("csrf_and_logout", func(t *testing.T) {
		c := ssoSignIn(t, s, providerPort, ssoMemberUser, ssoMemberPassword)
		var me sessionInfo
		if code := c.do("GET", "/api/v1/session", "", nil, &me); code != 200 || me.Via != "sign-in" || me.Owner != ssoMemberEmail || me.Admin || me.CSRFToken == "" || me.TokenID == "" {
			t.Fatalf("GET /api/v1/session signed in: %d %+v", code, me)
		}
		mint := map[string]any{"name": "e2e agent of a session", "ttl_seconds": 3600}
		var e apiErr
		if code := c.do("POST", "/api/v1/tokens", "", mint, &e); code != 403 || e.Error.Code != "csrf" {
			t.Errorf("a change with the cookie and no X-CSRF-Token: %d %+v, want 403 csrf", code, e.Error)
		}
		e = apiErr{}
		if code := c.do("POST", "/api/v1/tokens", "not-the-csrf-token", mint, &e); code != 403 || e.Error.Code != "csrf" {
			t.Errorf("a change with a wrong X-CSRF-Token: %d %+v, want 403 csrf", code, e.Error)
		}
		e = apiErr{}
		if code := c.doWith("POST", "/api/v1/tokens", me.CSRFToken, mint, &e, "Sec-Fetch-Site", "cross-site"); code != 403 || e.Error.Code != "csrf" {
			t.Errorf("a change from another site: %d %+v, want 403 csrf", code, e.Error)
		}
		var made struct {
			Token string
			Info  struct{ ID, Owner, Scope string }
		}
		if code := c.do("POST", "/api/v1/tokens", me.CSRFToken, mint, &made); code != 201 || made.Token == "" || made.Info.Owner != ssoMemberEmail || made.Info.Scope != "owner" {
			t.Fatalf("a change with the X-CSRF-Token: %d %+v", code, made.Info)
		}
		// Reading needs no CSRF token.
		if code := c.do("GET", "/api/v1/desktops", "", nil, nil); code != 200 {
			t.Errorf("GET /api/v1/desktops signed in: %d", code)
		}
		// Signing out revokes the session, not what it minted.
		if code := c.doPath("POST", s.url+"/auth/logout", me.CSRFToken, nil, nil); code != 204 {
			t.Errorf("POST /auth/logout: %d, want 204", code)
		}
		if code := c.do("GET", "/api/v1/session", "", nil, nil); code != 401 {
			t.Errorf("GET /api/v1/session after signing out: %d, want 401", code)
		}
		var after sessionInfo
		if code := s.call(made.Token, "GET", "/api/v1/session", nil, &after); code != 200 || after.Owner != ssoMemberEmail {
			t.Errorf("the token minted in the session, after signing out: %d %+v", code, after)
		}
		if code := s.call(made.Token, "GET", "/api/v1/desktops", nil, nil); code != 200 {
			t.Errorf("GET /api/v1/desktops with the token minted in the session, after signing out: %d", code)
		}
	})

	t.Run("admin_group", func(t *testing.T) {
		c := ssoSignIn(t, s, providerPort, ssoAdminUser, ssoAdminPassword)
		var me sessionInfo
		if code := c.do("GET", "/api/v1/session", "", nil, &me); code != 200 || !me.Admin || me.Owner != ssoAdminEmail || me.Via != "sign-in" {
			t.Fatalf("the admin's session: %d %+v, want admin", code, me)
		}
		// An admin's session reaches admin calls.
		if code := c.do("GET", "/api/v1/hosts", "", nil, nil); code != 200 {
			t.Errorf("GET /api/v1/hosts as the admin's session: %d", code)
		}
		m := ssoSignIn(t, s, providerPort, ssoMemberUser, ssoMemberPassword)
		var member sessionInfo
		if code := m.do("GET", "/api/v1/session", "", nil, &member); code != 200 || member.Admin {
			t.Errorf("the member's session: %d %+v, want no admin", code, member)
		}
		var e apiErr
		if code := m.do("GET", "/api/v1/hosts", "", nil, &e); code != 403 {
			t.Errorf("GET /api/v1/hosts as the member's session: %d, want 403", code)
		}
	})

	t.Run("wrong_state", func(t *testing.T) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(s.url + "/auth/login?return_to=/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != 302 || loc == nil || loc.Query().Get("state") == "" || loc.Query().Get("code_challenge_method") != "S256" {
			t.Fatalf("GET /auth/login: %d to %q, want 302 to the provider with a state and PKCE", resp.StatusCode, resp.Header.Get("Location"))
		}
		for _, q := range []string{"code=anything&state=" + url.QueryEscape(loc.Query().Get("state")+"x"), "code=anything&state="} {
			resp, err := c.Get(s.url + "/auth/callback?" + q)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(body), "state") {
				t.Errorf("GET /auth/callback?%s: %d %.200s, want 400 naming the state", q, resp.StatusCode, body)
			}
			for _, ck := range resp.Cookies() {
				if ck.Name == "bureau_session" && ck.Value != "" {
					t.Errorf("a session cookie after a wrong state")
				}
			}
		}
		// Without the login's cookie at all.
		resp, err = http.Get(s.url + "/auth/callback?code=anything&state=" + url.QueryEscape(loc.Query().Get("state")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("GET /auth/callback without the login's cookie: %d, want 400", resp.StatusCode)
		}
	})
}

// sessionInfo is GET /api/v1/session's answer.
type sessionInfo struct {
	Owner     string `json:"owner"`
	Name      string `json:"name"`
	Admin     bool   `json:"admin"`
	Via       string `json:"via"`
	TokenID   string `json:"token_id"`
	CSRFToken string `json:"csrf_token"`
}

// startOIDCProvider builds (once) and starts tools/oidc-provider on port
// with the two test people and bureau's client, until the test ends.
func startOIDCProvider(t *testing.T, port, redirectURI string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot(t), "scripts/oidc-provider-setup.sh")).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("scripts/oidc-provider-setup.sh: %v\n%s", err, msg)
	}
	bin := strings.TrimSpace(string(out))
	dir := t.TempDir()
	users := map[string]any{
		"u-alice": map[string]any{"ID": "u-alice", "Username": ssoAdminUser, "Password": ssoAdminPassword, "FirstName": "Alice", "LastName": "Admin",
			"Email": ssoAdminEmail, "EmailVerified": true, "IsAdmin": true, "Groups": []string{"bureau-admins", "staff"}},
		"u-bob": map[string]any{"ID": "u-bob", "Username": ssoMemberUser, "Password": ssoMemberPassword, "FirstName": "Bob", "LastName": "Member",
			"Email": ssoMemberEmail, "EmailVerified": true, "Groups": []string{"staff"}},
	}
	b, _ := json.Marshal(users)
	usersFile := filepath.Join(dir, "users.json")
	if err := os.WriteFile(usersFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "oidc-provider.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://127.0.0.1:" + port + "/"
	cmd := exec.Command(bin, "-listen", "127.0.0.1:"+port, "-issuer", issuer, "-client-id", ssoClientID, "-client-secret", ssoClientSecret,
		"-redirect-uri", redirectURI, "-users", usersFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("the OpenID provider's log (last of it):\n%s", tailBytes(b, 3000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(issuer + ".well-known/openid-configuration")
		if err == nil {
			var doc struct{ Issuer string }
			json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if resp.StatusCode == 200 && doc.Issuer == issuer {
				return
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the OpenID provider ended:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OpenID provider did not answer its discovery document: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ssoClient is an HTTP client signed in to bureau with single sign-on (the
// session cookie in its jar).
type ssoClient struct {
	t *testing.T
	s *server
	c *http.Client
}

// ssoSignIn signs user in as a browser would, without one: bureau's
// /auth/login, the provider's login form, and back through bureau's
// callback, following the redirects with a cookie jar.
func ssoSignIn(t *testing.T, s *server, providerPort, user, password string) *ssoClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(s.url + "/auth/login?return_to=/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Request.URL.Query().Get("authRequestID")
	if resp.StatusCode != 200 || id == "" || !bytes.Contains(body, []byte(`name="password"`)) {
		t.Fatalf("bureau's /auth/login led to %s (%d), not the provider's login form: %.300s", resp.Request.URL, resp.StatusCode, body)
	}
	resp, err = c.PostForm("http://127.0.0.1:"+providerPort+"/login/username", url.Values{"id": {id}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Request.URL.String(), s.url+"/") {
		t.Fatalf("signing in as %s ended at %s (%d): %.300s", user, resp.Request.URL, resp.StatusCode, body)
	}
	u, _ := url.Parse(s.url)
	found := false
	for _, ck := range jar.Cookies(u) {
		found = found || ck.Name == "bureau_session" && ck.Value != ""
	}
	if !found {
		t.Fatalf("no bureau_session cookie after signing in as %s", user)
	}
	return &ssoClient{t: t, s: s, c: c}
}

// do calls bureau at path with the session cookie and, when csrf is not
// empty, the X-CSRF-Token header; it decodes a JSON answer into out.
func (c *ssoClient) do(method, path, csrf string, body, out any) int {
	c.t.Helper()
	return c.doWith(method, path, csrf, body, out)
}

func (c *ssoClient) doPath(method, fullURL, csrf string, body, out any) int {
	c.t.Helper()
	return c.send(method, fullURL, csrf, body, out)
}

// doWith is do with extra headers (name, value pairs).
func (c *ssoClient) doWith(method, path, csrf string, body, out any, headers ...string) int {
	c.t.Helper()
	return c.send(method, c.s.url+path, csrf, body, out, headers...)
}

func (c *ssoClient) send(method, fullURL, csrf string, body, out any, headers ...string) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, fullURL, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, fullURL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Errorf("%s %s: %d %.300s: %v", method, fullURL, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}
