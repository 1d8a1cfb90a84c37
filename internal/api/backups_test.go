package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
)

// backupEnv is an env with a directory target (nas), a desktop of alice's
// (mine) with a complete backup (done) and a running one, a second desktop
// of alice's and one of bob's, and desktop tokens.
type backupEnv struct {
	*env
	mine, other, bobs string
	done, running     string
	// agent and computerOnly are tokens of mine; otherAgent of other.
	agent, computerOnly, otherAgent string
}

func newBackupEnv(t *testing.T) *backupEnv {
	t.Helper()
	e := &backupEnv{env: newEnv(t)}
	e.mine = addDesktop(e.env, "alice", "mine")
	e.other = addDesktop(e.env, "alice", "other")
	e.bobs = addDesktop(e.env, "bob", "bobs")
	if _, err := e.backups.CreateTarget(context.Background(), targetReq("nas")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := e.backups.Start(ctx, e.mine, startReq(""))
	if err != nil {
		t.Fatal(err)
	}
	e.done = b.ID
	e.backups.finish(b.ID, "")
	b, _ = e.backups.Start(ctx, e.mine, startReq(""))
	e.running = b.ID
	b, _ = e.backups.Start(ctx, e.bobs, startReq(""))
	e.backups.finish(b.ID, "")
	tokens := auth.New(e.store)
	scoped := func(id string, computerOnly bool) string {
		s, _, err := tokens.Create(ctx, auth.CreateRequest{Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: id, ComputerOnly: computerOnly})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e.agent, e.computerOnly, e.otherAgent = scoped(e.mine, false), scoped(e.mine, true), scoped(e.other, false)
	return e
}

// addDesktop puts a running desktop in the fake directly (past the fake's
// quota, which counts every owner's desktops).
func addDesktop(e *env, owner, name string) string {
	f := e.desktops
	f.mu.Lock()
	defer f.mu.Unlock()
	id := "d" + itoa(len(f.desktops)+1)
	f.desktops[id] = &desktop.Desktop{ID: id, Owner: owner, Name: name, State: desktop.StateRunning,
		Spec: desktop.Spec{Image: "debian", VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 10}}
	return id
}

// TestBackupsAuthz: who may do what with backups. Targets are admins';
// another owner's desktop or backup is 404; a desktop token may back up its
// own desktop, list its backups and read its backup schedule, nothing else
// (no listing across desktops, no restore: that makes a desktop, no
// delete, no changing the schedule: its owner's), and a computer-only
// token not even that.
func TestBackupsAuthz(t *testing.T) {
	e := newBackupEnv(t)
	mine, done := "/api/v1/desktops/"+e.mine, "/api/v1/backups/"+e.done
	callers := []struct{ name, tok string }{ // the admin last: its calls change things
		{"another owner", e.bob}, {"another desktop's token", e.otherAgent}, {"computer-only token", e.computerOnly},
		{"desktop token", e.agent}, {"owner", e.alice}, {"admin", e.admin},
	}
	// want: status by caller; tokens of a desktop are 403 outside it.
	type want map[string]int
	adminOnly := func(ok int) want {
		return want{"another owner": 403, "another desktop's token": 403, "computer-only token": 403, "desktop token": 403, "owner": 403, "admin": ok}
	}
	ownedDesktop := func(ok int) want {
		return want{"another owner": 404, "another desktop's token": 404, "computer-only token": 403, "desktop token": ok, "owner": ok, "admin": ok}
	}
	ownedBackup := func(ok int) want {
		return want{"another owner": 404, "another desktop's token": 403, "computer-only token": 403, "desktop token": 403, "owner": ok, "admin": ok}
	}
	ownerOfDesktop := func(ok int) want { // its policies: a desktop token may read them, not change them
		return want{"another owner": 404, "another desktop's token": 404, "computer-only token": 403, "desktop token": 403, "owner": ok, "admin": ok}
	}
	for _, r := range []struct {
		method, path, body string
		want               want
	}{
		{"GET", "/api/v1/backup-targets", "", adminOnly(200)},
		{"POST", "/api/v1/backup-targets", `{"name":"second","kind":"dir","dir":"/srv/b2"}`, adminOnly(201)},
		{"GET", "/api/v1/backup-targets/nas", "", adminOnly(200)},
		{"DELETE", "/api/v1/backup-targets/second", "", adminOnly(204)},
		{"POST", mine + "/backups", `{"target":"nas"}`, ownedDesktop(202)},
		{"GET", mine + "/backups", "", ownedDesktop(200)},
		{"GET", "/api/v1/backups", "", want{"another owner": 200, "another desktop's token": 403, "computer-only token": 403,
			"desktop token": 403, "owner": 200, "admin": 200}},
		{"GET", done, "", ownedBackup(200)},
		{"POST", done + "/verify", "", ownedBackup(200)},
		{"POST", done + "/restore", `{"name":"back"}`, ownedBackup(202)},
		{"PUT", mine + "/backup-schedule", `{"target":"nas","every_minutes":30}`, ownerOfDesktop(200)},
		{"GET", mine + "/backup-schedule", "", ownedDesktop(200)},
		{"DELETE", mine + "/backup-schedule", "", ownerOfDesktop(204)},
	} {
		for _, c := range callers {
			code, body := e.do(t, c.tok, r.method, r.path, r.body)
			if code != r.want[c.name] {
				t.Errorf("%s %s as %s: %d %v, want %d", r.method, r.path, c.name, code, body, r.want[c.name])
			}
		}
	}
	if code, body := e.do(t, e.alice, "GET", mine+"/backup-schedule", ""); code != 404 || errCode(body) != "not_found" {
		t.Errorf("the schedule once deleted: %d %v", code, body)
	}
	if got := e.backups.unscheduled; len(got) != 2 || !strings.HasPrefix(got[0], e.mine+" alice/") || !strings.HasPrefix(got[1], e.mine+" root/") {
		t.Errorf("unscheduled %v", got)
	}
	// Deleting: each caller tries a complete backup of alice's of its own
	// (the owner's and the admin's delete goes through).
	for _, c := range callers {
		b, err := e.backups.Start(context.Background(), e.mine, startReq("nas"))
		if err != nil {
			t.Fatal(err)
		}
		e.backups.finish(b.ID, "")
		if code, body := e.do(t, c.tok, "DELETE", "/api/v1/backups/"+b.ID, ""); code != ownedBackup(204)[c.name] {
			t.Errorf("DELETE a backup as %s: %d %v, want %d", c.name, code, body, ownedBackup(204)[c.name])
		}
	}
	if got := e.backups.deleted; len(got) != 2 || !strings.Contains(got[0], " alice/") || !strings.Contains(got[1], " root/") {
		t.Errorf("deleted %v", got)
	}
	// What each saw of the lists.
	count := func(tok, path string) int {
		_, body := e.do(t, tok, "GET", path, "")
		l, _ := body["backups"].([]any)
		return len(l)
	}
	if n := count(e.bob, "/api/v1/backups"); n != 1 {
		t.Errorf("bob lists %d backups, want his 1", n)
	}
	if n, all := count(e.alice, "/api/v1/backups"), count(e.admin, "/api/v1/backups"); n != all-1 || n < 3 {
		t.Errorf("alice lists %d backups, the admin %d", n, all)
	}
	if n := count(e.agent, mine+"/backups"); n < 3 {
		t.Errorf("the desktop token lists %d of its desktop's backups", n)
	}
}

// TestBackupsOutliveTheirDesktop: once the desktop is deleted, its backups
// are still the owner's, under /api/v1/backups, and restore.
func TestBackupsOutliveTheirDesktop(t *testing.T) {
	e := newBackupEnv(t)
	e.desktops.mu.Lock()
	gone := *e.desktops.desktops[e.mine]
	gone.DeletedAt, gone.State = new(gone.CreatedAt), desktop.StateDeleted
	e.desktops.desktops[e.mine] = &gone
	e.desktops.mu.Unlock()

	if code, _ := e.do(t, e.alice, "GET", "/api/v1/desktops/"+e.mine+"/backups", ""); code != 404 {
		t.Errorf("the deleted desktop's own list: %d", code)
	}
	code, body := e.do(t, e.alice, "GET", "/api/v1/backups?desktop="+e.mine+"&target=nas", "")
	if l, _ := body["backups"].([]any); code != 200 || len(l) != 2 {
		t.Fatalf("backups of the deleted desktop: %d %v", code, body)
	}
	if f := e.backups.lastFilter; f.Owner != "alice" || f.DesktopID != e.mine || f.TargetID != "nas" {
		t.Errorf("filter %+v", f)
	}
	code, d := e.do(t, e.alice, "POST", "/api/v1/backups/"+e.done+"/restore", `{"name":"mine-again"}`)
	if code != 202 || d["owner"] != "alice" || d["name"] != "mine-again" || d["state"] != "creating" {
		t.Fatalf("restore: %d %v", code, d)
	}
	if r := e.backups.lastRestore; r.Owner != "alice" || r.Unlimited || !strings.HasPrefix(r.Actor, "alice/") {
		t.Errorf("an owner's restore asked %+v", r)
	}
	e.do(t, e.admin, "POST", "/api/v1/backups/"+e.done+"/restore", `{"name":"for-alice"}`)
	if r := e.backups.lastRestore; r.Owner != "alice" || !r.Unlimited {
		t.Errorf("an admin's restore asked %+v", r)
	}
}

// TestBackupTargetSecretNeverShown: the secret key goes in and never comes
// out, whatever the service hands back.
func TestBackupTargetSecretNeverShown(t *testing.T) {
	e := newEnv(t)
	code, body := e.do(t, e.admin, "POST", "/api/v1/backup-targets",
		`{"name":"offsite","kind":"s3","s3":{"endpoint":"nas.lan:9000","bucket":"bk","region":"eu","access_key":"AKID","secret_key":"hunter2","insecure":true}}`)
	if code != 201 {
		t.Fatalf("create: %d %v", code, body)
	}
	if got := e.backups.lastTarget; got.S3.SecretKey != "hunter2" || got.S3.AccessKey != "AKID" || !got.S3.Insecure || got.Kind != "s3" {
		t.Errorf("the service was asked %+v", got)
	}
	for _, path := range []string{"/api/v1/backup-targets", "/api/v1/backup-targets/offsite", "/api/v1/backup-targets/" + body["id"].(string)} {
		_, got := e.do(t, e.admin, "GET", path, "")
		if s := fmtJSON(got); strings.Contains(s, "hunter2") || strings.Contains(s, "secret") || !strings.Contains(s, "AKID") {
			t.Errorf("GET %s: %s", path, s)
		}
	}
	if s := fmtJSON(body); strings.Contains(s, "hunter2") || strings.Contains(s, "secret") {
		t.Errorf("created: %s", s)
	}
	// Bad input: a name, a kind, a relative directory, a missing key.
	for body, field := range map[string]string{
		`{"name":"Bad Name","kind":"dir","dir":"/x"}`: "name",
		`{"name":"x","kind":"nfs"}`:                   "kind",
		`{"name":"x","kind":"dir","dir":"relative"}`:  "dir",
		`{"name":"x","kind":"s3","s3":{"endpoint":"h:1","bucket":"b","access_key":"a","secret_key":""}}`: "s3.access_key",
	} {
		if code, got := e.do(t, e.admin, "POST", "/api/v1/backup-targets", body); code != 422 || errField(got) != field {
			t.Errorf("%s: %d %v, want 422 on %s", body, code, got, field)
		}
	}
	if code, got := e.do(t, e.admin, "POST", "/api/v1/backup-targets", `{"name":"x","kind":"dir","dir":"/x","secret":"y"}`); code != 400 {
		t.Errorf("an unknown field: %d %v", code, got)
	}
}

// TestBackupScheduleDefaultsAndBadInput: what a PUT leaves out takes its
// default (a 0 given stays 0), and what is out of range is 422 naming the
// field.
func TestBackupScheduleDefaultsAndBadInput(t *testing.T) {
	e := newBackupEnv(t)
	path := "/api/v1/desktops/" + e.mine + "/backup-schedule"
	code, sc := e.do(t, e.alice, "PUT", path, "")
	if code != 200 {
		t.Fatalf("PUT without a body: %d %v", code, sc)
	}
	next, _ := time.Parse(time.RFC3339, sc["next_at"].(string))
	if sc["desktop_id"] != e.mine || sc["target_id"] != e.backups.targets[0].ID || sc["every_minutes"] != 60.0 ||
		sc["keep_last"] != 0.0 || sc["keep_hourly"] != 24.0 || sc["keep_daily"] != 7.0 || sc["keep_weekly"] != 4.0 ||
		!strings.HasPrefix(sc["updated_by"].(string), "alice/") || time.Until(next) < 59*time.Minute {
		t.Errorf("the defaults: %v", sc)
	}
	if r := e.backups.lastSched; r.Target != "" || r.EveryMinutes != nil || r.KeepLast != nil || r.KeepHourly != nil {
		t.Errorf("the service was asked %+v", r)
	}
	code, sc = e.do(t, e.alice, "PUT", path, `{"target":"nas","every_minutes":15,"keep_hourly":0,"keep_weekly":52}`)
	if code != 200 || sc["every_minutes"] != 15.0 || sc["keep_hourly"] != 0.0 || sc["keep_daily"] != 7.0 || sc["keep_weekly"] != 52.0 {
		t.Errorf("set: %d %v", code, sc)
	}
	if r := e.backups.lastSched; r.Target != "nas" || r.KeepHourly == nil || *r.KeepHourly != 0 || r.KeepDaily != nil {
		t.Errorf("the service was asked %+v", r)
	}
	if code, got := e.do(t, e.agent, "GET", path, ""); code != 200 || got["every_minutes"] != 15.0 {
		t.Errorf("read with the desktop's token: %d %v", code, got)
	}
	for body, field := range map[string]string{
		`{"every_minutes":0}`:     "every_minutes",
		`{"every_minutes":10081}`: "every_minutes",
		`{"every_minutes":-5}`:    "every_minutes",
		`{"keep_last":-1}`:        "keep_last",
		`{"keep_hourly":1001}`:    "keep_hourly",
		`{"keep_daily":-1}`:       "keep_daily",
		`{"keep_weekly":5000}`:    "keep_weekly",
		`{"target":"nope"}`:       "target",
	} {
		if code, got := e.do(t, e.alice, "PUT", path, body); code != 422 || errField(got) != field {
			t.Errorf("%s: %d %v, want 422 on %s", body, code, got, field)
		}
	}
	for _, body := range []string{`{"every":"1h"}`, `{"every_minutes":"60"}`, `{"every_minutes":1.5}`, `[]`} {
		if code, got := e.do(t, e.alice, "PUT", path, body); code != 400 {
			t.Errorf("%s: %d %v, want 400", body, code, got)
		}
	}
	if _, sc = e.do(t, e.alice, "GET", path, ""); sc["every_minutes"] != 15.0 {
		t.Errorf("a refused PUT changed the schedule: %v", sc)
	}
}

// TestBackupsOff: without a backup service every route answers 503 to
// those allowed to ask, and the others as ever.
func TestBackupsOff(t *testing.T) {
	e := newEnv(t)
	id := addDesktop(e, "alice", "mine")
	off := httptest.NewServer(withSpecCheck(t, New(Deps{Desktops: e.desktops, Tokens: auth.New(e.store), Log: slog.New(slog.DiscardHandler)})))
	t.Cleanup(off.Close)
	e2 := &env{srv: off}
	for _, c := range []struct {
		tok, method, path string
		want              int
	}{
		{e.admin, "GET", "/api/v1/backup-targets", 503},
		{e.alice, "GET", "/api/v1/backup-targets", 403},
		{e.alice, "GET", "/api/v1/backups", 503},
		{e.alice, "GET", "/api/v1/backups/b1", 503},
		{e.alice, "POST", "/api/v1/desktops/" + id + "/backups", 503},
		{e.bob, "POST", "/api/v1/desktops/" + id + "/backups", 404},
		{e.alice, "GET", "/api/v1/desktops/" + id + "/backups", 503},
		{e.alice, "DELETE", "/api/v1/backups/b1", 503},
		{e.alice, "GET", "/api/v1/desktops/" + id + "/backup-schedule", 503},
		{e.alice, "PUT", "/api/v1/desktops/" + id + "/backup-schedule", 503},
		{e.alice, "DELETE", "/api/v1/desktops/" + id + "/backup-schedule", 503},
		{e.bob, "PUT", "/api/v1/desktops/" + id + "/backup-schedule", 404},
	} {
		if code, body := e2.do(t, c.tok, c.method, c.path, ""); code != c.want || code == 503 && errCode(body) != "unavailable" {
			t.Errorf("%s %s: %d %v, want %d", c.method, c.path, code, body, c.want)
		}
	}
}

// TestBackupsMatchTheSpec drives every backup route through the spec
// checker, requests included.
func TestBackupsMatchTheSpec(t *testing.T) {
	e := newBackupEnv(t)
	e.srv.Config.Handler.(*specChecker).requests = true
	mine := "/api/v1/desktops/" + e.mine
	e.backups.finish(e.running, "read the data disk at its mark: input/output error")
	// alice's heavy requests stay under the owner's 10 (the admin makes the refused ones).
	for _, c := range []specCall{
		{token: e.admin, method: "GET", path: "/api/v1/backup-targets", want: 200},
		{token: e.admin, method: "POST", path: "/api/v1/backup-targets", want: 201,
			body: `{"name":"offsite","kind":"s3","s3":{"endpoint":"nas.lan:9000","bucket":"bk","prefix":"bureau/","region":"eu-central-1","access_key":"AKID","secret_key":"s","insecure":true}}`},
		{token: e.admin, method: "POST", path: "/api/v1/backup-targets", body: `{"name":"offsite","kind":"dir","dir":"/srv/x"}`, want: 409},
		{token: e.admin, method: "POST", path: "/api/v1/backup-targets", body: `{"name":"x","kind":"dir"}`, want: 422},
		{token: e.admin, method: "POST", path: "/api/v1/backup-targets", body: `{"name":"x","kind":"dir","dir":"/x","s3":{"secret":"y"}}`, want: 400},
		{token: e.alice, method: "POST", path: "/api/v1/backup-targets", body: `{"name":"x","kind":"dir","dir":"/x"}`, want: 403},
		{token: e.admin, method: "GET", path: "/api/v1/backup-targets", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/backup-targets/offsite", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/backup-targets/nas", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/backup-targets/nope", want: 404},
		{token: e.alice, method: "POST", path: mine + "/backups", want: 422}, // two targets: name one
		{token: e.admin, method: "POST", path: mine + "/backups", body: `{"target":"nope"}`, want: 422},
		{token: e.alice, method: "POST", path: mine + "/backups", body: `{"target":"nas","full":true}`, want: 400},
		{token: e.alice, method: "GET", path: mine + "/backups", want: 200},
		{token: e.bob, method: "GET", path: mine + "/backups", want: 404},
		{token: e.alice, method: "GET", path: "/api/v1/backups", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/backups?desktop=" + e.mine + "&target=nas", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/backups?target=nope", want: 404},
		{token: e.alice, method: "GET", path: "/api/v1/backups/" + e.done, want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/backups/" + e.running, want: 200}, // failed: its error
		{token: e.bob, method: "GET", path: "/api/v1/backups/" + e.done, want: 404},
		{token: e.alice, method: "GET", path: "/api/v1/backups/nope", want: 404},
		{token: e.alice, method: "POST", path: "/api/v1/backups/" + e.done + "/verify", want: 200},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.running + "/verify", want: 409},
		{token: e.alice, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"name":"restored"}`, want: 202},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{}`, want: 422},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"desktop":"x","replace_data_disk":true}`, want: 404},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"name":"x","desktop":"` + e.other + `"}`, want: 422},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"name":"x","replace_data_disk":true}`, want: 422},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"desktop":"` + e.bobs + `","replace_data_disk":true}`, want: 409},
		{token: e.bob, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"desktop":"` + e.bobs + `","replace_data_disk":true}`, want: 404},
		{token: e.alice, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"desktop":"` + e.other + `"}`, want: 422},
		{token: e.alice, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"desktop":"` + e.other + `","replace_data_disk":true}`, want: 409}, // running
		{token: e.agent, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"desktop":"` + e.mine + `","replace_data_disk":true}`, want: 403},
		{token: e.admin, method: "POST", path: "/api/v1/backups/" + e.running + "/restore", body: `{"name":"r2"}`, want: 409},
		{token: e.agent, method: "POST", path: "/api/v1/backups/" + e.done + "/restore", body: `{"name":"r3"}`, want: 403},
		{token: e.alice, method: "GET", path: mine + "/backup-schedule", want: 404},
		{token: e.alice, method: "PUT", path: mine + "/backup-schedule", want: 422}, // two targets: name one
		{token: e.alice, method: "PUT", path: mine + "/backup-schedule", body: `{"target":"offsite","every_minutes":0}`, want: 422},
		{token: e.alice, method: "PUT", path: mine + "/backup-schedule", body: `{"target":"offsite","every":"1h"}`, want: 400},
		{token: e.bob, method: "PUT", path: mine + "/backup-schedule", body: `{"target":"offsite"}`, want: 404},
		{token: e.agent, method: "PUT", path: mine + "/backup-schedule", body: `{"target":"offsite"}`, want: 403},
		{token: e.alice, method: "PUT", path: mine + "/backup-schedule", want: 200,
			body: `{"target":"offsite","every_minutes":240,"keep_last":2,"keep_hourly":0,"keep_daily":14,"keep_weekly":8}`},
		{token: e.admin, method: "PUT", path: mine + "/backup-schedule", body: `{"target":"nas"}`, want: 200},
		{token: e.agent, method: "GET", path: mine + "/backup-schedule", want: 200},
		{token: e.alice, method: "DELETE", path: mine + "/backup-schedule", want: 204},
		{token: e.alice, method: "DELETE", path: mine + "/backup-schedule", want: 204}, // none: no error
		{token: e.alice, method: "GET", path: mine + "/backup-schedule", want: 404},
		{token: e.admin, method: "DELETE", path: "/api/v1/backup-targets/offsite", want: 204},
		{token: e.admin, method: "DELETE", path: "/api/v1/backup-targets/offsite", want: 404},
	} {
		e.call(t, c)
	}
	_, b := e.call(t, specCall{token: e.alice, method: "POST", path: mine + "/backups", body: `{"target":"nas"}`, want: 202})
	if b["state"] != "running" || b["owner"] != "alice" || b["desktop_id"] != e.mine || b["mark"] != nil {
		t.Errorf("started: %v", b)
	}
	e.call(t, specCall{token: e.admin, method: "DELETE", path: "/api/v1/backup-targets/nas", want: 409})          // a backup to it runs
	e.call(t, specCall{token: e.admin, method: "DELETE", path: "/api/v1/backups/" + b["id"].(string), want: 409}) // it runs
	e.call(t, specCall{token: e.bob, method: "DELETE", path: "/api/v1/backups/" + e.running, want: 404})
	e.call(t, specCall{token: e.agent, method: "DELETE", path: "/api/v1/backups/" + e.running, want: 403})
	e.call(t, specCall{token: e.alice, method: "DELETE", path: "/api/v1/backups/" + e.running, want: 204}) // failed: its record goes
	e.call(t, specCall{token: e.alice, method: "DELETE", path: "/api/v1/backups/" + e.running, want: 404})
	_, check := e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/backups/" + e.done + "/verify", want: 200})
	if check["ok"] != true || check["took_ms"] != 1500.0 || check["missing"] == nil || check["corrupt"] == nil {
		t.Errorf("verify: %v", check)
	}
	// Heavy requests run out like creates (10 at once for an owner).
	for i := 0; ; i++ {
		code, _ := e.doF(t, e.bob, "POST", "/api/v1/backups/"+e.done+"/verify", "")
		if code == 429 || i > 20 {
			break
		}
	}
	if f := e.srv.Config.Handler.(*specChecker).Failures(); len(f) > 0 {
		t.Fatalf("%d responses do not match the spec:\n%s", len(f), strings.Join(f, "\n"))
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func targetReq(name string) manager.TargetRequest {
	return manager.TargetRequest{Name: name, Kind: desktop.TargetDir, Dir: "/srv/backups/" + name, Actor: "root/tok"}
}

func startReq(target string) manager.BackupRequest {
	return manager.BackupRequest{Target: target, Actor: "alice/tok"}
}

// TestRestoreOntoADesktop: with desktop and replace_data_disk, a backup is
// written over the owner's stopped desktop's data disk: 202 with the
// desktop reverting, and the service asked for exactly that.
func TestRestoreOntoADesktop(t *testing.T) {
	e := newBackupEnv(t)
	e.desktops.mu.Lock()
	e.desktops.desktops[e.other].State = desktop.StateStopped
	e.desktops.mu.Unlock()
	code, d := e.do(t, e.alice, "POST", "/api/v1/backups/"+e.done+"/restore", `{"desktop":"`+e.other+`","replace_data_disk":true}`)
	if code != 202 || d["id"] != e.other || d["state"] != "reverting" || d["operation"] != "restore_data" {
		t.Fatalf("restore onto a stopped desktop: %d %v", code, d)
	}
	if r := e.backups.lastOnto; r.Desktop != e.other || !r.ReplaceDataDisk || r.Unlimited || !strings.HasPrefix(r.Actor, "alice/") {
		t.Errorf("the owner's restore asked %+v", r)
	}
}
