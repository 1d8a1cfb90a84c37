package api

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liveApp is an app "in the desktop" (this machine) that says what it saw.
func liveApp(t *testing.T) int {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-Host", r.Host)
		w.Header().Set("X-Seen-Auth", r.Header.Get("Authorization"))
		w.Header().Set("X-Seen-Cookie", r.Header.Get("Cookie"))
		w.Header().Set("X-Seen-Prefix", r.Header.Get("X-Forwarded-Prefix"))
		io.WriteString(w, r.Method+" "+r.URL.RequestURI())
	}))
	t.Cleanup(app.Close)
	return app.Listener.Addr().(*net.TCPAddr).Port
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type hit struct {
	code   int
	body   string
	header http.Header
}

// get sends a request and reads its answer; a 101's body (the
// connection) is not read.
func get(t *testing.T, method, url, host string, hdr map[string]string) hit {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return hit{resp.StatusCode, "", resp.Header} // the body is the connection
	}
	b, _ := io.ReadAll(resp.Body)
	return hit{resp.StatusCode, string(b), resp.Header}
}

func TestLiveURLs(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	port := itoa(liveApp(t))
	path := e.srv.URL + "/preview/" + id + "/" + port
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	// Private by default.
	if h := get(t, "GET", path+"/x", "", nil); h.code != 401 || !strings.Contains(h.body, "private") {
		t.Fatalf("anonymous: %d %s", h.code, h.body)
	}
	// A browser that reached bureau by a name that is not the loopback's
	// cannot resolve <port>-<id>.localhost: it gets the path form, its
	// pages sandboxed away from the console's origin.
	h := get(t, "GET", path+"/x", "bureau.example:8080", map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate"})
	if h.code != 401 || !strings.Contains(h.body, "<html>") || !strings.HasPrefix(h.header.Get("Content-Security-Policy"), "sandbox ") ||
		strings.Contains(h.header.Get("Content-Security-Policy"), "allow-same-origin") {
		t.Errorf("anonymous browser: %d %s %v", h.code, h.body, h.header)
	}
	// One on the loopback is sent to the host form, path and query kept.
	h = get(t, "GET", path+"/x/y?a=1&bureau_login=c", "", map[string]string{"Sec-Fetch-Mode": "navigate"})
	if loc := h.header.Get("Location"); h.code != 307 || !strings.HasPrefix(loc, "http://"+port+"-"+id+".localhost:") || !strings.HasSuffix(loc, "/x/y?a=1&bureau_login=c") {
		t.Errorf("browser on the loopback: %d %v", h.code, h.header)
	}
	// A script or image the page loads is not redirected.
	if h := get(t, "GET", path+"/x", "", map[string]string{"Sec-Fetch-Mode": "no-cors", "Accept": "text/html"}); h.code != 401 {
		t.Errorf("subresource: %d %v", h.code, h.header)
	}
	if h := get(t, "GET", path+"/x", "", bearer(e.bob)); h.code != 401 {
		t.Errorf("bob: %d", h.code)
	}
	// The owner's token; the app never sees it, and sees its prefix.
	h = get(t, "GET", path+"/api/items?q=1", "", bearer(e.alice))
	if h.code != 200 || h.body != "GET /api/items?q=1" || h.header.Get("X-Seen-Auth") != "" || h.header.Get("X-Seen-Prefix") != "/preview/"+id+"/"+port ||
		h.header.Get("Content-Security-Policy") != pathFormSandbox {
		t.Fatalf("owner: %d %q %v", h.code, h.body, h.header)
	}
	// The wildcard-host form; the app sees the Host the client used.
	host := port + "-" + id + ".localhost"
	h = get(t, "GET", e.srv.URL+"/hello", host, bearer(e.alice))
	if h.code != 200 || h.body != "GET /hello" || h.header.Get("X-Seen-Host") != host {
		t.Fatalf("host form: %d %q %v", h.code, h.body, h.header)
	}
	if h := get(t, "GET", e.srv.URL+"/hello", "1-nosuchdesktop.localhost", bearer(e.alice)); h.code != 404 {
		t.Errorf("unknown desktop: %d", h.code)
	}
	// The web console's one-time sign-in link: a cookie for this URL only.
	code, open := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/urls/"+port+"/open", "")
	link, _ := open["url"].(string)
	if code != 200 || !strings.Contains(link, host) || !strings.Contains(link, "bureau_login=") {
		t.Fatalf("open: %d %v", code, open)
	}
	query := link[strings.Index(link, "?"):]
	h = get(t, "GET", e.srv.URL+"/"+query, host, nil)
	cookie := strings.Split(h.header.Get("Set-Cookie"), ";")[0]
	if h.code != 303 || h.header.Get("Location") != "/" || !strings.HasPrefix(cookie, previewCookie+"=") || !strings.Contains(h.header.Get("Set-Cookie"), "HttpOnly") {
		t.Fatalf("sign-in: %d %v", h.code, h.header)
	}
	h = get(t, "GET", e.srv.URL+"/page", host, map[string]string{"Cookie": cookie + "; app=1"})
	if h.code != 200 || h.header.Get("X-Seen-Cookie") != "app=1" {
		t.Fatalf("with the cookie: %d %v (the app must not see bureau's cookie)", h.code, h.header)
	}
	if h := get(t, "GET", e.srv.URL+"/"+query, host, nil); h.code != 401 {
		t.Errorf("a login code used twice: %d", h.code)
	}
	if h := get(t, "GET", e.srv.URL+"/page", "1-"+id+".localhost", map[string]string{"Cookie": cookie}); h.code != 401 {
		t.Errorf("the cookie opened another port: %d", h.code)
	}
	// A read-only share link, then revoked.
	code, sh := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/shares", `{"port":`+port+`,"read_only":true,"ttl_s":3600}`)
	if code != 201 {
		t.Fatalf("share: %d %v", code, sh)
	}
	shareURL := sh["path_url"].(string)
	shareID := sh["share"].(map[string]any)["id"].(string)
	h = get(t, "GET", shareURL, "", nil)
	shareCookie := strings.Split(h.header.Get("Set-Cookie"), ";")[0]
	if h.code != 303 || !strings.Contains(h.header.Get("Set-Cookie"), "Path=/preview/"+id+"/"+port+"/") {
		t.Fatalf("share sign-in: %d %v", h.code, h.header)
	}
	if h := get(t, "GET", path+"/doc", "", map[string]string{"Cookie": shareCookie}); h.code != 200 {
		t.Errorf("shared GET: %d %s", h.code, h.body)
	}
	if h := get(t, "POST", path+"/doc", "", map[string]string{"Cookie": shareCookie}); h.code != 403 {
		t.Errorf("shared read-only POST: %d", h.code)
	}
	// A client that came by another name than the loopback cannot resolve
	// <port>-<id>.localhost: it is given the path form only.
	if h := get(t, "GET", e.srv.URL+"/api/v1/desktops/"+id+"/urls", "bureau.example:8080", bearer(e.alice)); h.code != 200 ||
		strings.Contains(h.body, `"url":`) || !strings.Contains(h.body, `"path_url":"http://bureau.example:8080/preview/`+id+"/"+port+`/"`) {
		t.Errorf("urls from elsewhere: %d %s", h.code, h.body)
	}
	code, list := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/urls", "")
	if urls, _ := list["urls"].([]any); code != 200 || len(urls) != 1 || urls[0].(map[string]any)["shares"] != float64(1) {
		t.Errorf("urls: %d %v", code, list)
	}
	if code, _ := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id+"/shares/"+shareID, ""); code != 204 {
		t.Errorf("revoke: %d", code)
	}
	if h := get(t, "GET", path+"/doc", "", map[string]string{"Cookie": shareCookie}); h.code != 401 {
		t.Errorf("after revoking: %d", h.code)
	}
	if h := get(t, "GET", shareURL, "", nil); h.code != 401 {
		t.Errorf("a revoked link: %d", h.code)
	}
	if code, _ := e.do(t, e.bob, "POST", "/api/v1/desktops/"+id+"/shares", `{"port":`+port+`}`); code != 404 {
		t.Errorf("bob shares alice's desktop: %d", code)
	}
	for _, bad := range []string{`{"port":0}`, `{"port":80,"ttl_s":5}`, `{"port":80,"ttl_s":99999999}`} {
		if code, body := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/shares", bad); code != 422 {
			t.Errorf("%s: %d %v", bad, code, body)
		}
	}
	// Public when the owner says so, private again after.
	if code, u := e.do(t, e.alice, "PUT", "/api/v1/desktops/"+id+"/urls/"+port, `{"public":true}`); code != 200 || u["public"] != true {
		t.Fatalf("make public: %d %v", code, u)
	}
	if h := get(t, "POST", path+"/form", "", nil); h.code != 200 {
		t.Errorf("public: %d", h.code)
	}
	e.do(t, e.alice, "PUT", "/api/v1/desktops/"+id+"/urls/"+port, `{"public":false}`)
	if h := get(t, "GET", path+"/form", "", nil); h.code != 401 {
		t.Errorf("private again: %d", h.code)
	}
	// A sleeping desktop: a browser gets a page that retries while it
	// wakes; an API client is held until it runs.
	e.desktops.setState(id, desktop.StateHibernated)
	if h := get(t, "GET", e.srv.URL+"/", host, map[string]string{"Authorization": "Bearer " + e.alice, "Accept": "text/html"}); h.code != 503 || !strings.Contains(h.body, "Waking") {
		t.Errorf("browser to a hibernated desktop: %d %s", h.code, h.body)
	}
	e.desktops.setState(id, desktop.StateHibernated)
	if h := get(t, "GET", path+"/", "", bearer(e.alice)); h.code != 200 {
		t.Errorf("API client to a hibernated desktop: %d %s", h.code, h.body)
	}
	if d, _ := e.desktops.Get(t.Context(), id); d.State != desktop.StateRunning {
		t.Errorf("not woken: %s", d.State)
	}
}

