//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/audit"
)

type auditPage struct {
	Entries    []*audit.Entry `json:"entries"`
	NextCursor string         `json:"next_cursor"`
}

// testAudit: a sequence of calls by two tokens (the owner's and an
// agent's desktop token it mints) is in the audit log, oldest last, each
// with its actor, object and outcome, including a refusal and a call
// after the agent's token was revoked; another owner sees none of it, the
// NDJSON export holds the same entries, and the web console's Audit page
// shows them.
func testAudit(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	var mint struct {
		Token string
		Info  struct{ ID, Owner string }
	}
	if code := s.call(token, "POST", "/api/v1/tokens", map[string]any{"name": "e2e audit agent", "desktop_id": d.ID}, &mint); code != 201 {
		t.Fatalf("mint a desktop token: %d", code)
	}
	agent := mint.Token
	base := "/api/v1/desktops/" + d.ID
	if code := s.call(agent, "POST", base+"/exec", map[string]any{"cmd": "true"}, nil); code != 200 {
		t.Errorf("the agent's exec: %d", code)
	}
	s.expectError(agent, "PATCH", base, map[string]any{"network": map[string]any{"deny_out": []string{"0.0.0.0/0"}}}, 403, "forbidden")
	if code := s.call(token, "DELETE", "/api/v1/tokens/"+mint.Info.ID, nil, nil); code != 204 {
		t.Fatalf("revoke the agent's token: %d", code)
	}
	s.expectError(agent, "POST", base+"/exec", map[string]any{"cmd": "true"}, 401, "unauthorized")

	owner := mint.Info.Owner
	// The writer inserts within 100 ms; the owner's view, oldest first.
	want := []struct {
		action, by string
		status     int
		code       string
	}{
		{"token.create", "owner", 201, ""},
		{"desktop.exec", "agent", 200, ""},
		{"desktop.update", "agent", 403, "forbidden"},
		{"token.revoke", "owner", 204, ""},
	}
	var got []*audit.Entry
	deadline := time.Now().Add(15 * time.Second)
	for {
		var page auditPage
		if code := s.call(token, "GET", "/api/v1/audit?limit=1000&since="+url.QueryEscape(since), nil, &page); code != 200 {
			t.Fatalf("GET /api/v1/audit: %d", code)
		}
		got = nil
		for i := len(page.Entries) - 1; i >= 0; i-- { // newest first on the wire
			if e := page.Entries[i]; e.DesktopID == d.ID || e.ObjectID == mint.Info.ID {
				got = append(got, e)
			}
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) != len(want) {
		t.Fatalf("the owner's audit log since %s about the desktop and the agent's token: %+v, want %d entries", since, got, len(want))
	}
	var ownerTokenID string
	for i, w := range want {
		e := got[i]
		if e.Action != w.action || e.Status != w.status || e.ErrorCode != w.code || e.Owner != owner || e.ClientIP == "" {
			t.Errorf("entry %d: %+v, want %s %d %q by %s's %s token", i, e, w.action, w.status, w.code, owner, w.by)
		}
		switch w.by {
		case "agent":
			if e.TokenID != mint.Info.ID || e.TokenName != "e2e audit agent" || e.DesktopID != d.ID {
				t.Errorf("entry %d (%s) names token %s %q desktop %s, want the agent's %s", i, e.Action, e.TokenID, e.TokenName, e.DesktopID, mint.Info.ID)
			}
		case "owner":
			if ownerTokenID == "" {
				ownerTokenID = e.TokenID
			}
			if e.TokenID == "" || e.TokenID == mint.Info.ID || e.TokenID != ownerTokenID || e.ObjectType != "token" || e.ObjectID != mint.Info.ID {
				t.Errorf("entry %d (%s) names token %s object %s %s, want the owner's token acting on %s", i, e.Action, e.TokenID, e.ObjectType, e.ObjectID, mint.Info.ID)
			}
		}
	}

	// The call after revocation failed to authenticate: an admin sees it,
	// with no owner, as unauthorized.
	var errs auditPage
	s.call(adminToken, "GET", "/api/v1/audit?outcome=error&action=desktop.exec&limit=1000&since="+url.QueryEscape(since), nil, &errs)
	unauth := false
	for _, e := range errs.Entries {
		unauth = unauth || e.Owner == "" && e.Status == 401 && e.ErrorCode == "unauthorized" && e.DesktopID == d.ID
	}
	if !unauth {
		t.Errorf("the revoked token's exec is not in the admin's view as unauthorized: %+v", errs.Entries)
	}

	// Another owner sees none of it; a desktop token reads no audit log.
	var carol struct{ Token string }
	if code := s.call(adminToken, "POST", "/api/v1/tokens", map[string]any{"owner": "carol-audit", "name": "carol"}, &carol); code != 201 {
		t.Fatalf("mint carol's token: %d", code)
	}
	var theirs auditPage
	s.call(carol.Token, "GET", "/api/v1/audit?desktop="+d.ID, nil, &theirs)
	if len(theirs.Entries) != 0 {
		t.Errorf("another owner reads %d entries about the desktop", len(theirs.Entries))
	}
	var agent2 struct{ Token string }
	s.call(token, "POST", "/api/v1/tokens", map[string]any{"name": "e2e audit reader", "desktop_id": d.ID, "ttl_seconds": 60}, &agent2)
	s.expectError(agent2.Token, "GET", "/api/v1/audit", nil, 403, "forbidden")

	// The export holds the same entries as the listing.
	q := "since=" + url.QueryEscape(since) + "&desktop=" + d.ID
	var listed auditPage
	s.call(token, "GET", "/api/v1/audit?limit=1000&"+q, nil, &listed)
	var raw []byte
	if code := s.call(token, "GET", "/api/v1/audit?format=ndjson&"+q, nil, &raw); code != 200 {
		t.Fatalf("export: %d %s", code, raw)
	}
	var exported []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		exported = append(exported, e.ID)
	}
	if len(exported) != len(listed.Entries) || len(exported) < 2 {
		t.Errorf("the export has %d entries, the listing %d", len(exported), len(listed.Entries))
	}
	for i := range min(len(exported), len(listed.Entries)) {
		if exported[i] != listed.Entries[i].ID {
			t.Errorf("export entry %d is %s, the listing's %s", i, exported[i], listed.Entries[i].ID)
			break
		}
	}

	// The web console's Audit page shows the refusal.
	shot := filepath.Join(os.TempDir(), "bureau-e2e-audit.png")
	var page struct {
		Rows    int
		Refusal bool
		Errors  []string
	}
	consoleScript(t, s, "audit.mjs", "the Audit page", &page, "DESKTOP="+d.ID, "SCREENSHOT="+shot)
	if page.Rows < 3 || !page.Refusal || len(page.Errors) > 0 {
		t.Errorf("the Audit page: %+v (screenshot %s)", page, shot)
	}
}
