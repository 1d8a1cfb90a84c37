package webtls

import (
	"net"
	"net/http"
	"strings"
)

// HTTPHandler serves bureau's plain-HTTP port when HTTPS is on: the ACME
// CA's http-01 challenges (auto mode) and, for everything else, a
// permanent redirect to the same name and path over HTTPS on httpsPort
// ("443" or "": no port in the URL). Only GET and HEAD are redirected;
// anything else is refused, so a client that sent a token over plain HTTP
// by mistake is not told that it worked.
func (c *Certs) HTTPHandler(httpsPort string) http.Handler {
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if host == "" || strings.ContainsAny(host, "/\\@") {
			http.Error(w, "bureau is served over HTTPS; this request names no host", http.StatusBadRequest)
			return
		}
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		if httpsPort != "" && httpsPort != "443" {
			host += ":" + httpsPort
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Location", "https://"+host+r.URL.RequestURI())
			http.Error(w, "bureau is served over HTTPS: send this request to https://"+host, http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
	if c.http != nil {
		return c.http(redirect)
	}
	return redirect
}
