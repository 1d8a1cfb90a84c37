package api

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// secApp is an app "in the desktop" that records every request it is
// sent, answers WebSocket upgrades (101), sets the cookies and headers a
// test gives it at /cookies, and sends 103 Early Hints before its page at
// /early.
type secApp struct {
	port    int
	mu      sync.Mutex
	seen    []string
	cookies []string
}

func newSecApp(t *testing.T) *secApp {
	a := &secApp{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Method+" "+r.URL.Path)
		cookies := a.cookies
		a.mu.Unlock()
		switch {
		case strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
			if c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}); err == nil {
				c.CloseNow()
			}
		case strings.HasSuffix(r.URL.Path, "/cookies"):
			for _, line := range cookies {
				w.Header().Add("Set-Cookie", line)
			}
			w.Header().Set("Clear-Site-Data", `"storage", "cookies"`)
			w.Header().Set("Service-Worker-Allowed", "/")
			w.Header().Set("X-App", "kept")
			io.WriteString(w, "cookies")
		case strings.HasSuffix(r.URL.Path, "/early"):
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, `<!doctype html><script>fetch("/api/v1/tokens", {headers: {Authorization: "Bearer " + localStorage.getItem("bureau_token")}})</script>`)
		default:
			io.WriteString(w, r.Method+" "+r.URL.Path)
		}
	}))
	t.Cleanup(srv.Close)
	a.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return a
}

// saw says whether the app was sent a request for path (any method).
func (a *secApp) saw(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.seen, func(s string) bool { _, p, _ := strings.Cut(s, " "); return p == path })
}

func (a *secApp) setCookies(lines ...string) {
	a.mu.Lock()
	a.cookies = lines
	a.mu.Unlock()
}

