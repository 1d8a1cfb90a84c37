package api

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// liveLinks makes the live URLs of desktops' ports, as the client reaches
// bureau (for URL management, services and the path form's redirect).
type liveLinks struct {
	// domain is Deps.PreviewDomain ("": the path form only).
	domain string
	origin *origin
}

// previewURL is a port's live URL as the client reaches bureau: host
// routing when the client can resolve it (hostFormReachable; "" if not),
// and the path form.
func (l *liveLinks) previewURL(c *gin.Context, id string, port int) (hostURL, pathURL string) {
	scheme := l.origin.scheme(c)
	host := l.origin.host(c)
	pathURL = fmt.Sprintf("%s://%s/preview/%s/%d/", scheme, host, id, port)
	if !l.hostFormReachable(c) {
		return "", pathURL
	}
	hostPort := ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		hostPort = host[i:]
	}
	u := url.URL{Scheme: scheme, Host: fmt.Sprintf("%d-%s.%s%s", port, id, l.domain, hostPort), Path: "/"}
	return u.String(), pathURL
}

// hostFormReachable says whether the client can resolve live URLs' host
// names: always for a configured preview domain, and for the default
// "localhost" only when the client itself came to bureau on the loopback.
func (l *liveLinks) hostFormReachable(c *gin.Context) bool {
	if l.domain == "" {
		return false
	}
	if l.domain != "localhost" {
		return true
	}
	host := l.origin.host(c)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
