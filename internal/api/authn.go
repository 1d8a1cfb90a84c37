package api

import (
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

const (
	ctxOwner = "bureau.owner"
	ctxToken = "bureau.token"
	// ctxRequestID is the request's id in logs and the X-Request-Id header.
	ctxRequestID = "bureau.request_id"
)

// authenticate requires a valid bearer token on every /api route.
func (s *server) authenticate(c *gin.Context) {
	h := c.GetHeader("Authorization")
	if h == "" && c.FullPath() == "/api/v1/events/stream" && c.Query("access_token") != "" {
		// Browsers' EventSource cannot send headers.
		h = "Bearer " + c.Query("access_token")
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		s.fail(c, fmt.Errorf("send Authorization: Bearer <token>: %w", desktop.ErrUnauthorized))
		return
	}
	tok, err := s.Tokens.Authenticate(c.Request.Context(), strings.TrimSpace(secret))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Set(ctxToken, tok)
	c.Set(ctxOwner, tok.Owner)
	if err := scopeAllows(c, tok); err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
}

// computerRoutes are what a computer-only desktop token may use.
var computerRoutes = map[string]bool{
	"GET /api/v1/desktops/:id":            true,
	"GET /api/v1/desktops/:id/screenshot": true,
	"POST /api/v1/desktops/:id/computer":  true,
	"POST /api/v1/desktops/:id/console":   true,
}

// scopeAllows confines a desktop token to its desktop (another desktop is
// "not found", so existence does not leak) and, when computer-only, to the
// screen, mouse and keyboard. It may not delete the desktop.
func scopeAllows(c *gin.Context, tok *desktop.Token) error {
	if tok.Scope != desktop.ScopeDesktop {
		return nil
	}
	route := c.Request.Method + " " + c.FullPath()
	if route == "GET /api/v1/info" || c.FullPath() == "/mcp" {
		// MCP tools call the API with this same token, route by route.
		return nil
	}
	if route == "POST /api/v1/tokens" {
		// createToken lets it mint only narrower tokens for its desktop.
		return nil
	}
	if !strings.HasPrefix(c.FullPath(), "/api/v1/desktops/:id") {
		return fmt.Errorf("this token reaches desktop %s only: %w", tok.DesktopID, desktop.ErrForbidden)
	}
	if c.Param("id") != tok.DesktopID {
		return fmt.Errorf("desktop %s: %w", c.Param("id"), desktop.ErrNotFound)
	}
	if route == "DELETE /api/v1/desktops/:id" {
		return fmt.Errorf("a desktop token cannot delete its desktop: %w", desktop.ErrForbidden)
	}
	if tok.ComputerOnly && !computerRoutes[route] {
		return fmt.Errorf("this token may only see the screen and use mouse and keyboard: %w", desktop.ErrForbidden)
	}
	return nil
}

func caller(c *gin.Context) *desktop.Token {
	return c.MustGet(ctxToken).(*desktop.Token)
}

func isAdmin(c *gin.Context) bool { return caller(c).Scope == desktop.ScopeAdmin }

func actor(c *gin.Context) string {
	t := caller(c)
	return t.Owner + "/" + t.ID
}

// ownerFilter is the owner whose things the caller may see ("" = all).
func ownerFilter(c *gin.Context) string {
	if isAdmin(c) {
		return ""
	}
	return caller(c).Owner
}

func requireAdmin(c *gin.Context) error {
	if !isAdmin(c) {
		return fmt.Errorf("this needs an admin token: %w", desktop.ErrForbidden)
	}
	return nil
}
