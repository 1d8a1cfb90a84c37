package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/audit"
)

func TestAuditTableAndPaging(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	first := []*audit.Entry{
		{ID: "au_2", At: at.Add(time.Minute), Owner: "alice", TokenID: "tok_1", TokenName: "ci", ClientIP: "198.51.100.9",
			Action: "desktop.stop", ObjectType: "desktop", ObjectID: "d1", DesktopID: "d1", Status: 202},
		{ID: "au_1", At: at, ClientIP: "203.0.113.5", Action: "desktop.exec", ObjectType: "desktop", ObjectID: "d1", DesktopID: "d1",
			Status: 401, ErrorCode: "unauthorized"},
	}
	second := []*audit.Entry{{ID: "au_0", At: at.Add(-time.Minute), Owner: "alice", TokenID: "con_1", Person: "Dana", ClientIP: "192.0.2.1",
		Action: "console.session", ObjectType: "console", ObjectID: "con_1", DesktopID: "d1", Status: 101}}
	f.routes["GET /api/v1/audit"] = func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("format") == "ndjson":
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Write([]byte(`{"id":"au_2"}` + "\n" + `{"id":"au_1"}` + "\n"))
		case r.URL.Query().Get("cursor") == "":
			writeJSON(w, 200, audit.Page{Entries: first, NextCursor: "c1"})
		default:
			writeJSON(w, 200, audit.Page{Entries: second})
		}
	}
	out, errw, err := f.run("audit", "--desktop", "d1", "--action", "desktop.", "--outcome", "error", "--limit", "2")
	if err != nil {
		t.Fatal(err)
	}
	want := `TIME                 WHO                  CLIENT        ACTION        OBJECT  OUTCOME
2025-03-04 05:07:07  alice/ci             198.51.100.9  desktop.stop  d1      ok 202
2025-03-04 05:06:07  (not authenticated)  203.0.113.5   desktop.exec  d1      error 401 unauthorized
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(errw, "there are more") {
		t.Errorf("stderr %q", errw)
	}
	if got := f.requests(); got[len(got)-1] != "GET /api/v1/audit?action=desktop.&desktop=d1&limit=2&outcome=error" {
		t.Errorf("request %q", got[len(got)-1])
	}
	out, _, err = f.run("audit", "--all", "--since", "2h")
	if err != nil || !strings.Contains(out, "Dana (alice's console link)") || !strings.Contains(out, "console con_1 of d1") ||
		strings.Count(out, "\n") != 4 {
		t.Errorf("--all: %v\n%s", err, out)
	}
	reqs := f.requests()
	if !strings.Contains(reqs[len(reqs)-2], "since=") || !strings.Contains(reqs[len(reqs)-1], "cursor=c1") {
		t.Errorf("--all requests %q", reqs)
	}
	out, _, err = f.run("audit", "--ndjson")
	if err != nil || out != `{"id":"au_2"}`+"\n"+`{"id":"au_1"}`+"\n" {
		t.Errorf("--ndjson: %v %q", err, out)
	}
	out, _, err = f.run("audit", "--json")
	if err != nil || !strings.Contains(out, `"next_cursor": "c1"`) {
		t.Errorf("--json: %v %q", err, out)
	}
	if _, _, err := f.run("audit", "--since", "yesterday"); err == nil || !strings.Contains(err.Error(), "--since") {
		t.Errorf("bad --since: %v", err)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2h":                   now.Add(-2 * time.Hour),
		"7d":                   now.AddDate(0, 0, -7),
		"2025-03-01T00:00:00Z": time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
}
