package api

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/preview"
	"github.com/gin-gonic/gin"
)

// Previews decide who may open live URLs (see package preview).
type Previews interface {
	Redeem(ctx context.Context, secret, desktopID string, port int) (*desktop.Share, error)
	ShareUsable(ctx context.Context, id string) (*desktop.Share, error)
	PublicPorts(ctx context.Context, desktopID string) ([]int, error)
	Sign(c preview.Claims) string
	Verify(v string) (preview.Claims, error)
	LoginCode(c preview.Claims) string
	RedeemCode(code, desktopID string, port int) (preview.Claims, error)
}

// previewHandlers serve live URLs: http(s)://<port>-<desktop>.<domain>/
// (livePreviewHost) and /preview/<desktop>/<port>/ (previewPath), to the
// public, the owner's token, or a browser signed in by a link.
type previewHandlers struct {
	*core
	previews Previews
	// observe is Deps.ObserveLiveURL (may be nil).
	observe func(desktopID string, port, status int, toApp, toClient int64, took time.Duration)
	proxy   *portHandlers
	// links makes the URLs, and knows the host form's domain.
	links *liveLinks
}

const (
	previewCookie = "bureau_url"
	shareParam    = "bureau_share"
	loginParam    = "bureau_login"
	// wakeHold is how long an API client's request to a sleeping desktop
	// is held while it wakes.
	wakeHold = 2 * time.Minute
	// wokenPatience is how long a request that woke a desktop keeps
	// trying to reach the app while the desktop's agent reconnects.
	wokenPatience = 30 * time.Second
)

// previewHost matches <port>-<desktop>.<domain>[:port].
var previewHost = regexp.MustCompile(`^([0-9]{1,5})-([a-z0-9]{1,32})\.(.+?)(:[0-9]+)?$`)

// LiveHost reads a live URL's host name, <port>-<desktop>.<domain>: the
// desktop's ID and the port, ok false for any other name.
func LiveHost(host, domain string) (id string, port int, ok bool) {
	m := previewHost.FindStringSubmatch(strings.ToLower(host))
	if m == nil || m[4] != "" || domain == "" || m[3] != domain {
		return "", 0, false
	}
	port, err := strconv.Atoi(m[1])
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false
	}
	return m[2], port, true
}

// livePreviewHost serves a request whose Host is a live URL's (wildcard
// host routing) and stops the chain; others go on to the API.
func (s *previewHandlers) livePreviewHost(c *gin.Context) {
	if s.links.domain == "" || s.previews == nil {
		return
	}
	m := previewHost.FindStringSubmatch(strings.ToLower(c.Request.Host))
	if m == nil || m[3] != s.links.domain {
		return
	}
	port, _ := strconv.Atoi(m[1])
	s.servePreview(c, m[2], port, c.Request.URL.Path, "", c.Request.Host)
	c.Abort()
}

// pathFormSandbox is the policy every response of the path form carries.
// The path form shares the web console's origin: an app's page there,
// were it not sandboxed (an opaque origin), could read the console's
// sign-in and call the API as whoever opened it.
const pathFormSandbox = "sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads"

// previewPath serves /preview/<desktop>/<port>/<path>. A browser opening
// a page there is sent to the host form when the browser can reach it
// (the app gets an origin of its own); otherwise, and for programs, the
// path form answers, its pages sandboxed.
func (s *previewHandlers) previewPath(c *gin.Context) {
	port, _ := strconv.Atoi(c.Param("port"))
	prefix := strings.TrimSuffix(c.Request.URL.Path, c.Param("path"))
	if navigation(c) && port >= 1 && port <= 65535 {
		if u, _ := s.links.previewURL(c, c.Param("id"), port); u != "" {
			target, _ := url.Parse(u)
			target.Path = c.Param("path")
			target.RawQuery = c.Request.URL.RawQuery
			c.Redirect(http.StatusTemporaryRedirect, target.String())
			return
		}
	}
	c.Header("Content-Security-Policy", pathFormSandbox)
	s.servePreview(c, c.Param("id"), port, c.Param("path"), prefix, "")
}