// wsHeaders are a browser's WebSocket handshake's.
func wsHeaders(extra map[string]string) map[string]string {
	h := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func with(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// shareCookie makes a share link for the port and opens it at the path
// form (host ""), or at the host form: the cookie it signs in with.
func shareCookie(t *testing.T, e *env, id, port string, readOnly bool, host string) string {
	t.Helper()
	ro := "false"
	if readOnly {
		ro = "true"
	}
	code, sh := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/shares", `{"port":`+port+`,"read_only":`+ro+`,"ttl_s":3600}`)
	if code != 201 {
		t.Fatalf("share: %d %v", code, sh)
	}
	link := sh["path_url"].(string)
	if host != "" {
		u, _ := url.Parse(sh["url"].(string))
		link = e.srv.URL + "/?" + u.RawQuery
	}
	h := get(t, "GET", link, host, nil)
	if h.code != 303 {
		t.Fatalf("share sign-in: %d %v", h.code, h.header)
	}
	return strings.Split(h.header.Get("Set-Cookie"), ";")[0]
}

// A read-only share link lets its visitor read (GET, HEAD) and nothing
// else: no other method, and no WebSocket (enough to drive a terminal or
// a notebook), at either form of the URL. A link that is not read-only
// opens WebSockets.
func TestReadOnlyShareRefusesUpgradesAndWrites(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	app := newSecApp(t)
	port := itoa(app.port)
	path := e.srv.URL + "/preview/" + id + "/" + port
	host := port + "-" + id + ".localhost"
	ro := map[string]string{"Cookie": shareCookie(t, e, id, port, true, "")}
	roHost := map[string]string{"Cookie": shareCookie(t, e, id, port, true, host)}
	rw := map[string]string{"Cookie": shareCookie(t, e, id, port, false, "")}

	if h := get(t, "GET", path+"/rw-ws", "", with(rw, wsHeaders(nil))); h.code != 101 || !app.saw("/rw-ws") {
		t.Fatalf("a WebSocket through a share link that is not read-only: %d %s", h.code, h.body)
	}
	for _, c := range []struct {
		name, method, url, host string
		hdr                     map[string]string
	}{
		{"WebSocket", "GET", path + "/ro-ws", "", with(ro, wsHeaders(nil))},
		{"WebSocket at the host form", "GET", e.srv.URL + "/ro-host-ws", host, with(roHost, wsHeaders(nil))},
		{"Connection: keep-alive, Upgrade", "GET", path + "/ro-ws2", "", with(ro, wsHeaders(map[string]string{"Connection": "keep-alive, Upgrade"}))},
		{"Upgrade without Connection", "GET", path + "/ro-ws3", "", with(ro, map[string]string{"Upgrade": "websocket"})},
		{"an h2c upgrade", "GET", path + "/ro-h2c", "", with(ro, map[string]string{"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA"})},
		{"POST", "POST", path + "/ro-post", "", ro},
		{"PUT", "PUT", path + "/ro-put", "", ro},
		{"PATCH", "PATCH", path + "/ro-patch", "", ro},
		{"DELETE", "DELETE", path + "/ro-delete", "", ro},
		{"OPTIONS", "OPTIONS", path + "/ro-options", "", ro},
		{"DELETE at the host form", "DELETE", e.srv.URL + "/ro-host-delete", host, roHost},
	} {
		h := get(t, c.method, c.url, c.host, c.hdr)
		p, _ := url.Parse(c.url)
		if h.code != 403 || !strings.Contains(h.body, "read-only") || app.saw(strings.TrimPrefix(p.Path, "/preview/"+id+"/"+port)) {
			t.Errorf("%s through a read-only share link: %d %s (the app saw it: %v)", c.name, h.code, h.body, app.saw(strings.TrimPrefix(p.Path, "/preview/"+id+"/"+port)))
		}
	}
	if h := get(t, "GET", path+"/ro-get", "", ro); h.code != 200 || !app.saw("/ro-get") {
		t.Errorf("GET through a read-only share link: %d", h.code)
	}
	if h := get(t, "HEAD", path+"/ro-head", "", ro); h.code != 200 || !app.saw("/ro-head") {
		t.Errorf("HEAD through a read-only share link: %d", h.code)
	}
}

// With a real preview domain every desktop's apps are same-site with each
// other, so a browser's bureau_url cookie (SameSite=Lax) would ride on a
// POST or a WebSocket that another desktop's page starts. A request that
// only the cookie lets in may change something (any method but GET, HEAD
// and OPTIONS; a WebSocket) only when it comes from the URL's own pages.
func TestLiveURLCookieRefusesCrossSiteRequests(t *testing.T) {
	// The test's client stands in for a TLS proxy on the loopback too.
	e := newEnvDeps(t, nil, func(d *Deps) { d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} })
	id := agentDesktop(t, e)
	app := newSecApp(t)
	port := itoa(app.port)
	host := port + "-" + id + ".localhost"
	sibling := "http://1-" + id + ".localhost"
	path := e.srv.URL + "/preview/" + id + "/" + port

	// Signed in at the host form by the console's Open button.
	code, open := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/urls/"+port+"/open", "")
	link, _ := open["url"].(string)
	if code != 200 || !strings.Contains(link, "?") {
		t.Fatalf("open: %d %v", code, open)
	}
	h := get(t, "GET", e.srv.URL+"/"+link[strings.Index(link, "?"):], host, nil)
	ck := map[string]string{"Cookie": strings.Split(h.header.Get("Set-Cookie"), ";")[0]}
	if h.code != 303 {
		t.Fatalf("sign-in: %d %v", h.code, h.header)
	}
	// Signed in at the path form by a share link.
	pck := map[string]string{"Cookie": shareCookie(t, e, id, port, false, "")}
	bearer := map[string]string{"Authorization": "Bearer " + e.alice}

	type hdr = map[string]string
	for _, c := range []struct {
		name, method, path, host string
		hdr                      hdr
		want                     int
	}{
		// The host form.
		{"POST from the app's own page", "POST", "/own", host, with(ck, hdr{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host}), 200},
		{"POST the user started (Sec-Fetch-Site: none)", "POST", "/none", host, with(ck, hdr{"Sec-Fetch-Site": "none"}), 200},
		{"POST from another desktop's app", "POST", "/same-site", host, with(ck, hdr{"Sec-Fetch-Site": "same-site", "Origin": sibling}), 403},
		{"POST from another site", "POST", "/cross-site", host, with(ck, hdr{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}), 403},
		{"POST from a sandboxed page elsewhere", "POST", "/null", host, with(ck, hdr{"Sec-Fetch-Site": "cross-site", "Origin": "null"}), 403},
		{"PUT from another desktop's app", "PUT", "/put", host, with(ck, hdr{"Sec-Fetch-Site": "same-site", "Origin": sibling}), 403},
		{"DELETE from another desktop's app", "DELETE", "/delete", host, with(ck, hdr{"Sec-Fetch-Site": "same-site"}), 403},
		{"POST from another desktop's app, no Fetch Metadata", "POST", "/old-browser", host, with(ck, hdr{"Origin": sibling}), 403},
		{"POST with its own Origin, no Fetch Metadata", "POST", "/old-own", host, with(ck, hdr{"Origin": "http://" + host}), 200},
		{"POST with its own https Origin behind a TLS proxy", "POST", "/tls-own", host, with(ck, hdr{"Origin": "https://" + host, "X-Forwarded-Proto": "https"}), 200},
		{"POST with an http Origin behind a TLS proxy", "POST", "/tls-http", host, with(ck, hdr{"Origin": "http://" + host, "X-Forwarded-Proto": "https"}), 403},
		{"POST from a program (no Origin)", "POST", "/program", host, ck, 200},
		{"GET from another desktop's app", "GET", "/get", host, with(ck, hdr{"Sec-Fetch-Site": "same-site", "Origin": sibling}), 200},
		{"OPTIONS from another site", "OPTIONS", "/options", host, with(ck, hdr{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}), 200},
		{"WebSocket from the app's own page", "GET", "/ws-own", host, with(ck, wsHeaders(hdr{"Origin": "http://" + host})), 101},
		{"WebSocket from another desktop's app", "GET", "/ws-sibling", host, with(ck, wsHeaders(hdr{"Origin": sibling})), 403},
		{"WebSocket from another desktop's app, with Fetch Metadata", "GET", "/ws-sibling-sfs", host, with(ck, wsHeaders(hdr{"Origin": sibling, "Sec-Fetch-Site": "same-site"})), 403},
		{"WebSocket from a sandboxed page elsewhere", "GET", "/ws-null", host, with(ck, wsHeaders(hdr{"Origin": "null"})), 403},
		// Not the cookie: the owner's token (a program) is not a browser's ambient sign-in.
		{"POST with the owner's token from another site", "POST", "/bearer", host, with(bearer, hdr{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}), 200},
		{"WebSocket with the owner's token from another site", "GET", "/ws-bearer", host, with(bearer, wsHeaders(hdr{"Origin": "https://evil.example"})), 101},
		// The path form: bureau's origin, its pages sandboxed (their own
		// requests come from an opaque origin: Origin: null, cross-site).
		{"path form: POST from the console's origin", "POST", "/preview/" + id + "/" + port + "/p-own", "", with(pck, hdr{"Sec-Fetch-Site": "same-origin", "Origin": e.srv.URL}), 200},
		{"path form: POST from the app's own sandboxed page", "POST", "/preview/" + id + "/" + port + "/p-null", "", with(pck, hdr{"Sec-Fetch-Site": "cross-site", "Origin": "null"}), 200},
		{"path form: POST from another desktop's app", "POST", "/preview/" + id + "/" + port + "/p-sibling", "", with(pck, hdr{"Sec-Fetch-Site": "same-site", "Origin": sibling}), 403},
		{"path form: POST from another site", "POST", "/preview/" + id + "/" + port + "/p-evil", "", with(pck, hdr{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}), 403},
		{"path form: WebSocket from another desktop's app", "GET", "/preview/" + id + "/" + port + "/p-ws-sibling", "", with(pck, wsHeaders(hdr{"Origin": sibling})), 403},
		{"path form: WebSocket from the console's origin", "GET", "/preview/" + id + "/" + port + "/p-ws-own", "", with(pck, wsHeaders(hdr{"Origin": e.srv.URL})), 101},
	} {
		h := get(t, c.method, e.srv.URL+c.path, c.host, c.hdr)
		appPath := strings.TrimPrefix(c.path, "/preview/"+id+"/"+port)
		if h.code != c.want || app.saw(appPath) != (c.want != 403) || c.want == 403 && !strings.Contains(h.body, "cross-site request refused") {
			t.Errorf("%s: %d %s, want %d (the app saw it: %v)", c.name, h.code, h.body, c.want, app.saw(appPath))
		}
	}
	// A public port is anyone's: no cookie involved.
	if code, _ := e.do(t, e.alice, "PUT", "/api/v1/desktops/"+id+"/urls/"+port, `{"public":true}`); code != 200 {
		t.Fatalf("make public: %d", code)
	}
	if h := get(t, "POST", path+"/public", "", with(pck, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})); h.code != 200 || !app.saw("/public") {
		t.Errorf("POST to a public port from another site: %d %s", h.code, h.body)
	}
}

