package api

import (
	"net/http"
	"testing"

	"github.com/bureau/bureau/internal/signin"
)

// TestSwitchTeam signs a person in, switches their sign-in to a team they
// are in (and not to one they are not), and back to themselves; the old
// sign-ins stop working and the audit log names the person.
func TestSwitchTeam(t *testing.T) {
	e, p, _ := signInEnv(t, true)
	e.do(t, e.alice, "POST", "/api/v1/teams", `{"name":"ops"}`)
	e.do(t, e.alice, "PUT", "/api/v1/teams/ops/members/carol@example.com", `{"role":"viewer"}`)
	e.do(t, e.bob, "POST", "/api/v1/teams", `{"name":"other"}`)
	sess := signInAs(t, e, p, map[string]any{"email": "carol@example.com", "name": "Carol"})
	resp, body := e.browser(t, "GET", "/api/v1/session", "", []*http.Cookie{sess}, nil)
	me := jsonOf(t, body)
	if dig(me, "teams.0.name") != "ops" || dig(me, "teams.0.role") != "viewer" || me["role"] != "" {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	csrf := me["csrf_token"].(string)
	h := map[string]string{"X-CSRF-Token": csrf}
	if resp, body := e.browser(t, "POST", "/auth/team", `{"team":"other"}`, []*http.Cookie{sess}, h); resp.StatusCode != 404 {
		t.Errorf("a team carol is not in: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.browser(t, "POST", "/auth/team", `{"team":"ops"}`, []*http.Cookie{sess}, nil); resp.StatusCode != 403 {
		t.Errorf("without the CSRF token: %d", resp.StatusCode)
	}
	resp, body = e.browser(t, "POST", "/auth/team", `{"team":"ops"}`, []*http.Cookie{sess}, h)
	team := cookieNamed(resp, signin.SessionCookie)
	me = jsonOf(t, body)
	if resp.StatusCode != 200 || team == nil || me["owner"] != "ops" || me["role"] != "viewer" || me["member"] != "carol@example.com" ||
		me["name"] != "signed in: Carol (ops)" || me["via"] != "sign-in" || me["csrf_token"] == csrf {
		t.Fatalf("switch to ops: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.browser(t, "GET", "/api/v1/desktops", "", []*http.Cookie{sess}, nil); resp.StatusCode != 401 {
		t.Errorf("the old sign-in after switching: %d", resp.StatusCode)
	}
	jar, h := []*http.Cookie{team}, map[string]string{"X-CSRF-Token": me["csrf_token"].(string)}
	if resp, _ := e.browser(t, "GET", "/api/v1/desktops", "", jar, nil); resp.StatusCode != 200 {
		t.Errorf("the team sign-in reads: %d", resp.StatusCode)
	}
	if resp, body := e.browser(t, "POST", "/api/v1/desktops", `{"name":"x"}`, jar, h); resp.StatusCode != 403 {
		t.Errorf("a viewer's sign-in creates: %d %s", resp.StatusCode, body)
	}
	resp, body = e.browser(t, "POST", "/auth/team", `{"team":""}`, jar, h)
	back := cookieNamed(resp, signin.SessionCookie)
	if me := jsonOf(t, body); resp.StatusCode != 200 || back == nil || me["owner"] != "carol@example.com" || me["role"] != "" || me["name"] != "signed in: Carol" {
		t.Fatalf("switch back: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.browser(t, "GET", "/api/v1/desktops", "", jar, nil); resp.StatusCode != 401 {
		t.Errorf("the team sign-in after switching back: %d", resp.StatusCode)
	}
	if resp, _ := e.browser(t, "GET", "/api/v1/desktops", "", []*http.Cookie{back}, nil); resp.StatusCode != 200 {
		t.Errorf("carol's own sign-in again: %d", resp.StatusCode)
	}
}
