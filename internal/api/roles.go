package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
	"github.com/gin-gonic/gin"
)

// viewerCalls are the calls other than GET and HEAD a team's viewer makes:
// a console (made view-only: createConsole), the event stream's token, and
// MCP, whose tools call this API in process with the same token, so each
// tool is held to the role route by route (a tool that only reads works,
// one that changes something is refused).
var viewerCalls = map[string]bool{
	"POST /api/v1/desktops/:id/console": true,
	"POST /api/v1/events/stream-token":  true,
	"POST /mcp":                         true,
	"GET /mcp":                          true,
	"DELETE /mcp":                       true,
}

// teamManagement are the team's own routes only its admins use (a member
// may still leave: roleAllows).
var teamManagement = map[string]bool{
	"PUT /api/v1/teams/:team/members/:member":    true,
	"DELETE /api/v1/teams/:team/members/:member": true,
	"DELETE /api/v1/teams/:team":                 true,
}

// roleAllows holds a team token to its role (docs/teams.md,
// Enforcement) on every route, after scopeAllows:
//   - viewer: GET and HEAD, a view-only console, the event stream, MCP
//     tools that read;
//   - member: all but managing the team and its webhooks;
//   - admin: all its team's owner may.
func roleAllows(c *gin.Context, tok *desktop.Token) error {
	if tok.Role == "" {
		return nil
	}
	method := c.Request.Method
	route := method + " " + c.FullPath()
	reads := method == http.MethodGet || method == http.MethodHead
	switch teams.Role(tok.Role) {
	case teams.RoleAdmin:
		return nil
	case teams.RoleMember:
		if teamManagement[route] && !(route == "DELETE /api/v1/teams/:team/members/:member" && c.Param("member") == tok.Member) {
			return fmt.Errorf("managing team %s is its admins': %w", tok.Owner, desktop.ErrForbidden)
		}
		if strings.HasPrefix(c.FullPath(), "/api/v1/webhooks") && !reads {
			return fmt.Errorf("the webhooks of team %s are its admins': %w", tok.Owner, desktop.ErrForbidden)
		}
		return nil
	case teams.RoleViewer:
		if reads && isUpgrade(c.Request) {
			// A GET that switches protocols is a terminal (pty) or an
			// app's WebSocket through the port proxy: driving, not
			// watching.
			return fmt.Errorf("a viewer of team %s only watches: no terminal or WebSocket: %w", tok.Owner, desktop.ErrForbidden)
		}
		if reads || viewerCalls[route] {
			return nil
		}
		return fmt.Errorf("a viewer of team %s only watches: %w", tok.Owner, desktop.ErrForbidden)
	}
	return fmt.Errorf("this token's role %q is none bureau knows: %w", tok.Role, desktop.ErrForbidden)
}

// isViewer reports whether the caller is a team's viewer (its consoles
// are view-only).
func isViewer(c *gin.Context) bool { return caller(c).Role == string(teams.RoleViewer) }
