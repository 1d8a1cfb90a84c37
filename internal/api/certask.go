package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// certificateAllowed answers a TLS-terminating proxy's question "may I get
// a certificate for this name?" (Caddy's on_demand_tls ask): 200 for
// bureau's public name and the live URL names of desktops that exist,
// 404 for any other name. Only trusted proxies may ask — the answer says
// whether a desktop ID exists — so it needs no token but refuses
// everyone else with 403.
func (s *siteHandlers) certificateAllowed(c *gin.Context) {
	if c.Request.RemoteAddr == "" || !s.origin.fromProxy(c) {
		s.fail(c, fmt.Errorf("only a trusted proxy (BUREAU_TRUSTED_PROXIES) may ask: %w", desktop.ErrForbidden))
		return
	}
	name := strings.TrimSuffix(strings.ToLower(c.Query("domain")), ".")
	if name == "" {
		s.fail(c, &desktop.ValidationError{Field: "domain", Message: "name the domain to ask about: ?domain=<name>"})
		return
	}
	if s.origin.public != nil && name == s.origin.public.Hostname() {
		c.String(http.StatusOK, "ok")
		return
	}
	if err := s.certNames(c.Request.Context(), name); err != nil {
		c.String(http.StatusNotFound, "no certificate for %s: %v", name, err)
		return
	}
	c.String(http.StatusOK, "ok")
}
