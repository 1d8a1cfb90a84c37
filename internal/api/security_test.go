package api

import (
	"fmt"
	"testing"
	"time"
)

// The security review's findings on scope and lifetime (issue 49): a
// desktop token handed to an agent must not loosen its own desktop's rules,
// and nothing a token makes outlives it.

// TestNetworkPolicyNeedsTheRightCaller: private ranges are an admin's to
// open, cloud metadata nobody's, and a desktop token changes no policy of
// its own desktop.
func TestNetworkPolicyNeedsTheRightCaller(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	path := "/api/v1/desktops/" + id
	patch := func(tok, body string) (int, map[string]any) { return e.do(t, tok, "PATCH", path, body) }
	_, agentTok, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q,"ttl_seconds":60}`, id))

	for _, body := range []string{`{"network":{"allow_out":["169.254.169.254"]}}`, `{"network":{"allow_out":["169.254.0.0/16"]}}`} {
		for who, tok := range map[string]string{"owner": e.alice, "admin": e.admin} {
			if code, r := patch(tok, body); code != 422 {
				t.Errorf("%s: %s: %d %v, want 422 (metadata is never opened)", who, body, code, r)
			}
		}
	}
	private := `{"network":{"allow_out":["10.0.0.0/8","203.0.113.4"],"deny_out":["0.0.0.0/0"]}}`
	if code, r := patch(e.alice, private); code != 403 {
		t.Errorf("owner opening 10.0.0.0/8: %d %v, want 403", code, r)
	}
	if code, r := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"p","network":{"allow_out":["192.168.1.0/24"]}}`); code != 403 {
		t.Errorf("owner creating with 192.168.1.0/24 open: %d %v, want 403", code, r)
	}
	if code, r := patch(e.admin, private); code != 200 {
		t.Fatalf("admin opening 10.0.0.0/8: %d %v", code, r)
	}
	// The owner keeps what the admin opened and changes the rest, but adds
	// nothing private.
	if code, r := patch(e.alice, `{"network":{"allow_out":["10.0.0.0/8","198.51.100.7"],"deny_out":[]}}`); code != 200 {
		t.Errorf("owner keeping the admin's entry: %d %v", code, r)
	}
	if code, r := patch(e.alice, `{"network":{"allow_out":["10.0.0.0/8","172.16.0.0/12"]}}`); code != 403 {
		t.Errorf("owner adding 172.16.0.0/12: %d %v, want 403", code, r)
	}
	for _, body := range []string{`{"network":{"allow_out":["203.0.113.4"]}}`, `{"idle_timeout_seconds":0}`, `{"restart_on_crash":false}`,
		`{"nap_after_seconds":0}`} {
		if code, r := patch(agentTok, body); code != 403 {
			t.Errorf("desktop token: %s: %d %v, want 403", body, code, r)
		}
	}
	for _, route := range [][2]string{{"PUT", path + "/checkpoints"}, {"PUT", path + "/urls/8080"}} {
		if code, r := e.do(t, agentTok, route[0], route[1], `{"every_steps":1,"public":true}`); code != 403 {
			t.Errorf("desktop token: %s %s: %d %v, want 403", route[0], route[1], code, r)
		}
	}
	_, d := e.do(t, e.alice, "GET", path, "")
	if n := d["network"].(map[string]any)["allow_out"].([]any); len(n) != 2 || n[0] != "10.0.0.0/8" || n[1] != "198.51.100.7" {
		t.Errorf("policy after the refusals: %v", d["network"])
	}
}

// TestComputerOnlyConsoleShowsTheScreenOnly: a computer-only token's
// console link is view-only, opens no terminal and reads no clipboard, and
// expires with the token.
func TestComputerOnlyConsoleShowsTheScreenOnly(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	_, secret, info := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q,"computer_only":true,"ttl_seconds":120}`, id))
	exp, _ := time.Parse(time.RFC3339Nano, info["expires_at"].(string))
	c := e.console(t, secret, id, false)
	if c["view_only"] != true || c["screen_only"] != true {
		t.Errorf("computer-only console: %v, want view_only and screen_only", c)
	}
	if got, _ := time.Parse(time.RFC3339Nano, c["expires_at"].(string)); got.After(exp) {
		t.Errorf("console expires %s, after its token (%s)", got, exp)
	}
	q := "?token=" + c["token"].(string)
	if code, r := e.do(t, "", "GET", "/api/v1/desktops/"+id+"/console/clipboard"+q, ""); code != 403 {
		t.Errorf("screen-only console reading the clipboard: %d %v", code, r)
	}
	if code, r := e.do(t, "", "GET", "/api/v1/desktops/"+id+"/console/pty"+q, ""); code != 422 {
		t.Errorf("screen-only console opening a terminal: %d %v", code, r)
	}
	if code, s := e.do(t, "", "GET", "/api/v1/desktops/"+id+"/console/session"+q, ""); code != 200 || s["screen_only"] != true {
		t.Errorf("console session: %d %v", code, s)
	}
	// The owner's own console is as before.
	if own := e.console(t, e.alice, id, false); own["view_only"] != false || own["screen_only"] != false {
		t.Errorf("owner's console: %v", own)
	}
}

// TestWhatATokenMakesEndsWithIt: share links, public ports and console
// links never outlive the token that made them and are revoked with it.
func TestWhatATokenMakesEndsWithIt(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	_, agentTok, agent := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q,"ttl_seconds":60}`, id))
	agentExp, _ := time.Parse(time.RFC3339Nano, agent["expires_at"].(string))
	code, sh := e.do(t, agentTok, "POST", base+"/shares", `{"port":8080,"ttl_s":2592000}`)
	if code != 201 {
		t.Fatalf("share by a desktop token: %d %v", code, sh)
	}
	if got, _ := time.Parse(time.RFC3339Nano, sh["share"].(map[string]any)["expires_at"].(string)); got.After(agentExp) {
		t.Errorf("a 60-second token's share link expires %s, after the token (%s)", got, agentExp)
	}

	// An owner's child token (a day) makes a port public, a share and a
	// console link; revoking it takes all three away.
	_, ct, child := e.mint(t, e.alice, `{"ttl_seconds":86400}`)
	if code, r := e.do(t, ct, "PUT", base+"/urls/9000", `{"public":true}`); code != 200 {
		t.Fatalf("make public: %d %v", code, r)
	}
	_, sh2 := e.do(t, ct, "POST", base+"/shares", `{"port":9001}`)
	con := e.console(t, ct, id, false)
	public := func() bool {
		_, r := e.do(t, e.alice, "GET", base+"/urls", "")
		for _, u := range r["urls"].([]any) {
			if u := u.(map[string]any); u["port"] == float64(9000) {
				return u["public"] == true
			}
		}
		return false
	}
	if !public() {
		t.Fatal("port 9000 not public")
	}
	if code, r := e.do(t, e.alice, "DELETE", "/api/v1/tokens/"+child["id"].(string), ""); code != 204 {
		t.Fatalf("revoke: %d %v", code, r)
	}
	if public() {
		t.Error("port 9000 still public after its maker was revoked")
	}
	_, list := e.do(t, e.alice, "GET", base+"/shares", "")
	for _, s := range list["shares"].([]any) {
		if s := s.(map[string]any); s["id"] == sh2["share"].(map[string]any)["id"] && s["revoked_at"] == nil {
			t.Errorf("share link still live after its maker was revoked: %v", s)
		}
	}
	if code, _ := e.do(t, "", "GET", base+"/console/session?token="+con["token"].(string), ""); code != 401 {
		t.Errorf("console link after its maker was revoked: %d, want 401", code)
	}
}

