package api

import (
	"strings"
	"testing"
	"time"
)

func TestSecretsThroughTheAPI(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	code, sec := e.do(t, e.alice, "PUT", "/api/v1/secrets/STRIPE_KEY", `{"value":"sk_live_abc"}`)
	if code != 200 || sec["name"] != "STRIPE_KEY" || sec["scope"] != "owner" || sec["owner"] != "alice" {
		t.Fatalf("put: %d %v", code, sec)
	}
	select {
	case got := <-e.changed:
		if got != "alice/" {
			t.Errorf("changed: %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Error("no change was announced")
	}
	if code, _ := e.do(t, e.alice, "PUT", "/api/v1/desktops/"+id+"/secrets/STRIPE_KEY", `{"value":"sk_test_def"}`); code != 200 {
		t.Fatalf("put for the desktop: %d", code)
	}
	for _, path := range []string{"/api/v1/secrets", "/api/v1/desktops/" + id + "/secrets"} {
		code, _, body := e.raw(t, e.alice, "GET", path, "", nil)
		raw := string(body)
		if code != 200 || strings.Contains(raw, "sk_") || !strings.Contains(raw, "STRIPE_KEY") {
			t.Errorf("GET %s: %d %s", path, code, raw)
		}
	}
	// Others see nothing of alice's.
	if code, list := e.do(t, e.bob, "GET", "/api/v1/secrets", ""); code != 200 || len(list["secrets"].([]any)) != 0 {
		t.Errorf("bob's list: %d %v", code, list)
	}
	if code, _ := e.do(t, e.bob, "PUT", "/api/v1/desktops/"+id+"/secrets/X", `{"value":"v"}`); code != 404 {
		t.Errorf("bob sets a secret on alice's desktop: %d", code)
	}
	if code, _ := e.do(t, e.bob, "GET", "/api/v1/secrets?owner=alice", ""); code != 403 {
		t.Errorf("bob lists alice's by ?owner: %d", code)
	}
	if code, list := e.do(t, e.admin, "GET", "/api/v1/secrets?owner=alice", ""); code != 200 || len(list["secrets"].([]any)) != 1 {
		t.Errorf("admin lists alice's: %d %v", code, list)
	}
	if code, _ := e.do(t, "", "GET", "/api/v1/secrets", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}
	for _, bad := range []string{`{"value":""}`, `{}`, `{"value":"x","other":1}`} {
		if code, body := e.do(t, e.alice, "PUT", "/api/v1/secrets/OK", bad); code != 422 && code != 400 {
			t.Errorf("%s: %d %v", bad, code, body)
		}
	}
	if code, body := e.do(t, e.alice, "PUT", "/api/v1/secrets/lower-case", `{"value":"x"}`); code != 422 || errField(body) != "name" {
		t.Errorf("bad name: %d %v", code, body)
	}
	// A desktop token lists its desktop's names but cannot set or delete.
	_, dt, _ := e.mint(t, e.alice, `{"desktop_id":"`+id+`"}`)
	if code, _ := e.do(t, dt, "GET", "/api/v1/desktops/"+id+"/secrets", ""); code != 200 {
		t.Errorf("desktop token lists: %d", code)
	}
	if code, _ := e.do(t, dt, "PUT", "/api/v1/desktops/"+id+"/secrets/X", `{"value":"v"}`); code != 403 {
		t.Errorf("desktop token sets: %d", code)
	}
	if code, _ := e.do(t, dt, "GET", "/api/v1/secrets", ""); code != 403 {
		t.Errorf("desktop token lists its owner's: %d", code)
	}
	if code, _ := e.do(t, e.alice, "DELETE", "/api/v1/secrets/STRIPE_KEY", ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := e.do(t, e.alice, "DELETE", "/api/v1/secrets/STRIPE_KEY", ""); code != 404 {
		t.Errorf("second delete: %d", code)
	}
	// Deleting the desktop deletes its own secrets.
	if code, _ := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id, ""); code != 200 {
		t.Fatalf("delete desktop: %d", code)
	}
	if list, _ := e.store.ListSecrets(t.Context(), "alice", id, false); len(list) != 0 {
		t.Errorf("the deleted desktop's secrets remain: %+v", list)
	}
}
