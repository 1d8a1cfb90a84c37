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

// streamRoute is the one route a stream token opens.
const streamRoute = "/api/v1/events/stream"

// authenticate requires a valid bearer token on every /api route (or,
// without an Authorization header, a sign-in's bureau_session cookie:
// cookieSession). An API
// token is never taken from the query string, where it would be written to
// access logs, proxies and browser history: a request that puts one there
// (?access_token= or ?token=) is refused even if it also sends the header,
// so the leak is noticed. The event stream, which browsers open without
// headers, takes a short-lived single-use ?stream_token= instead.
func (s *core) authenticate(c *gin.Context) {
	q := c.Request.URL.Query()
	if q.Has("access_token") || q.Has("token") {
		s.fail(c, fmt.Errorf("API tokens are not accepted in the query string; send Authorization: Bearer <token> "+
			"(a browser's event stream uses a token from POST /api/v1/events/stream-token): %w", desktop.ErrUnauthorized))
		return
	}
	var tok *desktop.Token
	var err error
	h := c.GetHeader("Authorization")
	if st := q.Get("stream_token"); h == "" && st != "" && c.FullPath() == streamRoute && c.Request.Method == "GET" {
		tok, err = s.redeemStreamToken(c, st)
	} else if secret, ok := strings.CutPrefix(h, "Bearer "); ok {
		secret = strings.TrimSpace(secret)
		if tok, err = s.tokens.Authenticate(c.Request.Context(), secret); err == nil && tok.Session {
			c.Set(ctxSessionSecret, secret)
		}
	} else if secret := s.sessionCookie(c); h == "" && secret != "" {
		// A signed-in browser (docs/sign-in.md): the cookie, and for a
		// call that changes something, its CSRF token.
		tok, err = s.cookieSession(c, secret)
	} else {
		err = fmt.Errorf("send Authorization: Bearer <token>: %w", desktop.ErrUnauthorized)
	}
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
	if err := roleAllows(c, tok); err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
}

// redeemStreamToken spends a stream token and returns its maker, checked
// again now: a token revoked since it asked for the stream gets nothing.
func (s *core) redeemStreamToken(c *gin.Context, secret string) (*desktop.Token, error) {
	id, err := s.streams.Redeem(secret)
	if err != nil {
		return nil, err
	}
	return s.tokens.Usable(c.Request.Context(), id)
}

// computerRoutes are what a computer-only desktop token may use.
var computerRoutes = map[string]bool{
	"GET /api/v1/desktops/:id":            true,
	"GET /api/v1/desktops/:id/screenshot": true,
	"POST /api/v1/desktops/:id/computer":  true,
	"POST /api/v1/desktops/:id/console":   true,

	// What the mouse does to windows (apps are exec's: not here).
	"GET /api/v1/desktops/:id/windows":       true,
	"POST /api/v1/desktops/:id/windows/:wid": true,

	// What the screen shows, as its applications describe it, and the
	// clicks and typing done through that description.
	"GET /api/v1/desktops/:id/ui":        true,
	"GET /api/v1/desktops/:id/ui/find":   true,
	"POST /api/v1/desktops/:id/ui/:node": true,

	// Who holds the mouse and keyboard, and asking a person (help,
	// approval) and reading the answer.
	"GET /api/v1/desktops/:id/control":                  true,
	"POST /api/v1/desktops/:id/help":                    true,
	"POST /api/v1/desktops/:id/approvals":               true,
	"GET /api/v1/desktops/:id/requests":                 true,
	"GET /api/v1/desktops/:id/requests/:rid":            true,
	"GET /api/v1/desktops/:id/requests/:rid/screenshot": true,
}

// ownerOnly are desktop routes a desktop token may not use: the policies
// its desktop runs under (its checkpoint policy, its backup schedule;
// PATCH decides field by field, in updateDesktop) and making a port public
// to anyone, which would outlive the token.
var ownerOnly = map[string]string{
	"PUT /api/v1/desktops/:id/checkpoints":        "the checkpoint policy is its owner's",
	"PUT /api/v1/desktops/:id/urls/:port":         "making a port public is its owner's",
	"PUT /api/v1/desktops/:id/backup-schedule":    "the backup schedule is its owner's",
	"DELETE /api/v1/desktops/:id/backup-schedule": "the backup schedule is its owner's",

	// People in the loop: an agent's token neither takes over from
	// itself nor answers or approves what it asked, nor changes what
	// needs approval.
	"POST /api/v1/desktops/:id/control/take":          personsOnly,
	"POST /api/v1/desktops/:id/control/release":       personsOnly,
	"POST /api/v1/desktops/:id/requests/:rid/answer":  personsOnly,
	"POST /api/v1/desktops/:id/requests/:rid/approve": personsOnly,
	"POST /api/v1/desktops/:id/requests/:rid/deny":    personsOnly,
	"PUT /api/v1/desktops/:id/approval-policy":        personsOnly,
	"DELETE /api/v1/desktops/:id/approval-policy":     personsOnly,
}

// personsOnly says why an agent's token may not take control, answer,
// decide or change the approval policy.
const personsOnly = "taking control, answering, approving and the approval policy are a person's: a person's token is needed"

// scopeAllows confines a desktop token to its desktop (another desktop is
// "not found", so existence does not leak) and, when computer-only, to the
// screen, mouse and keyboard. It may not delete the desktop.
func scopeAllows(c *gin.Context, tok *desktop.Token) error {
	if tok.Scope != desktop.ScopeDesktop {
		return nil
	}
	route := c.Request.Method + " " + c.FullPath()
	if route == "GET /api/v1/info" || route == "GET /api/v1/session" || c.FullPath() == "/mcp" {
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
	if why, ok := ownerOnly[route]; ok {
		return fmt.Errorf("a desktop token cannot do this: %s: %w", why, desktop.ErrForbidden)
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