// TestDesktopTokenReachesOnlyAllowedSecrets: a desktop token lists and
// injects its desktop's secrets and the owner secrets allowed there, not
// every owner-wide secret.
func TestDesktopTokenReachesOnlyAllowedSecrets(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	other := runningDesktop(t, e, e.bob)
	_, agentTok, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))
	for path, v := range map[string]string{"/api/v1/secrets/OWNER_KEY": "o", "/api/v1/desktops/" + id + "/secrets/DESK_KEY": "d"} {
		if code, r := e.do(t, e.alice, "PUT", path, `{"value":"`+v+`"}`); code != 200 {
			t.Fatalf("PUT %s: %d %v", path, code, r)
		}
	}
	names := func() []string {
		_, r := e.do(t, agentTok, "GET", "/api/v1/desktops/"+id+"/secrets", "")
		var out []string
		for _, s := range r["secrets"].([]any) {
			out = append(out, s.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(); len(got) != 1 || got[0] != "DESK_KEY" {
		t.Errorf("a desktop token lists %v, want its desktop's DESK_KEY only", got)
	}
	exec := `{"cmd":"true","secrets":["OWNER_KEY"]}`
	if code, r := e.do(t, agentTok, "POST", "/api/v1/desktops/"+id+"/exec", exec); code != 403 {
		t.Errorf("a desktop token injecting an owner secret not allowed there: %d %v, want 403", code, r)
	}
	if code, r := e.do(t, e.alice, "PUT", "/api/v1/secrets/OWNER_KEY", `{"desktops":["`+other+`"]}`); code != 422 {
		t.Errorf("allowing on another owner's desktop: %d %v, want 422", code, r)
	}
	if code, r := e.do(t, e.alice, "PUT", "/api/v1/desktops/"+id+"/secrets/DESK_KEY", `{"desktops":["*"]}`); code != 422 {
		t.Errorf("desktops on a desktop's own secret: %d %v, want 422", code, r)
	}
	code, r := e.do(t, e.alice, "PUT", "/api/v1/secrets/OWNER_KEY", `{"desktops":["`+id+`"]}`)
	if ds, _ := r["desktops"].([]any); code != 200 || len(ds) != 1 || ds[0] != id {
		t.Fatalf("allow OWNER_KEY on the desktop: %d %v", code, r)
	}
	if got := names(); len(got) != 2 {
		t.Errorf("after allowing: %v", got)
	}
	if code, r := e.do(t, agentTok, "POST", "/api/v1/desktops/"+id+"/exec", exec); code == 403 {
		t.Errorf("an allowed owner secret still refused: %d %v", code, r)
	}
}

// TestNamesArePlainText: free text refuses terminal escapes, NUL and line
// breaks, naming the field.
func TestNamesArePlainText(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	for _, c := range []struct{ path, body, field string }{
		{"/api/v1/tokens", `{"name":"x\n\u001b[31mred\u0000"}`, "name"},
		{"/api/v1/tokens", `{"name":"ok","owner":"al\u001bice"}`, "owner"},
		{"/api/v1/desktops/" + id + "/snapshots", `{"name":"s1","description":"\u001b]0;pwned\u0007"}`, "description"},
	} {
		code, r := e.do(t, e.admin, "POST", c.path, c.body)
		errBody, _ := r["error"].(map[string]any)
		if code != 422 || errBody["field"] != c.field {
			t.Errorf("POST %s %s: %d %v, want 422 on %s", c.path, c.body, code, r, c.field)
		}
	}
	if code, r := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"name":"CI runner – nightly"}`); code != 201 {
		t.Errorf("a plain name: %d %v", code, r)
	}
}
