package api

import (
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// Resizes and snapshots leave the quota to the manager, which checks it
// atomically as it records them: the API only says whether the caller is an
// admin (no quota), and a refusal is a 403 naming the limit.
func TestResizeAndSnapshotQuotaIsTheManagers(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	base := "/api/v1/desktops/" + d["id"].(string)
	for _, c := range []struct {
		token     string
		unlimited bool
	}{{e.alice, false}, {e.admin, true}} {
		if code, _ := e.do(t, c.token, "POST", base+"/data-disk", `{"size_gib":40}`); code != 200 ||
			e.desktops.lastResize.SizeGiB != 40 || e.desktops.lastResize.Unlimited != c.unlimited {
			t.Errorf("resize: %d %+v, want unlimited %t", code, e.desktops.lastResize, c.unlimited)
		}
		if code, _ := e.do(t, c.token, "POST", base+"/snapshots", `{"name":"s"}`); code != 201 || e.desktops.lastSnapshot.Unlimited != c.unlimited {
			t.Errorf("snapshot: %d %+v, want unlimited %t", code, e.desktops.lastSnapshot, c.unlimited)
		}
	}
	e.desktops.err = &desktop.QuotaError{Limit: "snapshots", Max: 3, Would: 4, Plan: "custom"}
	code, body := e.do(t, e.alice, "POST", base+"/snapshots", `{"name":"t"}`)
	if field, _ := body["error"].(map[string]any)["field"].(string); code != 403 || errCode(body) != "quota_exceeded" || field != "snapshots" {
		t.Errorf("a snapshot past the snapshot quota: %d %v", code, body)
	}
	e.desktops.err = nil
	if code, r := e.do(t, e.alice, "GET", "/api/v1/quota", ""); code != 200 || r["quota"].(map[string]any)["max_snapshots"] != 10.0 {
		t.Errorf("the free plan's snapshot limit: %d %v", code, r)
	}
}
