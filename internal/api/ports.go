package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// Ports reaches TCP ports inside desktops (through bureau-agent, with no
// guest networking involved).
type Ports interface {
	DialPort(ctx context.Context, domain string, port int) (net.Conn, error)
}

// portHandlers proxy HTTP to ports inside desktops: the owner's port
// route here, live URLs (previewHandlers) through proxyPort.
type portHandlers struct {
	*core
	ports Ports
}

// portProxy serves /desktops/{id}/ports/{port}/{path}: an HTTP reverse
// proxy (WebSocket upgrades, streaming bodies) to 127.0.0.1:port in the
// desktop, for the desktop's owner. The app sees its own Host
// (127.0.0.1:port) and X-Forwarded-* for the client's.
func (s *portHandlers) portProxy(c *gin.Context) {
	d, err := s.running(c, "reach a port of")
	if err != nil {
		s.fail(c, err)
		return
	}
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < 1 || port > 65535 {
		s.fail(c, &desktop.ValidationError{Field: "port", Message: "must be 1..65535"})
		return
	}
	s.screen.Touch(d.ID)
	prefix := strings.TrimSuffix(c.Request.URL.Path, c.Param("path"))
	c.Header("Content-Security-Policy", pathFormSandbox) // bureau's origin, as the path form
	s.proxyPort(c, d, port, c.Param("path"), prefix, "", 0)
}

// proxyPort serves the request from 127.0.0.1:port in the desktop: path is
// the app's path, prefix what bureau's URL put before it (sent as
// X-Forwarded-Prefix), host the Host the app sees ("": 127.0.0.1:port).
// bureau's credentials (its Authorization header and cookie) never reach
// the app, nor may the app set bureau's cookie; on bureau's own origin
// (prefix not "") its responses stay sandboxed and within the prefix (see
// onBureausOrigin). patience is how long to keep trying to reach the port (a
// desktop just woken takes a moment to reconnect its agent).
func (s *portHandlers) proxyPort(c *gin.Context, d *desktop.Desktop, port int, path, prefix, host string, patience time.Duration) {
	domain := d.DomainName()
	target := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
	if host == "" {
		host = target.Host
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = path
			r.Out.URL.RawPath = ""
			r.Out.Host = host
			r.SetXForwarded()
			if prefix != "" {
				r.Out.Header.Set("X-Forwarded-Prefix", strings.TrimSuffix(prefix, "/"))
			}
			r.Out.Header.Del("Authorization") // bureau's token is not the app's
			dropCookie(r.Out, previewCookie)
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return s.dialPort(ctx, domain, port, patience)
			},
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: 5 * time.Minute,
		},
		FlushInterval: -1, // SSE and streamed bodies pass as they come
		ModifyResponse: func(res *http.Response) error {
			if prefix != "" {
				onBureausOrigin(c.Writer.Header(), res.Header)
			}
			keepCookies(res.Header, prefix)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			if prefix != "" {
				w.Header().Set("Content-Security-Policy", pathFormSandbox)
			}
			status, body := classify(err)
			if status == http.StatusServiceUnavailable || status == http.StatusInternalServerError {
				status, body.Code = http.StatusBadGateway, "bad_gateway"
			}
			body.Message = s.textForCaller(c, body.Message)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(gin.H{"error": body})
		},
	}
	defer rp.Transport.(*http.Transport).CloseIdleConnections()
	rp.ServeHTTP(c.Writer, c.Request)
}

// onBureausOrigin readies the response of an app served on bureau's own
// origin (the path form, the owner's port proxy), out of headers the app
// sent, to be added to out (what the client gets). The page stays
// sandboxed: out's policy is set again, as a 1xx response the app sends
// first (103 Early Hints) clears out's headers in httputil.ReverseProxy.
// And the app may not act on the origin beyond its page: no
// Clear-Site-Data (it would wipe the web console's saved token), no
// Service-Worker-Allowed (a worker's scope wider than the app's path).
// Its cookies are kept to its prefix by keepCookies.
func onBureausOrigin(out, app http.Header) {
	out.Set("Content-Security-Policy", pathFormSandbox)
	app.Del("Clear-Site-Data")
	app.Del("Service-Worker-Allowed")
}

// keepCookies drops the Set-Cookie lines of an app's response that
// cookieFits refuses.
func keepCookies(h http.Header, prefix string) {
	lines := h.Values("Set-Cookie")
	if len(lines) == 0 {
		return
	}
	h.Del("Set-Cookie")
	for _, line := range lines {
		if cookieFits(line, prefix) {
			h.Add("Set-Cookie", line)
		}
	}
}

// cookieFits says whether an app served under prefix may set a cookie
// (line is its Set-Cookie header): never one of bureau's names (bureau_…);
// on bureau's origin (prefix not "") only a host-only cookie (no Domain)
// whose Path lies under the prefix, or has none (the default, the request
// path's directory, is under it). The line is read as browsers read it
// (RFC 6265 5.2: attribute names and values trimmed, the last Path wins;
// every Path is checked), not by net/http, which leaves "path =/" and
// "Path= /" unread. A line with control characters is dropped.
func cookieFits(line, prefix string) bool {
	if strings.ContainsFunc(line, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return false
	}
	pair, attrs, _ := strings.Cut(line, ";")
	if name, _, ok := strings.Cut(pair, "="); ok && strings.HasPrefix(strings.ToLower(strings.Trim(name, " \t")), "bureau_") {
		return false
	}
	if prefix == "" {
		return true
	}
	base := strings.TrimSuffix(prefix, "/")
	for _, attr := range strings.Split(attrs, ";") {
		k, v, _ := strings.Cut(attr, "=")
		v = strings.Trim(v, " \t")
		switch strings.ToLower(strings.Trim(k, " \t")) {
		case "domain":
			return false
		case "path":
			// A value not starting with / means the default path.
			if strings.HasPrefix(v, "/") && v != base && !strings.HasPrefix(v, base+"/") {
				return false
			}
		}
	}
	return true
}

// dropCookie removes one cookie from a request's Cookie headers.
func dropCookie(r *http.Request, name string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, ck := range cookies {
		if ck.Name != name {
			r.AddCookie(ck)
		}
	}
}

// dialPort reaches a port in the desktop, trying again for patience.
func (s *portHandlers) dialPort(ctx context.Context, domain string, port int, patience time.Duration) (net.Conn, error) {
	until := time.Now().Add(patience)
	for {
		conn, err := s.ports.DialPort(ctx, domain, port)
		if err == nil || time.Now().After(until) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(300 * time.Millisecond):
		}
	}
}
