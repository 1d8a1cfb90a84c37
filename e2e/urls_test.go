//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liveURL is one entry of list_urls.
type liveURL struct {
	Port    int    `json:"port"`
	URL     string `json:"url"`
	PathURL string `json:"path_url"`
	Public  bool   `json:"public"`
	Service string `json:"service"`
	Shares  int    `json:"shares"`
}

// mcpSession connects a real MCP client (the go-sdk's) to bureau over
// streamable HTTP with a token.
func (s *server) mcpSession(ctx context.Context, token string) *mcp.ClientSession {
	s.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cs.Close() })
	return cs
}

// tool calls an MCP tool and returns its text; a tool error fails the test.
func tool(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		t.Fatalf("%s: %s", name, text)
	}
	return text
}

// fetch GETs (or POSTs body to) a URL, optionally as host, with a token
// or a cookie jar, and returns the status and body.
func fetch(t *testing.T, c *http.Client, method, u, host, token string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// testLiveURLs is an agent's session through MCP only: it writes a web app
// with a WebSocket echo, runs it as a service with a secret and gets its
// live URL, which is private (the owner's token: 200, nobody else: 401),
// opens to a share link (in Go and in a real browser) until the link is
// revoked, opens to everyone only while public, and wakes the desktop
// when it hibernated. The desktop is the lifecycle test's (a second boot
// would cost minutes).
func testLiveURLs(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s.agentUp(token, d, 3*time.Minute)
	// Secrets are set by a human, never through MCP.
	if code := s.call(token, "PUT", "/api/v1/secrets/APP_KEY", map[string]string{"value": serviceKey}, nil); code != 200 {
		t.Fatalf("set secret: %d", code)
	}
	cs := s.mcpSession(ctx, token)
	tool(ctx, t, cs, "write_file", map[string]any{"desktop": d.ID, "path": "web/app.py", "content": liveApp})
	tool(ctx, t, cs, "create_service", map[string]any{"desktop": d.ID, "name": "web", "cmd": "exec python3 app.py", "cwd": "web",
		"port": 8125, "secrets": []string{"APP_KEY"}})
	defer tool(ctx, t, cs, "control_service", map[string]any{"desktop": d.ID, "name": "web", "action": "delete"})

	var urls struct{ URLs []liveURL }
	json.Unmarshal([]byte(tool(ctx, t, cs, "list_urls", map[string]any{"desktop": d.ID})), &urls)
	var u liveURL
	for _, x := range urls.URLs {
		if x.Port == 8125 {
			u = x
		}
	}
	base, _ := url.Parse(s.url)
	host := fmt.Sprintf("8125-%s.localhost:%s", d.ID, base.Port())
	if u.Service != "web" || u.Public || u.URL != "http://"+host+"/" || u.PathURL != s.url+"/preview/"+d.ID+"/8125/" {
		t.Fatalf("list_urls: %+v (all: %+v)", u, urls.URLs)
	}

	// Private: the owner's token opens it, nobody else.
	page := "live app " + keyDigest()
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := fetch(t, plain, "GET", u.PathURL, "", token, nil)
		if code == 200 && strings.Contains(body, page) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app does not answer at its live URL with the owner's token: %d %.300q", code, body)
		}
		time.Sleep(time.Second)
	}
	if code, body := fetch(t, plain, "GET", u.PathURL, "", "", nil); code != 401 || strings.Contains(body, page) {
		t.Errorf("without a token: %d %.200q", code, body)
	}
	if code, _ := fetch(t, plain, "GET", u.PathURL, "", "not-a-token", nil); code != 401 {
		t.Errorf("with a wrong token: %d", code)
	}
	// The host form, as the app sees it: its own Host, forwarded headers,
	// and none of bureau's credentials.
	code, body := fetch(t, plain, "GET", s.url+"/echo-headers", host, token, nil)
	if want := fmt.Sprintf("host=%s proto=http fwd-host=%s prefix=None auth=None cookie=None\n", host, host); code != 200 || body != want {
		t.Errorf("host form /echo-headers: %d %q, want %q", code, body, want)
	}
	code, body = fetch(t, plain, "GET", u.PathURL+"echo-headers", "", token, nil)
	if want := "prefix=/preview/" + d.ID + "/8125 auth=None"; code != 200 || !strings.Contains(body, want) {
		t.Errorf("path form /echo-headers: %d %q, want %q", code, body, want)
	}
	// HTTP/2 from the client (h2c: bureau has no TLS of its own).
	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	req, _ := http.NewRequest("GET", u.PathURL, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := (&http.Client{Transport: &http.Transport{Protocols: &h2}}).Do(req); err != nil {
		t.Errorf("HTTP/2: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(string(b), page) {
			t.Errorf("HTTP/2: %s %d %.100q", resp.Proto, resp.StatusCode, b)
		}
	}
	// A large upload streams through.
	if code, body := fetch(t, plain, "POST", u.PathURL+"upload", "", token, bytes.Repeat([]byte("x"), 8<<20)); code != 200 || body != "received 8388608 bytes\n" {
		t.Errorf("8 MiB upload: %d %q", code, body)
	}
	// A WebSocket through the live URL.
	wsURL := "ws" + strings.TrimPrefix(u.PathURL, "http") + "ws"
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("websocket %s: %v", wsURL, err)
	}
	for _, msg := range []string{"hello", strings.Repeat("long ", 100)} {
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatalf("websocket write: %v", err)
		}
		if _, got, err := conn.Read(ctx); err != nil || string(got) != msg {
			t.Errorf("websocket echo: %q %v", got, err)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")

	// A read-only share link: a person without an account opens it (a
	// cookie, then the page without the secret in the address), may not
	// POST, and loses access when it is revoked.
	var share struct {
		Share struct {
			ID       string `json:"id"`
			ReadOnly bool   `json:"read_only"`
		}
		URL     string `json:"url"`
		PathURL string `json:"path_url"`
	}
	json.Unmarshal([]byte(tool(ctx, t, cs, "share_url", map[string]any{"desktop": d.ID, "port": 8125, "hours": 1, "read_only": true})), &share)
	if share.Share.ID == "" || !share.Share.ReadOnly || !strings.HasPrefix(share.URL, "http://"+host+"/?bureau_share=bsh_") {
		t.Fatalf("share_url: %+v", share)
	}
	jar, _ := cookiejar.New(nil)
	visitor := &http.Client{Jar: jar}
	if code, body := fetch(t, visitor, "GET", share.PathURL, "", "", nil); code != 200 || !strings.Contains(body, page) {
		t.Errorf("share link: %d %.200q", code, body)
	}
	if code, body := fetch(t, visitor, "GET", u.PathURL, "", "", nil); code != 200 || !strings.Contains(body, page) {
		t.Errorf("after the share link, by cookie: %d %.200q", code, body)
	}
	if code, _ := fetch(t, visitor, "POST", u.PathURL+"upload", "", "", []byte("x")); code != 403 {
		t.Errorf("POST through a read-only share link: %d", code)
	}
	// The same link in a real browser, at the wildcard host name.
	shot := filepath.Join(os.TempDir(), "bureau-e2e-live-url.png")
	cmd := exec.CommandContext(ctx, "node", "liveurl.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "URL="+share.URL, "SCREENSHOT="+shot, "RELOAD_AFTER_STDIN=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(stdout)
	var seen struct {
		Status       int    `json:"status"`
		URL          string `json:"url"`
		H1           string `json:"h1"`
		WS           string `json:"ws"`
		ReloadStatus int    `json:"reload_status"`
	}
	if err := dec.Decode(&seen); err != nil {
		t.Fatalf("browser: %v\n%s", err, stderr.String())
	}
	// A read-only link opens no WebSocket (403: it could drive the app).
	if seen.Status != 200 || seen.URL != "http://"+host+"/" || seen.H1 != page || seen.WS != "websocket error" {
		t.Errorf("the share link in Chromium: %+v", seen)
	}
	t.Logf("Chromium opened the share link: %q, %q (screenshot %s)", seen.H1, seen.WS, shot)

	tool(ctx, t, cs, "revoke_share", map[string]any{"desktop": d.ID, "share": share.Share.ID})
	io.WriteString(stdin, "reload\n")
	if err := dec.Decode(&seen); err != nil || seen.ReloadStatus != 401 {
		t.Errorf("the browser after revoking: %+v %v\n%s", seen, err, stderr.String())
	}
	cmd.Wait()
	if code, _ := fetch(t, visitor, "GET", u.PathURL, "", "", nil); code != 401 {
		t.Errorf("by cookie after revoking: %d", code)
	}
	if code, _ := fetch(t, visitor, "GET", share.PathURL, "", "", nil); code != 401 {
		t.Errorf("the revoked link itself: %d", code)
	}
	if list := tool(ctx, t, cs, "list_shares", map[string]any{"desktop": d.ID}); !strings.Contains(list, `"revoked_at"`) || strings.Contains(list, "bsh_") {
		t.Errorf("list_shares: %s", list)
	}

	// Public only while the owner says so.
	tool(ctx, t, cs, "set_url_public", map[string]any{"desktop": d.ID, "port": 8125, "public": true})
	if code, body := fetch(t, plain, "GET", u.PathURL, "", "", nil); code != 200 || !strings.Contains(body, page) {
		t.Errorf("public: %d %.200q", code, body)
	}
	tool(ctx, t, cs, "set_url_public", map[string]any{"desktop": d.ID, "port": 8125, "public": false})
	if code, _ := fetch(t, plain, "GET", u.PathURL, "", "", nil); code != 401 {
		t.Errorf("private again: %d", code)
	}

	// Per-URL metrics: requests by status, bytes both ways.
	var metrics []byte
	s.call(adminToken, "GET", "/metrics", nil, &metrics)
	for _, series := range []string{
		`bureau_live_url_requests_total{code="200",desktop="` + d.ID + `",port="8125"}`,
		`bureau_live_url_requests_total{code="401",desktop="` + d.ID + `",port="8125"}`,
		`bureau_live_url_bytes_total{desktop="` + d.ID + `",direction="to_app",port="8125"} 8.388`,
		`bureau_live_url_request_duration_seconds_count{desktop="` + d.ID + `",port="8125"}`,
	} {
		if !strings.Contains(string(metrics), series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}

	// Hibernated, the desktop is woken by a request to its URL, which is
	// then served (an API client's request is held while it wakes).
	tool(ctx, t, cs, "hibernate_desktop", map[string]any{"desktop": d.ID})
	s.waitState(token, d.ID, desktop.StateHibernated, 3*time.Minute)
	begun := time.Now()
	if code, body := fetch(t, plain, "GET", u.PathURL, "", token, nil); code != 200 || !strings.Contains(body, page) {
		t.Fatalf("the URL of a hibernated desktop: %d %.200q", code, body)
	}
	t.Logf("a request to the hibernated desktop's URL woke it and was served in %s", time.Since(begun).Round(100*time.Millisecond))
	s.waitState(token, d.ID, desktop.StateRunning, time.Minute)
}