// navigation says whether a browser is loading a page (not a script, an
// image or a program's request).
func navigation(c *gin.Context) bool {
	if mode := c.GetHeader("Sec-Fetch-Mode"); mode != "" {
		return mode == "navigate"
	}
	return browser(c)
}

// servePreview answers a live URL: sign-in links first (a share secret
// or a login code in the query: a cookie, then a redirect without it),
// then access (public, the owner's token, a cookie), then waking the
// desktop if it sleeps, then the app.
func (s *previewHandlers) servePreview(c *gin.Context, id string, port int, path, prefix, host string) {
	if s.previews == nil {
		s.previewError(c, http.StatusNotFound, "live URLs are not served here")
		return
	}
	if port < 1 || port > 65535 {
		s.previewError(c, http.StatusNotFound, "no such URL")
		return
	}
	ctx := c.Request.Context()
	d, err := s.lifecycle.Get(ctx, id)
	if err != nil || d.DeletedAt != nil {
		s.previewError(c, http.StatusNotFound, "no such URL")
		return
	}
	if s.observe != nil {
		begun, body := time.Now(), &countingReader{r: c.Request.Body}
		c.Request.Body = body
		defer func() {
			s.observe(d.ID, port, c.Writer.Status(), body.n, int64(max(c.Writer.Size(), 0)), time.Since(begun))
		}()
	}
	cookiePath := "/"
	if prefix != "" {
		cookiePath = strings.TrimSuffix(prefix, "/") + "/"
	}
	if q := c.Request.URL.Query(); q.Has(shareParam) || q.Has(loginParam) {
		var claims preview.Claims
		var err error
		if q.Has(shareParam) {
			var l *desktop.Share
			if l, err = s.previews.Redeem(ctx, q.Get(shareParam), d.ID, port); err == nil {
				claims = preview.Claims{Kind: preview.KindShare, Desktop: d.ID, Port: port, Sub: l.ID, ReadOnly: l.ReadOnly, Exp: l.ExpiresAt.Unix()}
			}
		} else {
			claims, err = s.previews.RedeemCode(q.Get(loginParam), d.ID, port)
		}
		if err != nil {
			s.previewError(c, http.StatusUnauthorized, "this link is not valid (any more): it expired, was revoked or was used already")
			return
		}
		secure := requestScheme(c) == "https"
		sameSite := http.SameSiteLaxMode
		if prefix != "" && secure {
			// A sandboxed page (the path form's) is an opaque origin: its
			// own requests are cross-site, and carry only a None cookie.
			sameSite = http.SameSiteNoneMode
		}
		http.SetCookie(c.Writer, &http.Cookie{Name: previewCookie, Value: s.previews.Sign(claims), Path: cookiePath,
			Expires: time.Unix(claims.Exp, 0), HttpOnly: true, SameSite: sameSite, Secure: secure})
		q.Del(shareParam)
		q.Del(loginParam)
		u := *c.Request.URL
		u.RawQuery = q.Encode()
		c.Redirect(http.StatusSeeOther, localPath(u.RequestURI()))
		return
	}
	readOnly, byCookie, err := s.previewAccess(c, d, port)
	if err != nil {
		s.previewError(c, http.StatusUnauthorized, "this URL is private: open it from bureau's web console, with a share link, or send the owner's token (Authorization: Bearer)")
		return
	}
	upgrade := isUpgrade(c.Request)
	if readOnly && (upgrade || c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead) {
		// A WebSocket is a GET, and enough to drive a terminal or a notebook.
		s.previewError(c, http.StatusForbidden, "this share link is read-only (GET and HEAD only, no WebSockets)")
		return
	}
	if byCookie && (upgrade || !safeMethod(c.Request.Method)) && !fromOwnPage(c, prefix != "") {
		s.previewError(c, http.StatusForbidden, "cross-site request refused: the browser's sign-in to this URL is for its own pages only")
		return
	}
	var patience time.Duration
	if d.State != desktop.StateRunning {
		patience = wokenPatience
	}
	if d, err = s.wakeForPreview(c, d); err != nil || d == nil {
		return
	}
	s.screen.Touch(d.ID)
	if host == "" {
		host = c.Request.Host
	}
	s.proxy.proxyPort(c, d, port, path, prefix, host, patience)
}

