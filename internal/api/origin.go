package api

import (
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// ctxScheme holds the scheme the client reached bureau by (see origin).
const ctxScheme = "bureau.scheme"

// hsts tells browsers to use HTTPS only for this name, for a year.
const hsts = "max-age=31536000"

// origin is how clients reach bureau: Deps.PublicURL when it is set,
// else the request's own host and scheme. A reverse proxy's
// X-Forwarded-Proto counts only from an address in Deps.TrustedProxies
// (gin's ClientIP reads X-Forwarded-For under the same rule).
type origin struct {
	public  *url.URL
	trusted []netip.Prefix
}

// mark notes the request's scheme for requestScheme, and asks browsers
// to stay on HTTPS (HSTS) when it came over HTTPS.
func (o *origin) mark(c *gin.Context) {
	scheme := "http"
	if c.Request.TLS != nil || (o.fromProxy(c) && strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https")) {
		scheme = "https"
		c.Header("Strict-Transport-Security", hsts)
	}
	c.Set(ctxScheme, scheme)
	c.Next()
}

// fromProxy says whether the request's peer is a trusted proxy, or bureau
// itself: net/http gives every request it reads off a connection a
// RemoteAddr, so one without came from in-process (the MCP tools' calls,
// which pass on the scheme of the request they serve).
func (o *origin) fromProxy(c *gin.Context) bool {
	if c.Request.RemoteAddr == "" {
		return true
	}
	if len(o.trusted) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		host = c.Request.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range o.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// scheme and host are those of the links bureau hands out: the public
// URL's, else the request's.
func (o *origin) scheme(c *gin.Context) string {
	if o.public != nil {
		return o.public.Scheme
	}
	return requestScheme(c)
}

func (o *origin) host(c *gin.Context) string {
	if o.public != nil {
		return o.public.Host
	}
	return c.Request.Host
}

// base is scheme://host of the links bureau hands out.
func (o *origin) base(c *gin.Context) string { return o.scheme(c) + "://" + o.host(c) }

// requestScheme is the scheme the client reached bureau by: https over
// TLS, or through a trusted proxy that says so (origin.mark).
func requestScheme(c *gin.Context) string {
	if s := c.GetString(ctxScheme); s != "" {
		return s
	}
	if c.Request.TLS != nil {
		return "https"
	}
	return "http"
}

// trustedProxyList is gin's form of the trusted proxies (nil: none, where
// gin would otherwise trust every peer's X-Forwarded-For).
func trustedProxyList(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
