package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// schedule is a backup schedule as the API shows it, with fields on top.
func schedule(fields map[string]any) map[string]any {
	s := map[string]any{"desktop_id": "d1", "target_id": "t1", "every_minutes": 60, "keep_last": 0, "keep_hourly": 24,
		"keep_daily": 7, "keep_weekly": 4, "next_at": backupBegan.Add(time.Hour), "updated_at": backupBegan, "updated_by": "alice/tok_1"}
	for k, v := range fields {
		s[k] = v
	}
	return s
}

// scheduleRoutes answers GET with the schedule kept (404 when none), PUT
// by keeping what it was sent (on top of the defaults, as the server does)
// and DELETE by dropping it; it returns the PUT bodies.
func scheduleRoutes(f *fakeBureau, kept map[string]any) *[]string {
	var mu sync.Mutex
	var sent []string
	path := "/api/v1/desktops/d1/backup-schedule"
	f.routes["GET "+path] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if kept == nil {
			writeJSON(w, 404, map[string]any{"error": map[string]string{"code": "not_found", "message": "desktop d1 has no backup schedule: not found"}})
			return
		}
		writeJSON(w, 200, kept)
	}
	f.routes["PUT "+path] = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		b, _ := json.Marshal(body)
		sent = append(sent, string(b))
		kept = schedule(body)
		if t, ok := body["target"]; ok {
			kept["target_id"] = t
			delete(kept, "target")
		}
		writeJSON(w, 200, kept)
	}
	f.routes["DELETE "+path] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		kept = nil
		w.WriteHeader(204)
	}
	return &sent
}

// TestBackupSchedule: a desktop without a schedule starts from the
// defaults; then the flags given change it, the rest stay.
func TestBackupSchedule(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	sent := scheduleRoutes(f, nil)
	out, _, err := f.run("backup", "schedule", "agent-1", "--every", "4h", "--keep-daily", "14")
	want := `backups of agent-1: every 4h to target t1; next at 2025-03-04 06:06:07
kept: the newest, the newest of each of the last 24 hours, 14 days and 4 weeks
set by alice/tok_1 at 2025-03-04 05:06:07
`
	if err != nil || out != want {
		t.Errorf("got\n%s\nwant\n%s%v", out, want, err)
	}
	out, _, err = f.run("backup", "schedule", "agent-1", "--target", "nas", "--every-minutes", "90", "--keep-last", "3", "--keep-hourly", "0", "--keep-weekly", "1")
	if err != nil || !strings.HasPrefix(out, "backups of agent-1: every 1h30m to target nas;") ||
		!strings.Contains(out, "kept: the newest, the last 3, the newest of each of the last 14 days and 1 week\n") {
		t.Errorf("%s %v", out, err)
	}
	if _, _, err := f.run("backup", "schedule", "d1"); err != nil { // no flags: the same again
		t.Fatal(err)
	}
	want = strings.Join([]string{
		`{"every_minutes":240,"keep_daily":14}`,
		`{"every_minutes":90,"keep_daily":14,"keep_hourly":0,"keep_last":3,"keep_weekly":1,"target":"nas"}`,
		`{"every_minutes":90,"keep_daily":14,"keep_hourly":0,"keep_last":3,"keep_weekly":1,"target":"nas"}`,
	}, "\n")
	if got := strings.Join(*sent, "\n"); got != want {
		t.Errorf("bodies\n%s\nwant\n%s", got, want)
	}
	out, _, err = f.run("backup", "schedule", "agent-1", "--show", "--json")
	var s map[string]any
	if err != nil || json.Unmarshal([]byte(out), &s) != nil || s["every_minutes"] != 90.0 || s["target_id"] != "nas" {
		t.Errorf("--show --json: %s %v", out, err)
	}
	if len(*sent) != 3 {
		t.Errorf("--show sent %v", *sent)
	}
	out, _, err = f.run("backup", "schedule", "agent-1", "--off")
	if err != nil || out != "scheduled backups of agent-1 stopped; the backups taken stay\n" {
		t.Errorf("--off: %q %v", out, err)
	}
	if _, _, err := f.run("backup", "schedule", "agent-1", "--show"); err == nil ||
		!strings.HasPrefix(err.Error(), "desktop agent-1 has no backup schedule (set one with: bureau backup schedule agent-1") {
		t.Errorf("--show without one: %v", err)
	}
}

// TestBackupScheduleRefusesBadArguments before asking anything.
func TestBackupScheduleRefusesBadArguments(t *testing.T) {
	f := newFakeBureau(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent-1", "--show", "--off"}, "--show and --off: pick one"},
		{[]string{"agent-1", "--off", "--every", "1h", "--keep-daily", "3"}, "--show or --off with --every, --keep-daily: pick one"},
		{[]string{"agent-1", "--every", "1h", "--every-minutes", "60"}, "--every and --every-minutes: give one"},
		{[]string{"agent-1", "--every", "90s"}, "--every 1m30s: whole minutes, e.g. 15m, 6h or 24h"},
		{[]string{"agent-1", "--every", "0"}, "--every 0s: whole minutes"},
		{[]string{}, "accepts 1 arg(s), received 0"},
	} {
		if _, _, err := f.run(append([]string{"backup", "schedule"}, c.args...)...); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if r := f.requests(); len(r) != 0 {
		t.Errorf("requests sent: %v", r)
	}
	// What the server refuses comes back with its reason.
	scheduleRoutes(f, nil)
	f.json("PUT /api/v1/desktops/d1/backup-schedule", 422, map[string]any{"error": map[string]string{"code": "invalid", "field": "every_minutes",
		"message": "every_minutes: from 1 to 10080 (a week)"}})
	if _, _, err := f.run("backup", "schedule", "agent-1", "--every-minutes", "20000"); err == nil || !strings.HasPrefix(err.Error(), "every_minutes: from 1 to 10080") {
		t.Errorf("refused: %v", err)
	}
}

func TestBackupRm(t *testing.T) {
	f := newFakeBureau(t)
	f.json("DELETE /api/v1/backups/b1", 204, nil)
	out, _, err := f.run("backup", "rm", "b1")
	if err != nil || out != "backup b1 deleted; the chunks no other backup uses are swept from its target in the background\n" {
		t.Errorf("%q %v", out, err)
	}
	f.json("DELETE /api/v1/backups/b2", 409, map[string]any{"error": map[string]string{"code": "conflict",
		"message": "backup b2 is running: it can be deleted once it ends"}})
	if _, _, err := f.run("backup", "delete", "b2"); err == nil || !strings.HasPrefix(err.Error(), "backup b2 is running") {
		t.Errorf("a running one: %v", err)
	}
	if r := f.requests(); strings.Join(r, "|") != "DELETE /api/v1/backups/b1|DELETE /api/v1/backups/b2" {
		t.Errorf("requests %v", r)
	}
}
