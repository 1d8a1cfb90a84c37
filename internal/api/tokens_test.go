package api

import (
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// mint asks for a token as tok and returns the status, the new secret and
// its record.
func (e *env) mint(t *testing.T, tok, body string) (int, string, map[string]any) {
	t.Helper()
	code, r := e.do(t, tok, "POST", "/api/v1/tokens", body)
	secret, _ := r["token"].(string)
	info, _ := r["info"].(map[string]any)
	if info == nil {
		info = r
	}
	return code, secret, info
}

// TestMintedTokensStayWithinTheirMaker is the API side of token
// inheritance: no token mints one that reaches further or lives longer.
func TestMintedTokensStayWithinTheirMaker(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	_, o := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"other"}`)
	mine, other := d["id"].(string), o["id"].(string)
	_, agent, agentInfo := e.mint(t, e.alice, `{"desktop_id":"`+mine+`"}`)
	_, viewer, _ := e.mint(t, e.alice, `{"desktop_id":"`+mine+`","computer_only":true}`)
	_, expiring, _ := e.mint(t, e.alice, `{"ttl_seconds":3600}`)

	for _, c := range []struct {
		name, token, body string
		want              int
	}{
		{"desktop token mints owner-wide", agent, `{"scope":"owner"}`, 403},
		{"desktop token mints with no desktop", agent, `{}`, 403},
		{"desktop token mints for another desktop", agent, `{"desktop_id":"` + other + `"}`, 403},
		{"desktop token mints for a desktop that does not exist", agent, `{"desktop_id":"nope"}`, 403},
		{"desktop token mints admin", agent, `{"scope":"admin","desktop_id":"` + mine + `"}`, 422},
		{"desktop token mints for its desktop", agent, `{"desktop_id":"` + mine + `","computer_only":true}`, 201},
		{"computer-only mints a full desktop token", viewer, `{"desktop_id":"` + mine + `"}`, 403},
		{"computer-only mints computer-only", viewer, `{"desktop_id":"` + mine + `","computer_only":true}`, 403},
		{"owner mints admin", e.alice, `{"scope":"admin"}`, 403},
		{"owner mints for another owner", e.alice, `{"owner":"bob"}`, 404}, // not one of its teams (docs/teams.md)
		{"owner mints a desktop token for another owner", e.alice, `{"desktop_id":"` + mine + `","owner":"bob"}`, 422},
		{"owner mints for another owner's desktop", e.bob, `{"desktop_id":"` + mine + `"}`, 422},
		{"expiring mints forever", expiring, `{}`, 422},
		{"expiring mints longer", expiring, `{"ttl_seconds":7200}`, 422},
		{"expiring mints shorter", expiring, `{"ttl_seconds":600}`, 201},
		{"negative ttl", e.alice, `{"ttl_seconds":-1}`, 422},
		{"ttl past ten years", e.alice, `{"ttl_seconds":9223372036}`, 422},
		{"admin mints admin for another owner", e.admin, `{"owner":"bob","scope":"admin"}`, 201},
	} {
		code, _, info := e.mint(t, c.token, c.body)
		if code != c.want {
			t.Errorf("%s: %d %v, want %d", c.name, code, info, c.want)
		}
	}
	_, _, child := e.mint(t, agent, `{"desktop_id":"`+mine+`"}`)
	if child["parent_id"] != agentInfo["id"] || child["scope"] != desktop.ScopeDesktop || child["desktop_id"] != mine {
		t.Errorf("child of the agent's token: %v", child)
	}
	code, _, info := e.mint(t, expiring, `{}`)
	if msg, _ := info["error"].(map[string]any)["message"].(string); code != 422 || !strings.Contains(msg, "must expire too") {
		t.Errorf("an expiring token makes a token without expiry: %d %v", code, info)
	}
}

func TestRevokingATokenRevokesWhatItMinted(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	_, parent, parentInfo := e.mint(t, e.alice, `{"name":"parent"}`)
	_, child, _ := e.mint(t, parent, `{"name":"child"}`)
	_, grandchild, _ := e.mint(t, child, `{"desktop_id":"`+id+`"}`)
	_, sibling, _ := e.mint(t, e.alice, `{"name":"sibling"}`)
	if code, _ := e.do(t, grandchild, "GET", "/api/v1/desktops/"+id, ""); code != 200 {
		t.Fatalf("grandchild before revoking: %d", code)
	}
	if code, _ := e.do(t, e.bob, "DELETE", "/api/v1/tokens/"+parentInfo["id"].(string), ""); code != 404 {
		t.Errorf("bob revokes alice's token: %d", code)
	}
	if code, body := e.do(t, e.alice, "DELETE", "/api/v1/tokens/"+parentInfo["id"].(string), ""); code != 204 {
		t.Fatalf("revoke: %d %v", code, body)
	}
	for name, tok := range map[string]string{"parent": parent, "child": child, "grandchild": grandchild} {
		if code, _ := e.do(t, tok, "GET", "/api/v1/desktops/"+id, ""); code != 401 {
			t.Errorf("%s after its ancestor was revoked: %d", name, code)
		}
	}
	for name, tok := range map[string]string{"maker": e.alice, "sibling": sibling} {
		if code, _ := e.do(t, tok, "GET", "/api/v1/desktops", ""); code != 200 {
			t.Errorf("%s after revoking another branch: %d", name, code)
		}
	}
}