// An app served on bureau's own origin (the path form, the owner's port
// proxy) may not set cookies outside its own path or in bureau's names,
// clear the origin's storage (the console's saved token), widen a service
// worker's scope, or shed the sandbox by sending 103 Early Hints first.
func TestAppOnBureausOriginStaysUnderItsPrefix(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	app := newSecApp(t)
	port := itoa(app.port)
	bearer := map[string]string{"Authorization": "Bearer " + e.alice}
	for _, prefix := range []string{"/preview/" + id + "/" + port, "/api/v1/desktops/" + id + "/ports/" + port} {
		app.setCookies(
			"root=1; Path=/",
			"console=1; Path=/api/v1",
			"sibling=1; Path="+prefix+"0",
			"spaced=1; path =/",
			"padded=1; Path= /",
			"twice=1; Path="+prefix+"/; Path=/",
			"domain=1; Path="+prefix+"/; Domain=127.0.0.1",
			"bureau_url=forged; Path="+prefix+"/",
			"Bureau_URL=forged",
			"host=1; Path=/; Secure",
			"nopath=1",
			"relative=1; Path=sub",
			"exact=1; Path="+prefix,
			"under=1; Path="+prefix+"/sub; HttpOnly; SameSite=Strict",
			"empty=1; Path=",
		)
		h := get(t, "GET", e.srv.URL+prefix+"/cookies", "", bearer)
		var names []string
		for _, line := range h.header.Values("Set-Cookie") {
			name, _, _ := strings.Cut(line, "=")
			names = append(names, name)
		}
		if want := []string{"nopath", "relative", "exact", "under", "empty"}; h.code != 200 || !slices.Equal(names, want) {
			t.Errorf("%s: cookies the browser is sent %v, want %v (%d)", prefix, names, want, h.code)
		}
		if h.header.Get("Clear-Site-Data") != "" || h.header.Get("Service-Worker-Allowed") != "" || h.header.Get("X-App") != "kept" {
			t.Errorf("%s: headers %v", prefix, h.header)
		}
		h = get(t, "GET", e.srv.URL+prefix+"/early", "", bearer)
		if csp := h.header.Values("Content-Security-Policy"); h.code != 200 || !slices.Contains(csp, pathFormSandbox) {
			t.Errorf("%s: a page after 103 Early Hints: %d, Content-Security-Policy %q", prefix, h.code, csp)
		}
	}
	// At the host form the app has an origin of its own: its cookies and
	// headers pass, but for bureau's cookie.
	app.setCookies("root=1; Path=/", "bureau_url=forged; Path=/")
	h := get(t, "GET", e.srv.URL+"/cookies", port+"-"+id+".localhost", bearer)
	if got := h.header.Values("Set-Cookie"); h.code != 200 || len(got) != 1 || got[0] != "root=1; Path=/" || h.header.Get("Clear-Site-Data") == "" {
		t.Errorf("host form: %d %v", h.code, h.header)
	}
}

