package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/web"
	"github.com/gin-gonic/gin"
)

// TestAuthMatrix walks every registered route that names a desktop and
// checks each kind of caller: another owner and a token of another desktop
// get 404 (existence does not leak), a computer-only token gets 403 outside
// screen, mouse and keyboard, and the owner and an admin are let through.
// Routes without a desktop refuse desktop tokens.
func TestAuthMatrix(t *testing.T) {
	// What a desktop's own token may not do there: delete it, set and
	// delete its secrets, change its checkpoint policy or backup schedule,
	// make a port public.
	ownerOnly := map[string]bool{"DELETE /api/v1/desktops/:id": true,
		"PUT /api/v1/desktops/:id/secrets/:name": true, "DELETE /api/v1/desktops/:id/secrets/:name": true,
		"PUT /api/v1/desktops/:id/checkpoints": true, "PUT /api/v1/desktops/:id/urls/:port": true,
		"PUT /api/v1/desktops/:id/backup-schedule": true, "DELETE /api/v1/desktops/:id/backup-schedule": true,
		// People in the loop: a person's, not an agent's.
		"POST /api/v1/desktops/:id/control/take": true, "POST /api/v1/desktops/:id/control/release": true,
		"POST /api/v1/desktops/:id/requests/:rid/answer": true, "POST /api/v1/desktops/:id/requests/:rid/approve": true,
		"POST /api/v1/desktops/:id/requests/:rid/deny": true,
		"PUT /api/v1/desktops/:id/approval-policy":     true, "DELETE /api/v1/desktops/:id/approval-policy": true}
	// Admin routes on a desktop: everyone else gets 403 before the desktop
	// is looked up (which leaks nothing); another desktop's token is 404
	// as ever.
	adminOnly := map[string]bool{"POST /api/v1/desktops/:id/migrate": true, "DELETE /api/v1/desktops/:id/migrate": true}
	e := newEnv(t)
	mine := runningDesktop(t, e, e.alice)
	other := runningDesktop(t, e, e.alice)
	tokens := auth.New(e.store)
	scoped := func(id string, computerOnly bool) string {
		s, _, err := tokens.Create(context.Background(), auth.CreateRequest{Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: id, ComputerOnly: computerOnly})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	agent, computerOnly, otherAgent := scoped(mine, false), scoped(mine, true), scoped(other, false)

	router := New(Deps{Desktops: e.desktops, Snapshots: e.desktops, Templates: e.desktops, Log: slog.New(slog.DiscardHandler), Metrics: http.NotFoundHandler(), Web: web.Static})
	tokenRoutes := map[string]bool{ // authenticated by a console token instead
		"/api/v1/desktops/:id/vnc": true, "/api/v1/desktops/:id/console/session": true, "/console/:id": true,
		"/api/v1/desktops/:id/console/clipboard": true, "/api/v1/desktops/:id/console/pty": true,
		"/api/v1/desktops/:id/console/state": true, "/api/v1/desktops/:id/console/control/take": true,
		"/api/v1/desktops/:id/console/control/release": true, "/api/v1/desktops/:id/console/requests/:rid/answer": true,
		"/api/v1/desktops/:id/console/requests/:rid/approve": true, "/api/v1/desktops/:id/console/requests/:rid/deny": true,
		"/api/v1/desktops/:id/console/requests/:rid/screenshot": true,
	}
	n := 0
	for _, r := range router.Routes() {
		if tokenRoutes[r.Path] || r.Path == "/healthz" || r.Path == "/" || strings.HasPrefix(r.Path, "/static/") || r.Path == "/docs" || r.Path == "/api/v1/openapi.json" {
			continue
		}
		route := r.Method + " " + r.Path
		replacer := strings.NewReplacer(":id", mine, ":name", "x", ":owner", "alice", ":token_id", "x", ":port", "80", ":pid", "p-1", "*path", "x")
		path := replacer.Replace(r.Path)
		status := func(tok string) (int, map[string]any) {
			s, body := e.do(t, tok, r.Method, path, "{}")
			return s, body
		}
		if !strings.HasPrefix(r.Path, "/api/v1/desktops/:id") {
			if r.Path == "/api/v1/info" || r.Path == "/api/v1/session" || r.Path == "/mcp" || strings.HasPrefix(r.Path, "/auth/") {
				continue
			}
			if code, _ := status(agent); code != 403 {
				t.Errorf("%s with a desktop token: %d, want 403", route, code)
			}
			continue
		}
		n++
		if adminOnly[route] {
			for who, tok := range map[string]string{"another owner": e.bob, "another desktop's token": otherAgent, "owner": e.alice,
				"desktop token": agent, "computer-only token": computerOnly} {
				want := 403
				if tok == otherAgent {
					want = 404
				}
				if code, _ := status(tok); code != want {
					t.Errorf("%s as %s: %d, want %d", route, who, code, want)
				}
			}
			if code, body := status(e.admin); code == 401 || code == 403 || code == 404 {
				t.Errorf("%s as admin: %d %v", route, code, body)
			}
			continue
		}
		if code, body := status(e.bob); code != 404 {
			t.Errorf("%s as another owner: %d %v, want 404", route, code, body)
		}
		if code, body := status(otherAgent); code != 404 {
			t.Errorf("%s with another desktop's token: %d %v, want 404", route, code, body)
		}
		if code, body := status(computerOnly); computerRoutes[route] == (code == 403) {
			t.Errorf("%s with a computer-only token: %d %v", route, code, body)
		}
		for who, tok := range map[string]string{"owner": e.alice, "admin": e.admin, "desktop token": agent} {
			if who == "desktop token" && ownerOnly[route] {
				if code, _ := status(tok); code != 403 {
					t.Errorf("%s with a desktop token: %d, want 403", route, code)
				}
				continue
			}
			code, body := status(tok)
			errBody, _ := body["error"].(map[string]any)
			msg, _ := errBody["message"].(string)
			// A 404 for the desktop itself reads "desktop <id>: not found"
			// (another 404, say "desktop <id> has no backup schedule", is
			// the route's answer).
			if code == 401 || code == 403 || code == 404 && strings.Contains(msg, "desktop "+mine+":") {
				t.Errorf("%s as %s: %d %v", route, who, code, body)
			}
			e.desktops.setState(mine, desktop.StateRunning) // undo what the call did
		}
	}
	if n < 25 {
		t.Errorf("only %d desktop routes checked", n)
	}
	teamRoles(t, e, router, mine)
}

// teamRoles walks every route with team tokens (docs/teams.md,
// Enforcement): a viewer is refused every call but reads, a view-only
// console, the event stream's token and MCP; a member is refused the
// team's management and its webhooks' writes; neither is refused a read.
func teamRoles(t *testing.T, e *env, router interface{ Routes() gin.RoutesInfo }, id string) {
	mk := func(role string) string {
		s, _, err := auth.New(e.store).Create(context.Background(), auth.CreateRequest{Owner: "alice", Scope: desktop.ScopeOwner, Role: role, Member: "pat"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	viewer, member := mk("viewer"), mk("member")
	viewerMay := map[string]bool{"POST /api/v1/desktops/:id/console": true, "POST /api/v1/events/stream-token": true}
	for _, r := range router.Routes() {
		route := r.Method + " " + r.Path
		if !strings.HasPrefix(r.Path, "/api/v1/") || strings.Contains(r.Path, "/console/") || r.Path == "/api/v1/desktops/:id/vnc" ||
			r.Path == "/api/v1/openapi.json" || r.Path == "/api/v1/events/stream" {
			continue
		}
		path := strings.NewReplacer(":id", id, ":name", "x", ":owner", "alice", ":token_id", "x", ":port", "80", ":pid", "p-1", "*path", "x",
			":team", "alice", ":member", "x").Replace(r.Path)
		reads := r.Method == "GET" || r.Method == "HEAD"
		vcode, vbody := e.do(t, viewer, r.Method, path, "{}")
		if wantRefused := !reads && !viewerMay[route]; (vcode == 403 && strings.Contains(fmt.Sprint(vbody), "only watches")) != wantRefused {
			t.Errorf("%s as a viewer: %d %v (refused: want %v)", route, vcode, vbody, wantRefused)
		}
		manage := strings.HasPrefix(r.Path, "/api/v1/webhooks") && !reads || r.Path == "/api/v1/teams/:team/members/:member" ||
			route == "DELETE /api/v1/teams/:team"
		mcode, mbody := e.do(t, member, r.Method, path, "{}")
		if refused := mcode == 403 && strings.Contains(fmt.Sprint(mbody), "admins'"); refused != manage {
			t.Errorf("%s as a member: %d %v (refused: want %v)", route, mcode, mbody, manage)
		}
		e.desktops.setState(id, desktop.StateRunning)
	}
}