// previewAccess says whether the request may open the URL, and if only to
// read: a public port, the owner's (or an admin's) API token, or a cookie
// from a login code or a share link still valid (byCookie: the browser's
// ambient sign-in, which any page can make it send).
func (s *previewHandlers) previewAccess(c *gin.Context, d *desktop.Desktop, port int) (readOnly, byCookie bool, err error) {
	ctx := c.Request.Context()
	if ports, _ := s.previews.PublicPorts(ctx, d.ID); containsInt(ports, port) {
		return false, false, nil
	}
	if secret, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); ok {
		tok, err := s.tokens.Authenticate(ctx, strings.TrimSpace(secret))
		if err == nil && tokenReaches(tok, d) {
			return false, false, nil
		}
		return false, false, desktop.ErrUnauthorized
	}
	ck, err := c.Request.Cookie(previewCookie)
	if err != nil {
		return false, false, desktop.ErrUnauthorized
	}
	claims, err := s.previews.Verify(ck.Value)
	if err != nil || claims.Desktop != d.ID || claims.Port != port {
		return false, false, desktop.ErrUnauthorized
	}
	switch claims.Kind {
	case preview.KindOwner:
		// The token that signed the browser in must still be good.
		tok, err := s.tokens.Usable(ctx, claims.Sub)
		if err != nil || !tokenReaches(tok, d) {
			return false, false, desktop.ErrUnauthorized
		}
		return false, true, nil
	case preview.KindShare:
		l, err := s.previews.ShareUsable(ctx, claims.Sub)
		if err != nil || l.DesktopID != d.ID || l.Port != port {
			return false, false, desktop.ErrUnauthorized
		}
		return l.ReadOnly, true, nil
	}
	return false, false, desktop.ErrUnauthorized
}

// isUpgrade says whether the request asks to switch protocols (a
// WebSocket, h2c): by an Upgrade header or an "upgrade" Connection token.
func isUpgrade(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return true
	}
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// safeMethod: the methods that must not change anything.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// fromOwnPage says whether a browser sent the request from the URL's own
// pages (or the user did, typing or following a bookmark), as Fetch
// Metadata tells: Sec-Fetch-Site same-origin or none. A browser that sends
// no Sec-Fetch-Site (an old one; Chromium's WebSocket handshakes) is
// judged by Origin: none, or this URL's own scheme://host.
//
// With a real preview domain all live URLs are same-site with each other,
// and the bureau_url cookie (SameSite=Lax) rides on requests that another
// desktop's app starts: only this check keeps that app from changing
// things through the user's sign-in (CSRF, a WebSocket hijacked).
//
// The path form (pathForm) serves its pages sandboxed: they are an opaque
// origin, and their own requests come as Origin: null, Sec-Fetch-Site:
// cross-site, with no Referer — the same as a sandboxed page or frame on
// any other site sends (checked in Chromium 156, where such a page's form
// posts carry the SameSite=None cookie the path form has over HTTPS; its
// fetches and WebSockets carry none). Refusing them would break every
// form of an app at the path form, so Origin: null is let through there.
// What is left: over HTTPS, a page elsewhere that sandboxes itself can
// make the signed-in browser POST to (or, in a browser that sends the
// cookie, open a WebSocket to) an app at the path form. Over plain HTTP
// the cookie is Lax and no cross-site POST carries it. The host form (a
// preview domain) is not exposed so.
func fromOwnPage(c *gin.Context, pathForm bool) bool {
	origin := c.GetHeader("Origin")
	switch c.GetHeader("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
		if origin == "" || sameOrigin(origin, requestScheme(c), c.Request.Host) {
			return true
		}
	}
	return pathForm && origin == "null"
}

// sameOrigin says whether an Origin header names scheme://host.
func sameOrigin(origin, scheme, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(withoutDefaultPort(u.Host, scheme), withoutDefaultPort(host, scheme))
}

