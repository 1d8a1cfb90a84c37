//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// teamInfo is a team in GET /api/v1/teams (docs/teams.md).
type teamInfo struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Members int    `json:"members"`
}

// teamDetail is GET /api/v1/teams/{team}.
type teamDetail struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedBy string `json:"created_by"`
	Members   []struct {
		Member string `json:"member"`
		Role   string `json:"role"`
	} `json:"members"`
}

// mintedToken is POST /api/v1/tokens's answer.
type mintedToken struct {
	Token string `json:"token"`
	Info  struct {
		ID    string `json:"id"`
		Owner string `json:"owner"`
		Role  string `json:"role"`
		Scope string `json:"scope"`
	} `json:"info"`
}

// TestTeams: teams and roles (docs/teams.md) through a real server. Four
// people with their own tokens: alice makes team "ops" and adds bob as a
// member and carol as a viewer; team tokens act for the team at a role up
// to the person's, and the role gate holds each to it (secrets, webhooks,
// desktops, consoles); people outside the team, and a member's own token,
// see nothing of the team's; the team cannot be deleted while it owns a
// desktop, nor lose its last admin; lowering or removing a member revokes
// their team tokens; the audit log names the person behind a team token.
// In Chromium, alice makes team "design" on the Teams page, adds bob as a
// viewer, and mints a viewer team token on the API tokens page, which
// then reads but does not change. It boots one desktop (the team's).
func TestTeams(t *testing.T) {
	needE2E(t)
	// Single sign-on too (TestSignIn's provider and people), for the
	// console's "Acting as" switcher.
	bureauPort, providerPort := freePort(t), freePort(t)
	startOIDCProvider(t, providerPort, "http://127.0.0.1:"+bureauPort+"/auth/callback")
	secretFile := filepath.Join(t.TempDir(), "oidc-client-secret")
	if err := os.WriteFile(secretFile, []byte(ssoClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newServerWith(t, func(s *server) {
		s.listen = "127.0.0.1:" + bureauPort
		s.env = append(append(s.env, "BUREAU_WARM_SPARES=0", "BUREAU_OIDC_ISSUER=http://127.0.0.1:"+providerPort+"/",
			"BUREAU_OIDC_CLIENT_ID="+ssoClientID, "BUREAU_OIDC_CLIENT_SECRET_FILE="+secretFile), webhookEnv...)
	})
	person := map[string]string{}
	for _, who := range []string{"alice", "bob", "carol", "dave"} {
		var m mintedToken
		if code := s.call(adminToken, "POST", "/api/v1/tokens", map[string]any{"owner": who, "name": who}, &m); code != 201 || m.Token == "" {
			t.Fatalf("mint %s's token: %d %+v", who, code, m.Info)
		}
		person[who] = m.Token
	}
	alice, bob, carol, dave := person["alice"], person["bob"], person["carol"], person["dave"]

	// teamToken mints a token acting for team with role ("" for the
	// person's own role) with the person's token, wanting 201.
	teamToken := func(t *testing.T, by, team, role, name string) mintedToken {
		t.Helper()
		body := map[string]any{"owner": team, "name": name}
		if role != "" {
			body["role"] = role
		}
		var m mintedToken
		if code := s.call(by, "POST", "/api/v1/tokens", body, &m); code != 201 || m.Token == "" || m.Info.Owner != team {
			t.Fatalf("mint a %s token for %s (%s): %d %+v", role, team, name, code, m.Info)
		}
		if role != "" && m.Info.Role != role {
			t.Errorf("the %s token for %s says role %q", role, team, m.Info.Role)
		}
		return m
	}
	// memberCall changes a membership and wants a 2xx.
	memberCall := func(t *testing.T, token, method, team, member string, body any) {
		t.Helper()
		var raw []byte
		if code := s.call(token, method, "/api/v1/teams/"+team+"/members/"+member, body, &raw); code/100 != 2 {
			t.Fatalf("%s %s of %s: %d %s", method, member, team, code, raw)
		}
	}

	// ---------- the team and its members ----------
	var ops teamDetail
	if code := s.call(alice, "POST", "/api/v1/teams", map[string]any{"name": "ops"}, &ops); code != 201 || ops.Name != "ops" || ops.Role != "admin" {
		t.Fatalf("alice creates team ops: %d %+v", code, ops)
	}
	var made teamDetail
	if code := s.call(alice, "GET", "/api/v1/teams/ops", nil, &made); code != 200 || len(made.Members) != 1 || made.Members[0].Member != "alice" || made.Members[0].Role != "admin" {
		t.Fatalf("GET /api/v1/teams/ops as alice: %d %+v, want alice its only admin", code, made)
	}
	s.expectError(alice, "POST", "/api/v1/teams", map[string]any{"name": "ops"}, 409, "name_taken")
	s.expectError(carol, "POST", "/api/v1/teams", map[string]any{"name": "bob"}, 409, "name_taken")
	memberCall(t, alice, "PUT", "ops", "bob", map[string]any{"role": "member"})
	memberCall(t, alice, "PUT", "ops", "carol", map[string]any{"role": "viewer"})
	if e := s.expectError(alice, "PUT", "/api/v1/teams/ops/members/dave", map[string]any{"role": "owner"}, 422, "invalid"); e.Error.Field != "role" {
		t.Errorf("an invalid role: field %q, want role", e.Error.Field)
	}
	var bobTeams struct{ Teams []teamInfo }
	if code := s.call(bob, "GET", "/api/v1/teams", nil, &bobTeams); code != 200 || len(bobTeams.Teams) != 1 || bobTeams.Teams[0].Name != "ops" || bobTeams.Teams[0].Role != "member" || bobTeams.Teams[0].Members != 3 {
		t.Errorf("GET /api/v1/teams as bob: %d %+v, want ops with role member and 3 members", code, bobTeams.Teams)
	}
	// Outsiders learn nothing of the team; a member reaches no further than their role.
	s.expectError(dave, "POST", "/api/v1/tokens", map[string]any{"owner": "ops", "name": "dave ops"}, 404, "not_found")
	s.expectError(dave, "GET", "/api/v1/teams/ops", nil, 404, "not_found")
	s.expectError(bob, "POST", "/api/v1/tokens", map[string]any{"owner": "ops", "role": "admin", "name": "bob ops admin"}, 403, "forbidden")

	bobOps := teamToken(t, bob, "ops", "member", "bob ops")
	carolOps := teamToken(t, carol, "ops", "", "carol ops")
	if carolOps.Info.Role != "viewer" {
		t.Errorf("carol's team token without a role: role %q, want her role viewer", carolOps.Info.Role)
	}
	aliceOps := teamToken(t, alice, "ops", "admin", "alice ops")

	// ---------- the role gate ----------
	if code := s.call(bobOps.Token, "PUT", "/api/v1/secrets/API_KEY", map[string]any{"value": "s3cret-of-ops"}, nil); code != 200 {
		t.Errorf("a member's PUT /api/v1/secrets/API_KEY: %d, want 200", code)
	}
	rcv := newReceiver(t)
	hook := map[string]any{"url": rcv.URL + "/hook", "description": "ops receiver", "events": []string{"desktop.*"}}
	s.expectError(bobOps.Token, "POST", "/api/v1/webhooks", hook, 403, "forbidden")
	var secrets struct {
		Secrets []struct{ Name, Owner string }
	}
	if code := s.call(carolOps.Token, "GET", "/api/v1/secrets", nil, &secrets); code != 200 || len(secrets.Secrets) != 1 || secrets.Secrets[0].Name != "API_KEY" {
		t.Errorf("a viewer's GET /api/v1/secrets: %d %+v, want API_KEY", code, secrets.Secrets)
	}
	var mine struct{ Secrets []struct{ Name string } }
	if code := s.call(bob, "GET", "/api/v1/secrets", nil, &mine); code != 200 || len(mine.Secrets) != 0 {
		t.Errorf("bob's own GET /api/v1/secrets: %d %+v, want none (API_KEY is the team's)", code, mine.Secrets)
	}
	s.expectError(carolOps.Token, "PUT", "/api/v1/secrets/OTHER", map[string]any{"value": "x"}, 403, "forbidden")
	s.expectError(carolOps.Token, "POST", "/api/v1/desktops", map[string]any{"name": "nope", "vcpus": 1, "memory_mib": 1024, "data_disk_gib": 2}, 403, "forbidden")
	var wh struct{ ID string }
	if code := s.call(aliceOps.Token, "POST", "/api/v1/webhooks", hook, &wh); code != 201 || wh.ID == "" {
		t.Errorf("an admin's POST /api/v1/webhooks: %d %+v, want 201", code, wh)
	} else {
		defer s.call(aliceOps.Token, "DELETE", "/api/v1/webhooks/"+wh.ID, nil, nil)
	}

	// ---------- a team desktop ----------
	var d apiv1.Desktop
	if code := s.call(bobOps.Token, "POST", "/api/v1/desktops", map[string]any{"name": "ops-1", "vcpus": 1, "memory_mib": 1024, "data_disk_gib": 2}, &d); code != http.StatusAccepted || d.Owner != "ops" {
		t.Fatalf("a member creates a team desktop: %d %+v, want 202 owned by ops", code, d)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
		}
	})
	base := "/api/v1/desktops/" + d.ID
	var seen apiv1.Desktop
	if code := s.call(carolOps.Token, "GET", base, nil, &seen); code != 200 || seen.ID != d.ID {
		t.Errorf("a viewer's GET of the team desktop: %d", code)
	}
	s.expectError(carolOps.Token, "POST", base+"/stop", nil, 403, "forbidden")
	s.expectError(dave, "GET", base, nil, 404, "not_found")
	s.expectError(bob, "GET", base, nil, 404, "not_found")
	s.expectError(alice, "DELETE", "/api/v1/teams/ops", nil, 409, "busy")

	// ---------- the web console (while the desktop boots) ----------
	t.Run("browser", func(t *testing.T) {
		s := s.with(t)
		dir := os.TempDir()
		listShot := filepath.Join(dir, "bureau-e2e-teams-list.png")
		teamShot := filepath.Join(dir, "bureau-e2e-teams-team.png")
		tokensShot := filepath.Join(dir, "bureau-e2e-teams-tokens.png")
		var page struct {
			DuplicateError string `json:"duplicate_error"`
			Members        []struct {
				Member, Role string
			}
			BobRole     string `json:"bob_role"`
			DefaultRole string `json:"default_role"`
			Secret      string
			TokenID     string `json:"token_id"`
			ListedOwner string `json:"listed_owner"`
			ListedRole  string `json:"listed_role"`
			Errors      []string
		}
		consoleScript(t, s, "teams.mjs", "teams in the console", &page,
			"BUREAU_TOKEN="+alice, "TEAM=design", "MEMBER=bob", "LIST_SHOT="+listShot, "TEAM_SHOT="+teamShot, "TOKENS_SHOT="+tokensShot)
		t.Logf("screenshots: %s %s %s", listShot, teamShot, tokensShot)
		t.Cleanup(func() { s.call(alice, "DELETE", "/api/v1/teams/design", nil, nil) })
		if page.BobRole != "viewer" {
			t.Errorf("bob's row on the team page: role %q, want viewer (members %+v)", page.BobRole, page.Members)
		}
		if page.DuplicateError == "" {
			t.Errorf("creating a second team design showed no error")
		}
		if page.DefaultRole != "admin" {
			t.Errorf("tokens page: the role of a design token defaulted to %q, want alice's admin", page.DefaultRole)
		}
		// GET /api/v1/tokens lists the caller's owner's tokens: a person's
		// list may leave out the team tokens they minted.
		if page.ListedOwner == "" {
			t.Logf("the team token is not in alice's own token list")
		} else if page.ListedOwner != "design" || page.ListedRole != "viewer" {
			t.Errorf("tokens page: the team token listed as %q/%q, want design/viewer", page.ListedOwner, page.ListedRole)
		}
		if len(page.Errors) > 0 {
			t.Errorf("page errors: %v", page.Errors)
		}
		var design teamDetail
		if code := s.call(alice, "GET", "/api/v1/teams/design", nil, &design); code != 200 || len(design.Members) != 2 {
			t.Errorf("GET /api/v1/teams/design after the console: %d %+v, want alice and bob", code, design.Members)
		}
		var who struct{ Owner, Role string }
		if code := s.call(page.Secret, "GET", "/api/v1/session", nil, &who); code != 200 || who.Owner != "design" || who.Role != "viewer" {
			t.Errorf("GET /api/v1/session with the console's team token: %d %+v, want design viewer", code, who)
		}
		if code := s.call(page.Secret, "GET", "/api/v1/desktops", nil, nil); code != 200 {
			t.Errorf("GET /api/v1/desktops with the console's viewer team token: %d, want 200", code)
		}
		s.expectError(page.Secret, "PUT", "/api/v1/secrets/X", map[string]any{"value": "x"}, 403, "forbidden")

		// A sign-in session switches to the team in the top bar: bob
		// (signed in with single sign-on) is a viewer of design.
		memberCall(t, alice, "PUT", "design", ssoMemberEmail, map[string]any{"role": "viewer"})
		waitSSO(t, s)
		switchShot := filepath.Join(dir, "bureau-e2e-teams-switch.png")
		var sw struct {
			Acting, Role, Owner string
			NewDesktopButtons   int    `json:"new_desktop_buttons"`
			ListShown           bool   `json:"list_shown"`
			BackOwner           string `json:"back_owner"`
			BackRole            string `json:"back_role"`
			Errors              []string
		}
		consoleScript(t, s, "switch.mjs", "switching teams in the console", &sw,
			"OIDC_USER="+ssoMemberUser, "OIDC_PASSWORD="+ssoMemberPassword, "TEAM=design", "SHOT="+switchShot)
		t.Logf("screenshot: %s", switchShot)
		if sw.Acting != "design" || sw.Role != "viewer" || sw.Owner != "design" || !sw.ListShown || sw.NewDesktopButtons != 0 {
			t.Errorf("acting for design: %+v, want design as a viewer, the list shown without a New desktop button", sw)
		}
		if sw.BackOwner != ssoMemberEmail || sw.BackRole != "" {
			t.Errorf("back to the person: owner %q role %q, want %s", sw.BackOwner, sw.BackRole, ssoMemberEmail)
		}
		if len(sw.Errors) > 0 {
			t.Errorf("page errors while switching: %v", sw.Errors)
		}
	})

	s.waitState(aliceOps.Token, d.ID, desktop.StateRunning, 10*time.Minute)
	var g consoleGrant
	if code := s.call(carolOps.Token, "POST", base+"/console", map[string]any{"view_only": false}, &g); code != 201 || !g.ViewOnly || g.Token == "" {
		t.Errorf("a viewer asks for a full console: %d view_only %v, want 201 view-only", code, g.ViewOnly)
	}

	// ---------- admins, roles and revocation ----------
	s.expectError(alice, "DELETE", "/api/v1/teams/ops/members/alice", nil, 409, "last_admin")
	memberCall(t, alice, "PUT", "ops", "bob", map[string]any{"role": "viewer"})
	s.expectError(bobOps.Token, "GET", "/api/v1/desktops", nil, 401, "unauthorized")
	memberCall(t, alice, "DELETE", "ops", "carol", nil)
	s.expectError(carolOps.Token, "GET", "/api/v1/desktops", nil, 401, "unauthorized")
	var after teamDetail
	if code := s.call(alice, "GET", "/api/v1/teams/ops", nil, &after); code != 200 || len(after.Members) != 2 {
		t.Errorf("GET /api/v1/teams/ops after the changes: %d %+v, want alice and bob", code, after.Members)
	}
	for _, m := range after.Members {
		if m.Member == "bob" && m.Role != "viewer" {
			t.Errorf("bob's role after lowering: %q", m.Role)
		}
	}

	// The desktop goes, then the team.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var e apiErr
		code := s.call(aliceOps.Token, "DELETE", base+"?delete_data=true", nil, &e)
		if code == http.StatusOK {
			deleted = true
			break
		}
		if code != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("an admin deletes the team desktop: %d %+v", code, e.Error)
		}
		time.Sleep(2 * time.Second)
	}
	if code := s.call(alice, "DELETE", "/api/v1/teams/ops", nil, nil); code != http.StatusNoContent {
		t.Errorf("DELETE /api/v1/teams/ops with no desktop: %d, want 204", code)
	}
	s.expectError(aliceOps.Token, "GET", "/api/v1/desktops", nil, 401, "unauthorized")

	// The audit log names the person behind a team token.
	found := false
	for end := time.Now().Add(15 * time.Second); !found && time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		var page auditPage
		if code := s.call(adminToken, "GET", "/api/v1/audit?limit=1000", nil, &page); code != 200 {
			t.Fatalf("GET /api/v1/audit: %d", code)
		}
		for _, e := range page.Entries {
			if e.TokenID == bobOps.Info.ID && e.Owner == "ops" && e.Status == 200 {
				if e.Person != "bob" {
					t.Errorf("the audit entry of bob's team token call (%s): person %q, want bob", e.Action, e.Person)
				}
				found = true
				break
			}
		}
	}
	if !found {
		t.Errorf("no audit entry of bob's team token's successful calls")
	}

}

// waitSSO waits until bureau has read the provider's discovery (it reads
// it in the background when the provider was not up at its start).
func waitSSO(t *testing.T, s *server) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var c struct{ OIDC bool }
		if code := s.call("", "GET", "/auth/config", nil, &c); code == 200 && c.OIDC {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("single sign-on is not configured: GET /auth/config %+v", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
