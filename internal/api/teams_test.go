package api

import (
	"context"
	"slices"
	"testing"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
)

// teamStore is the store's teams with the fake's desktops (the env's
// desktops live in fakeDesktops, not in the store).
type teamStore struct {
	*store.Teams
	desktops *fakeDesktops
}

func (ts teamStore) OwnerDesktops(_ context.Context, owner string) ([]string, error) {
	ts.desktops.mu.Lock()
	defer ts.desktops.mu.Unlock()
	var ids []string
	for id, d := range ts.desktops.desktops {
		if d.Owner == owner && d.DeletedAt == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// personToken mints an owner token for a person on the host.
func personToken(t *testing.T, e *env, owner string) string {
	t.Helper()
	s, _, err := auth.New(e.store).Create(context.Background(), auth.CreateRequest{Owner: owner, Scope: desktop.ScopeOwner})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// teamToken mints a team token through the API and returns its secret
// and record.
func teamToken(t *testing.T, e *env, by, body string) (string, map[string]any) {
	t.Helper()
	code, r := e.do(t, by, "POST", "/api/v1/tokens", body)
	if code != 201 {
		t.Fatalf("mint %s: %d %v", body, code, r)
	}
	return r["token"].(string), r["info"].(map[string]any)
}

// TestTeamLifecycle makes a team, adds, changes and removes members,
// refuses the last admin's going and an owner's name, and deletes it.
func TestTeamLifecycle(t *testing.T) {
	e := newEnv(t)
	if code, r := e.do(t, e.alice, "POST", "/api/v1/teams", `{"name":"ops"}`); code != 201 || r["role"] != "admin" || r["created_by"] != "alice" ||
		len(r["members"].([]any)) != 1 {
		t.Fatalf("create: %d %v", code, r)
	}
	for name, want := range map[string]string{"alice": "name_taken", "ops": "name_taken", "bad/name": "invalid", "": "invalid"} {
		if code, r := e.do(t, e.bob, "POST", "/api/v1/teams", `{"name":"`+name+`"}`); errCode(r) != want {
			t.Errorf("create %q: %d %v, want %s", name, code, r, want)
		}
	}
	if code, r := e.do(t, e.bob, "GET", "/api/v1/teams/ops", ""); code != 404 {
		t.Errorf("a non-member's GET: %d %v", code, r)
	}
	if code, r := e.do(t, e.bob, "PUT", "/api/v1/teams/ops/members/bob", `{"role":"admin"}`); code != 404 {
		t.Errorf("a non-member adds themselves: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/bob", `{"role":"viewer"}`); code != 200 || r["role"] != "viewer" || r["added_by"] != "alice" {
		t.Fatalf("add bob: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/bob", `{"role":"boss"}`); code != 422 || errField(r) != "role" {
		t.Errorf("a bad role: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/b%07ob", `{"role":"member"}`); code != 422 || errField(r) != "member" {
		t.Errorf("a control character: %d %v", code, r)
	}
	code, r := e.do(t, e.bob, "GET", "/api/v1/teams", "")
	if list, _ := r["teams"].([]any); code != 200 || len(list) != 1 || dig(r, "teams.0.role") != "viewer" || dig(r, "teams.0.members") != float64(2) {
		t.Errorf("bob's teams: %d %v", code, r)
	}
	if code, r := e.do(t, e.bob, "GET", "/api/v1/teams/ops", ""); code != 200 || len(r["members"].([]any)) != 2 || r["role"] != "viewer" {
		t.Errorf("bob's GET: %d %v", code, r)
	}
	if code, r := e.do(t, e.admin, "GET", "/api/v1/teams", ""); code != 200 || len(r["teams"].([]any)) != 1 {
		t.Errorf("an admin's list: %d %v", code, r)
	}
	if code, r := e.do(t, e.bob, "PUT", "/api/v1/teams/ops/members/carol", `{"role":"viewer"}`); code != 403 {
		t.Errorf("a viewer manages: %d %v", code, r)
	}
	for _, c := range []struct{ method, body string }{{"DELETE", ""}, {"PUT", `{"role":"member"}`}} {
		if code, r := e.do(t, e.alice, c.method, "/api/v1/teams/ops/members/alice", c.body); code != 409 || errCode(r) != "last_admin" {
			t.Errorf("%s the last admin: %d %v", c.method, code, r)
		}
	}
	if code, r := e.do(t, e.bob, "DELETE", "/api/v1/teams/ops/members/bob", ""); code != 204 {
		t.Errorf("bob leaves: %d %v", code, r)
	}
	if code, r := e.do(t, e.bob, "DELETE", "/api/v1/teams/ops", ""); code != 404 {
		t.Errorf("a former member deletes: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "DELETE", "/api/v1/teams/ops", ""); code != 204 {
		t.Errorf("delete: %d %v", code, r)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/teams/ops", ""); code != 404 {
		t.Errorf("a deleted team: %d", code)
	}
}

// TestTeamTokens mints team tokens (who may, at which role), holds them
// to their roles, and revokes them when their person is lowered or
// removed; a team owning desktops is not deleted.
func TestTeamTokens(t *testing.T) {
	e := newEnv(t)
	carol := personToken(t, e, "carol")
	e.do(t, e.alice, "POST", "/api/v1/teams", `{"name":"ops"}`)
	e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/bob", `{"role":"viewer"}`)
	e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/carol", `{"role":"member"}`)

	if code, r := e.do(t, e.admin, "POST", "/api/v1/tokens", `{"owner":"ops"}`); code != 201 || dig(r, "info.role") != "admin" {
		t.Errorf("a bureau admin mints: %d %v", code, r)
	}
	if code, r := e.do(t, personToken(t, e, "dave"), "POST", "/api/v1/tokens", `{"owner":"ops"}`); code != 404 {
		t.Errorf("a non-member mints: %d %v, want 404", code, r)
	}
	if code, r := e.do(t, e.bob, "POST", "/api/v1/tokens", `{"owner":"ops","role":"member"}`); code != 403 {
		t.Errorf("a viewer mints a member token: %d %v, want 403", code, r)
	}
	viewer, info := teamToken(t, e, e.bob, `{"owner":"ops","name":"watcher"}`)
	if info["role"] != "viewer" || info["member"] != "bob" || info["owner"] != "ops" || info["parent_id"] == nil {
		t.Errorf("bob's default: %v", info)
	}
	member, info := teamToken(t, e, carol, `{"owner":"ops"}`)
	carolViewer, _ := teamToken(t, e, carol, `{"owner":"ops","role":"viewer"}`)
	admin, info := teamToken(t, e, e.alice, `{"owner":"ops","role":"admin"}`)
	if info["role"] != "admin" {
		t.Errorf("alice's admin token: %v", info)
	}
	if code, r := e.do(t, member, "POST", "/api/v1/tokens", `{"role":"admin"}`); code != 403 {
		t.Errorf("a member token mints an admin one: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"role":"viewer"}`); code != 422 || errField(r) != "role" {
		t.Errorf("a role on a person's own token: %d %v", code, r)
	}

	// The team's desktop, made with a member's token.
	code, d := e.do(t, member, "POST", "/api/v1/desktops", `{"name":"shared"}`)
	if code != 202 || d["owner"] != "ops" {
		t.Fatalf("a member creates: %d %v", code, d)
	}
	id := d["id"].(string)
	e.desktops.setState(id, desktop.StateRunning)
	if code, r := e.do(t, e.bob, "POST", "/api/v1/tokens", `{"desktop_id":"`+id+`","role":"member"}`); code != 403 {
		t.Errorf("a viewer's member desktop token: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"desktop_id":"`+id+`"}`); code != 201 || dig(r, "info.role") != "member" {
		t.Errorf("an admin's desktop token: %d %v, want member", code, r)
	}

	// A viewer watches.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/api/v1/desktops/" + id, "", 200},
		{"GET", "/api/v1/desktops", "", 200},
		{"PUT", "/api/v1/desktops/" + id + "/secrets/X", `{"value":"v"}`, 403},
		{"POST", "/api/v1/desktops/" + id + "/stop", "{}", 403},
		{"POST", "/api/v1/events/stream-token", "", 201},
		{"POST", "/api/v1/tokens", `{"owner":"ops"}`, 403},
	} {
		if code, r := e.do(t, viewer, c.method, c.path, c.body); code != c.want {
			t.Errorf("viewer %s %s: %d %v, want %d", c.method, c.path, code, r, c.want)
		}
	}
	if code, r := e.do(t, viewer, "POST", "/api/v1/desktops/"+id+"/console", `{"view_only":false}`); code != 201 || r["view_only"] != true {
		t.Errorf("a viewer's console: %d %v, want view-only", code, r)
	}
	// A GET that would switch protocols is a shell or an app's WebSocket.
	ws := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, path := range []string{"/api/v1/desktops/" + id + "/pty", "/api/v1/desktops/" + id + "/ports/8080/ws"} {
		if code, body, _ := e.doHeaders(t, viewer, "GET", path, "", ws); code != 403 {
			t.Errorf("a viewer's WebSocket GET %s: %d %s, want 403", path, code, body)
		}
	}
	// A member uses but does not manage.
	for _, c := range []struct {
		tok, method, path, body string
		want                    int
	}{
		{member, "PUT", "/api/v1/desktops/" + id + "/secrets/X", `{"value":"v"}`, 204},
		{member, "POST", "/api/v1/webhooks", `{"url":"https://example.com/h"}`, 403},
		{member, "PUT", "/api/v1/teams/ops/members/dave", `{"role":"viewer"}`, 403},
		{member, "DELETE", "/api/v1/teams/ops", "", 403},
		{admin, "PUT", "/api/v1/teams/ops/members/dave", `{"role":"viewer"}`, 200},
		{admin, "DELETE", "/api/v1/teams/ops/members/dave", "", 204},
		{admin, "POST", "/api/v1/teams", `{"name":"ops2"}`, 403},
		{admin, "DELETE", "/api/v1/teams/ops", "", 409},
	} {
		if code, r := e.do(t, c.tok, c.method, c.path, c.body); code != c.want && !(c.want == 204 && code == 200) {
			t.Errorf("%s %s: %d %v, want %d", c.method, c.path, code, r, c.want)
		}
	}
	if code, r := e.do(t, admin, "DELETE", "/api/v1/teams/ops", ""); errCode(r) != "busy" {
		t.Errorf("delete with a desktop: %d %v, want busy", code, r)
	}
	if code, r := e.do(t, viewer, "GET", "/api/v1/session", ""); code != 200 || r["role"] != "viewer" || r["member"] != "bob" || dig(r, "teams.0.name") != "ops" {
		t.Errorf("a viewer's session: %d %v", code, r)
	}

	// Lowering carol revokes her member token, not her viewer one;
	// removing bob revokes his.
	if code, r := e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/carol", `{"role":"viewer"}`); code != 200 {
		t.Fatalf("lower carol: %d %v", code, r)
	}
	if code, _ := e.do(t, member, "GET", "/api/v1/desktops", ""); code != 401 {
		t.Errorf("carol's member token after lowering: %d, want 401", code)
	}
	if code, _ := e.do(t, carolViewer, "GET", "/api/v1/desktops", ""); code != 200 {
		t.Errorf("carol's viewer token after lowering: %d, want 200", code)
	}
	if code, r := e.do(t, e.alice, "DELETE", "/api/v1/teams/ops/members/bob", ""); code != 204 {
		t.Fatalf("remove bob: %d %v", code, r)
	}
	if code, _ := e.do(t, viewer, "GET", "/api/v1/desktops", ""); code != 401 {
		t.Errorf("bob's token after removal: %d, want 401", code)
	}
	if code, _ := e.do(t, admin, "GET", "/api/v1/desktops", ""); code != 200 {
		t.Errorf("alice's admin token: %d", code)
	}
}

// A person's own token lists the team tokens they made (not the other
// members') and revokes them; a team token lists its team's.
func TestPersonSeesTheirTeamTokens(t *testing.T) {
	e := newEnv(t)
	carol := personToken(t, e, "carol")
	e.do(t, e.alice, "POST", "/api/v1/teams", `{"name":"ops"}`)
	e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/carol", `{"role":"member"}`)
	mine, info := teamToken(t, e, carol, `{"owner":"ops","name":"carol's agent"}`)
	teamToken(t, e, e.alice, `{"owner":"ops","name":"alice's agent"}`)
	names := func(token string) []string {
		t.Helper()
		code, r := e.do(t, token, "GET", "/api/v1/tokens", "")
		if code != 200 {
			t.Fatalf("list: %d %v", code, r)
		}
		var out []string
		for _, x := range r["tokens"].([]any) {
			out = append(out, x.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(carol); !slices.Contains(got, "carol's agent") || slices.Contains(got, "alice's agent") {
		t.Errorf("carol's list: %v, want her team token and not alice's", got)
	}
	if got := names(mine); !slices.Contains(got, "alice's agent") {
		t.Errorf("the team token's list: %v, want the team's tokens", got)
	}
	if code, r := e.do(t, carol, "DELETE", "/api/v1/tokens/"+info["id"].(string), ""); code != 204 {
		t.Errorf("carol revokes her team token: %d %v", code, r)
	}
	if code, _ := e.do(t, mine, "GET", "/api/v1/desktops", ""); code != 401 {
		t.Errorf("her revoked team token: %d, want 401", code)
	}
}
