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
	tok, err := s.Tokens.Authenticate(c, strings.TrimSpace(secret))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Set(ctxToken, tok)
	c.Set(ctxOwner, tok.Owner)
	c.Next()
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
