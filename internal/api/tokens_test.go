package api

import (
	"testing"
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