func withoutDefaultPort(host, scheme string) string {
	if scheme == "http" {
		return strings.TrimSuffix(host, ":80")
	}
	return strings.TrimSuffix(host, ":443")
}

// localPath makes a redirect's target a path on the same host: a leading
// run of slashes and backslashes (//evil.example/ is another host's
// address, and browsers read \ as /) becomes one slash.
func localPath(uri string) string {
	return "/" + strings.TrimLeft(uri, `/\`)
}

// tokenReaches: an admin, the owner, or a full token of this desktop.
func tokenReaches(tok *desktop.Token, d *desktop.Desktop) bool {
	switch tok.Scope {
	case desktop.ScopeAdmin:
		return true
	case desktop.ScopeDesktop:
		return tok.DesktopID == d.ID && !tok.ComputerOnly
	}
	return tok.Owner == d.Owner
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// wakeForPreview wakes a paused, napping, sleeping or hibernated desktop: a browser gets a
// small page that retries while it wakes; an API client's request is held
// until it runs (up to wakeHold). It answers (and returns nil) when the
// request cannot go on.
func (s *previewHandlers) wakeForPreview(c *gin.Context, d *desktop.Desktop) (*desktop.Desktop, error) {
	switch {
	case d.State == desktop.StateRunning:
		return d, nil
	case d.State.Wakeable(), d.State == desktop.StateHibernating, d.State == desktop.StateResuming, d.State == desktop.StatePausing:
	default:
		s.previewError(c, http.StatusServiceUnavailable, fmt.Sprintf("the desktop is %s; start it to reach this URL", d.State))
		return nil, nil
	}
	actor := "live-url"
	if browser(c) {
		// gin reuses c once the handler returns: take what the goroutine
		// needs now.
		base := context.WithoutCancel(c.Request.Context())
		go func() {
			ctx, cancel := context.WithTimeout(base, wakeHold)
			defer cancel()
			if _, err := s.lifecycle.Wake(ctx, d.ID, actor); err != nil {
				s.log.Info("live URL: wake", "desktop", d.ID, "err", err)
			}
		}()
		c.Header("Retry-After", "2")
		c.Header("Cache-Control", "no-store")
		c.Data(http.StatusServiceUnavailable, "text/html; charset=utf-8", []byte(wakingPage))
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), wakeHold)
	defer cancel()
	woken, err := s.lifecycle.Wake(ctx, d.ID, actor)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			c.Header("Retry-After", "5")
		}
		s.previewError(c, http.StatusServiceUnavailable, "the desktop is waking up and did not finish in time; try again")
		return nil, err
	}
	return woken, nil
}

// browser says whether the request is a browser's page load.
func browser(c *gin.Context) bool {
	return c.Request.Method == http.MethodGet && strings.Contains(c.GetHeader("Accept"), "text/html")
}

const wakingPage = `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>Waking the desktop…</title><style>body{font:16px system-ui,sans-serif;display:grid;place-items:center;height:90vh;color:#333}</style></head>
<body><div><h1>Waking the desktop…</h1><p>It was asleep to save resources. This page reloads by itself in a moment.</p></div></body></html>`

// previewError answers a live URL's request that bureau itself refuses:
// a small page for a browser, JSON for others.
func (s *previewHandlers) previewError(c *gin.Context, status int, msg string) {
	c.Header("Cache-Control", "no-store")
	if browser(c) {
		c.Data(status, "text/html; charset=utf-8", []byte(`<!doctype html><html><head><meta charset="utf-8"><title>bureau</title>`+
			`<style>body{font:16px system-ui,sans-serif;max-width:40em;margin:15vh auto;color:#333}</style></head><body><h1>`+
			html.EscapeString(http.StatusText(status))+`</h1><p>`+html.EscapeString(msg)+`</p></body></html>`))
		return
	}
	c.JSON(status, gin.H{"error": gin.H{"code": strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_"), "message": msg}})
}

// countingReader counts the bytes read from a request body.
type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