// The URL tools over MCP answer with URLs on the host the MCP client used,
// and a share link made through MCP opens the URL.
func TestMCPURLTools(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	port := liveApp(t)
	cs, err := mcpSession(t, e, e.alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	var share struct {
		Share   struct{ ID string }
		PathURL string `json:"path_url"`
	}
	json.Unmarshal([]byte(call("share_url", map[string]any{"desktop": id, "port": port, "hours": 2})), &share)
	if !strings.HasPrefix(share.PathURL, e.srv.URL+"/preview/"+id+"/"+itoa(port)+"/?bureau_share=bsh_") {
		t.Fatalf("share_url: %+v", share)
	}
	if h := get(t, "GET", share.PathURL, "", nil); h.code != 303 || h.header.Get("Set-Cookie") == "" {
		t.Errorf("the share link: %d %s", h.code, h.body)
	}
	list := call("list_urls", map[string]any{"desktop": id})
	if !strings.Contains(list, `"path_url":"`+e.srv.URL+"/preview/"+id+"/"+itoa(port)+`/"`) || !strings.Contains(list, `"shares":1`) {
		t.Errorf("list_urls: %s", list)
	}
	call("revoke_share", map[string]any{"desktop": id, "share": share.Share.ID})
	if h := get(t, "GET", share.PathURL, "", nil); h.code != 401 {
		t.Errorf("the revoked link: %d", h.code)
	}
	if out := call("set_url_public", map[string]any{"desktop": id, "port": port, "public": true}); !strings.Contains(out, `"public":true`) {
		t.Errorf("set_url_public: %s", out)
	}
	if h := get(t, "GET", e.srv.URL+"/preview/"+id+"/"+itoa(port)+"/x", "", nil); h.code != 200 {
		t.Errorf("public: %d", h.code)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "share_url", Arguments: map[string]any{"desktop": id, "port": 0}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "port") {
		t.Errorf("share_url port 0: %v %+v", err, res)
	}
}