// Signing in with a share link answers 303 to the same address without
// the secret, which must stay on the live URL's host: a path that starts
// with // (or /\) is not another host's address.
func TestShareSignInRedirectStaysOnTheHost(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	app := newSecApp(t)
	port := itoa(app.port)
	host := port + "-" + id + ".localhost"
	code, sh := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/shares", `{"port":`+port+`,"ttl_s":3600}`)
	if code != 201 {
		t.Fatalf("share: %d %v", code, sh)
	}
	u, _ := url.Parse(sh["url"].(string))
	secret := u.Query().Get(shareParam)
	for _, target := range []string{"//evil.example/x", "///evil.example/x", "/\\evil.example/x", "/\\/evil.example/x", "//\\evil.example/x"} {
		resp := rawGet(t, e.srv.Listener.Addr().String(), target+"?a=1&"+shareParam+"="+secret, host)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != 303 || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") || !strings.HasPrefix(loc, "/") ||
			!strings.HasSuffix(loc, "evil.example/x?a=1") {
			t.Errorf("sign-in at %s: %d Location %q", target, resp.StatusCode, loc)
		}
		if ref, err := url.Parse("http://" + host + "/"); err == nil {
			if l, err := ref.Parse(loc); err != nil || l.Host != host {
				t.Errorf("sign-in at %s: Location %q leads to %v", target, loc, l)
			}
		}
	}
	// The path form's redirect is unchanged.
	resp := rawGet(t, e.srv.Listener.Addr().String(), "/preview/"+id+"/"+port+"/docs?"+shareParam+"="+secret, "")
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || loc != "/preview/"+id+"/"+port+"/docs" {
		t.Errorf("path form sign-in: %d %q", resp.StatusCode, loc)
	}
}

// rawGet sends a GET whose request target is written as it is (a
// browser's, not cleaned by Go's client).
func rawGet(t *testing.T, addr, target, host string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if host == "" {
		host = addr
	}
	io.WriteString(conn, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
