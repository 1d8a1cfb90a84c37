package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/store"
	"github.com/coder/websocket"
)

// startAudit runs an audit log over st for the test's life.
func startAudit(t testing.TB, st *store.Store) *audit.Log {
	l := audit.New(st, audit.Config{}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// auditRows are the entries written so far, newest first.
func (e *env) auditRows(t *testing.T, f audit.Filter) []*audit.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.audit.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	f.Limit = 1000
	l, err := e.store.ListAudit(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (e *env) doHeaders(t *testing.T, token, method, path, body string, h map[string]string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header
}

func TestAuditRecordsStateChangingCalls(t *testing.T) {
	e := newEnvDeps(t, nil, func(d *Deps) { d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	_, tok := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"name":"ci-bot"}`)
	bot, botID := tok["token"].(string), tok["info"].(map[string]any)["id"].(string)
	id := runningDesktop(t, e, e.alice)
	via := map[string]string{"X-Forwarded-For": "198.51.100.9"}
	const secret = "hunter2-very-secret"
	if code, _, _ := e.doHeaders(t, bot, "POST", "/api/v1/desktops/"+id+"/stop?note="+secret, `{"force":false}`, via); code >= 400 {
		t.Fatalf("stop: %d", code)
	}
	// A failing call keeps its error code.
	if code, _, _ := e.doHeaders(t, bot, "POST", "/api/v1/desktops/nope/stop", "", via); code != 404 {
		t.Fatalf("stop a missing desktop: %d", code)
	}
	// A secret's value in a body never reaches the log.
	if code, _, _ := e.doHeaders(t, bot, "PUT", "/api/v1/secrets/API_KEY?x="+secret, `{"value":"`+secret+`"}`, via); code != 200 {
		t.Fatalf("put secret: %d", code)
	}
	e.do(t, bot, "GET", "/api/v1/desktops/"+id, "")
	rows := e.auditRows(t, audit.Filter{Actor: botID})
	if len(rows) != 3 {
		t.Fatalf("%d rows for the bot, want 3 (no GET): %+v", len(rows), rows)
	}
	put, del, stop := rows[0], rows[1], rows[2]
	if stop.Owner != "alice" || stop.SubjectOwner != "alice" || stop.TokenID != botID || stop.TokenName != "ci-bot" ||
		stop.ClientIP != "198.51.100.9" || stop.Route != "POST /api/v1/desktops/:id/stop" || stop.Action != "desktop.stop" ||
		stop.DesktopID != id || stop.ObjectType != "desktop" || stop.ObjectID != id || stop.Status != 202 || stop.ErrorCode != "" ||
		stop.Person != "" {
		t.Errorf("stop recorded as %+v", stop)
	}
	if del.Status != 404 || del.ErrorCode != "not_found" || del.Action != "desktop.stop" || del.ObjectType != "desktop" ||
		del.ObjectID != "nope" || del.DesktopID != "nope" || del.SubjectOwner != "" {
		t.Errorf("failed delete recorded as %+v", del)
	}
	if put.Action != "secret.set" || put.ObjectType != "secret" || put.ObjectID != "API_KEY" {
		t.Errorf("put secret recorded as %+v", put)
	}
	for _, r := range rows {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), bot) || strings.Contains(string(b), "force") {
			t.Errorf("a body, query or token reached the log: %s", b)
		}
	}
	// A create names what it made, though its path does not.
	made := e.auditRows(t, audit.Filter{Action: "desktop.create"})
	if len(made) != 1 || made[0].ObjectType != "desktop" || made[0].ObjectID != id || made[0].DesktopID != id {
		t.Errorf("the create recorded as %+v, want desktop %s", made, id)
	}
	// An admin acting on alice's desktop: alice sees it too, bob does not.
	e.do(t, e.admin, "POST", "/api/v1/desktops/"+id+"/start", "")
	adminRows := e.auditRows(t, audit.Filter{Owner: "root"})
	if len(adminRows) != 1 || adminRows[0].Owner != "root" || adminRows[0].SubjectOwner != "alice" {
		t.Fatalf("admin's call: %+v", adminRows)
	}
	pageOf := func(token, query string) (int, map[string]any) {
		t.Helper()
		return e.do(t, token, "GET", "/api/v1/audit"+query, "")
	}
	_, alice := pageOf(e.alice, "")
	if n := len(alice["entries"].([]any)); n != len(e.auditRows(t, audit.Filter{Visible: "alice"})) {
		t.Errorf("alice's page has %d entries", n)
	}
	if _, p := pageOf(e.alice, "?owner=root"); len(p["entries"].([]any)) != 1 {
		t.Errorf("alice sees the admin's call on her desktop: %v", p)
	}
	if _, p := pageOf(e.bob, "?desktop="+id); len(p["entries"].([]any)) != 0 {
		t.Errorf("bob sees alice's desktop's entries: %v", p)
	}
	e.do(t, e.bob, "POST", "/api/v1/tokens", `{"name":"bobs"}`)
	e.auditRows(t, audit.Filter{}) // written before it is read
	_, all := pageOf(e.admin, "")
	if len(all["entries"].([]any)) <= len(alice["entries"].([]any)) {
		t.Errorf("admin sees no more than alice")
	}
}

func TestAuditPagingFiltersAndExport(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	for range 5 {
		e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/reboot", "")
	}
	e.do(t, e.alice, "POST", "/api/v1/desktops/nope/stop", "")
	want := len(e.auditRows(t, audit.Filter{Visible: "alice"}))
	var ids []string
	cursor := ""
	for range 20 {
		q := "/api/v1/audit?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		code, p := e.do(t, e.alice, "GET", q, "")
		if code != 200 {
			t.Fatalf("page: %d %v", code, p)
		}
		for _, en := range p["entries"].([]any) {
			ids = append(ids, en.(map[string]any)["id"].(string))
		}
		if cursor = p["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if len(ids) != want {
		t.Errorf("paged %d entries, want %d", len(ids), want)
	}
	seen := map[string]bool{}
	for _, i := range ids {
		if seen[i] {
			t.Errorf("%s twice", i)
		}
		seen[i] = true
	}
	if _, p := e.do(t, e.alice, "GET", "/api/v1/audit?action=desktop.reboot&outcome=ok", ""); len(p["entries"].([]any)) != 5 {
		t.Errorf("reboots: %v", p)
	}
	if _, p := e.do(t, e.alice, "GET", "/api/v1/audit?outcome=error&desktop=nope", ""); len(p["entries"].([]any)) != 1 {
		t.Errorf("the failed stop: %v", p)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if _, p := e.do(t, e.alice, "GET", "/api/v1/audit?since="+future, ""); len(p["entries"].([]any)) != 0 {
		t.Errorf("since the future: %v", p)
	}
	for q, field := range map[string]string{"limit=0": "limit", "limit=1001": "limit", "since=yesterday": "since",
		"until=2025-13-01": "until", "outcome=maybe": "outcome", "cursor=zzz": "cursor", "action=DROP%20TABLE": "action",
		"format=xml": "format"} {
		if code, body := e.do(t, e.alice, "GET", "/api/v1/audit?"+q, ""); code != 422 || errField(body) != field {
			t.Errorf("%s: %d %v", q, code, body)
		}
	}
	// NDJSON: every matching row, by ?format= or Accept.
	for _, h := range []struct{ query, accept string }{{"?format=ndjson", ""}, {"", "application/x-ndjson"}} {
		code, data, hdr := e.doHeaders(t, e.alice, "GET", "/api/v1/audit"+h.query, "", map[string]string{"Accept": h.accept})
		if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" || !strings.Contains(hdr.Get("Content-Disposition"), "attachment") {
			t.Fatalf("export: %d %v", code, hdr)
		}
		n := 0
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			var en audit.Entry
			if err := json.Unmarshal(sc.Bytes(), &en); err != nil || en.ID == "" {
				t.Errorf("line %q: %v", sc.Text(), err)
			}
			n++
		}
		if n != want {
			t.Errorf("exported %d rows, want %d", n, want)
		}
	}
	// Desktop tokens read no audit log.
	_, tok := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"scope":"desktop","desktop_id":"`+id+`"}`)
	if code, _ := e.do(t, tok["token"].(string), "GET", "/api/v1/audit", ""); code != 403 {
		t.Errorf("desktop token: %d", code)
	}
}

func TestAuditRecordsUnauthenticatedCallsAtAFewASecond(t *testing.T) {
	e := newEnv(t)
	for range 30 {
		e.do(t, "bureau_guessed-token", "POST", "/api/v1/desktops/d1/stop", "")
	}
	e.do(t, "", "GET", "/api/v1/desktops", "") // a GET is not recorded
	rows := e.auditRows(t, audit.Filter{Outcome: audit.OutcomeError})
	if len(rows) < 1 || len(rows) > 2*maxUnauthenticatedPerSecond {
		t.Fatalf("%d unauthenticated calls recorded, want 1 to %d", len(rows), 2*maxUnauthenticatedPerSecond)
	}
	r := rows[0]
	if r.Owner != "" || r.Status != 401 || r.ErrorCode != "unauthorized" || r.ClientIP != "127.0.0.1" || r.Action != "desktop.stop" || r.DesktopID != "d1" {
		t.Errorf("recorded as %+v", r)
	}
}

func TestAuditRecordsConsoleSessions(t *testing.T) {
	e := newEnv(t)
	vnc := newFakeVNC(t)
	e.desktops.vnc = vnc.dial
	id := runningDesktop(t, e, e.alice)
	code, link := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/console", `{"view_only":true,"name":"Dana"}`)
	if code != 201 {
		t.Fatalf("console link: %d %v", code, link)
	}
	secret := link["token"].(string)
	ws := rfbClient(t, e, id, secret)
	ws.Close(websocket.StatusNormalClosure, "bye")
	// The console page's own calls are recorded with the link's name.
	e.do(t, "", "PUT", "/api/v1/desktops/"+id+"/console/clipboard?token="+secret, `{"text":"copied"}`)
	var s *audit.Entry
	waitFor(t, "the console session's entry", func() bool {
		l := e.auditRows(t, audit.Filter{Action: audit.ConsoleSession})
		if len(l) > 0 {
			s = l[0]
		}
		return s != nil
	})
	if s.Owner != "alice" || s.TokenID != link["id"] || s.Person != "Dana" || s.DesktopID != id || s.ClientIP != "127.0.0.1" ||
		s.Route != "GET /api/v1/desktops/:id/vnc" || !strings.Contains(s.Detail, "view_only=true") || !strings.Contains(s.Detail, "ended=") {
		t.Errorf("console session recorded as %+v", s)
	}
	clip := e.auditRows(t, audit.Filter{Action: "console.clipboard"})
	if len(clip) != 1 || clip[0].Person != "Dana" || clip[0].Owner != "alice" {
		t.Errorf("console clipboard call: %+v", clip)
	}
	for _, r := range e.auditRows(t, audit.Filter{}) {
		if b, _ := json.Marshal(r); strings.Contains(string(b), secret) || strings.Contains(string(b), "copied") {
			t.Errorf("a console secret or clipboard text reached the log: %s", b)
		}
	}
}

func TestAuditOffAnswers503(t *testing.T) {
	e := newEnvDeps(t, nil, func(d *Deps) { d.Audit = nil })
	if code, body := e.do(t, e.alice, "GET", "/api/v1/audit", ""); code != 503 || errCode(body) != "unavailable" {
		t.Errorf("no audit log: %d %v", code, body)
	}
}
