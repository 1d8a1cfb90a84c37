package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// migratingBureau is a fake whose desktop agent-1 (on host local) answers
// its reads, once its migration was started, with each of seq in turn,
// the last for good; it records the bodies the migration was started with.
func migratingBureau(t *testing.T, seq ...map[string]any) (*fakeBureau, *[]string) {
	old := migratePoll
	migratePoll = time.Millisecond
	t.Cleanup(func() { migratePoll = old })
	f := newFakeBureau(t)
	d := map[string]any{"id": "d1", "name": "agent-1", "state": "running", "host": "local", "ip": "10.120.0.5"}
	f.json("GET /api/v1/desktops", 200, map[string]any{"desktops": []map[string]any{d}})
	var mu sync.Mutex
	var bodies []string
	reads := 0
	f.routes["GET /api/v1/desktops/d1"] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		now := d
		if len(bodies) > 0 && len(seq) > 0 {
			now = seq[min(reads, len(seq)-1)]
			reads++
		}
		writeJSON(w, 200, now)
	}
	f.routes["POST /api/v1/desktops/d1/migrate"] = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var b map[string]any
		json.NewDecoder(r.Body).Decode(&b)
		raw, _ := json.Marshal(b)
		bodies = append(bodies, string(raw))
		writeJSON(w, 202, migrating("disks"))
	}
	return f, &bodies
}

var migrateBegan = time.Now().UTC().Truncate(time.Second)

func migrating(step string) map[string]any {
	return map[string]any{"id": "d1", "name": "agent-1", "state": "migrating", "host": "local", "operation": "migrate",
		"operation_step": "to two: " + step, "operation_started_at": migrateBegan}
}

func TestMigrateWaitPrintsStepsAndTheEvent(t *testing.T) {
	f, bodies := migratingBureau(t, migrating("memory 40%"), migrating("memory 40%"), migrating("memory 80%"),
		map[string]any{"id": "d1", "name": "agent-1", "state": "running", "host": "two", "ip": "10.121.4.7"})
	event := func(typ, msg string, at time.Time) map[string]any {
		return map[string]any{"id": "e", "desktop_id": "d1", "type": typ, "message": msg, "actor": "admin/tok", "created_at": at}
	}
	f.json("GET /api/v1/desktops/d1/events", 200, map[string]any{"events": []map[string]any{
		event("migrated", "moved live from host two to host local in 9s (downtime 100ms, 900 MiB sent); address now 10.120.0.5", migrateBegan.Add(-time.Hour)),
		event("migrated", "moved live from host local to host two in 41.2s (downtime 312ms, 2210 MiB sent); address now 10.121.4.7", migrateBegan.Add(41*time.Second)),
		event("started", "started", migrateBegan.Add(time.Minute)),
	}})
	out, errw, err := f.run("desktop", "migrate", "agent-1", "two", "--wait", "1m")
	if err != nil {
		t.Fatal(err, errw)
	}
	if want := "desktop agent-1 moved live from host local to host two in 41.2s (downtime 312ms, 2210 MiB sent); address now 10.121.4.7\n"; out != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
	if len(*bodies) != 1 || (*bodies)[0] != `{"host":"two"}` {
		t.Errorf("bodies %v", *bodies)
	}
	var phases []string
	for _, l := range strings.Split(strings.TrimSpace(errw), "\n") {
		phases = append(phases, l[:strings.LastIndex(l, " ")])
	}
	want := []string{"migrating — to two: disks", "migrating — to two: memory 40%", "migrating — to two: memory 80%", "running after"}
	if strings.Join(phases, "|") != strings.Join(want, "|") {
		t.Errorf("phases %q", errw)
	}
}

func TestMigrateWaitFails(t *testing.T) {
	f, _ := migratingBureau(t, migrating("memory 40%"),
		map[string]any{"id": "d1", "name": "agent-1", "state": "running", "host": "local", "last_error": "migrate failed: cancelled"})
	out, _, err := f.run("desktop", "migrate", "d1", "two", "--wait", "1m")
	if err == nil || err.Error() != "desktop agent-1: migrate failed: cancelled; it is running on host local" || out != "" {
		t.Errorf("%q %v", out, err)
	}
}

func TestMigrateWithoutWaitPrintsTheDesktop(t *testing.T) {
	f, _ := migratingBureau(t)
	out, _, err := f.run("desktop", "migrate", "agent-1", "two")
	if err != nil || !strings.Contains(out, `"state": "migrating"`) || !strings.Contains(out, `"operation_step": "to two: disks"`) {
		t.Errorf("%s %v", out, err)
	}
}

func TestMigrateCancel(t *testing.T) {
	f, _ := migratingBureau(t)
	f.json("DELETE /api/v1/desktops/d1/migrate", 202, map[string]bool{"cancelling": true})
	out, _, err := f.run("desktop", "migrate", "agent-1", "--cancel")
	if err != nil || out != "cancelling the move of desktop agent-1; it stays on host local\n" {
		t.Errorf("%q %v", out, err)
	}
	if r := f.requests(); r[len(r)-1] != "DELETE /api/v1/desktops/d1/migrate" {
		t.Errorf("requests %v", r)
	}
	f.json("DELETE /api/v1/desktops/d1/migrate", 409, map[string]any{"error": map[string]string{"code": "conflict", "message": "the desktop is not migrating"}})
	if _, _, err := f.run("desktop", "migrate", "agent-1", "--cancel"); err == nil || !strings.Contains(err.Error(), "the desktop is not migrating") {
		t.Errorf("not migrating: %v", err)
	}
}

func TestMigrateRefusesHostWithCancelAndNeither(t *testing.T) {
	f, _ := migratingBureau(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent-1", "two", "--cancel"}, "--cancel and a HOST: give one"},
		{[]string{"agent-1"}, "name the HOST to move the desktop to"},
		{[]string{"agent-1", "--cancel", "--wait", "1m"}, "--wait follows a move"},
	} {
		if _, _, err := f.run(append([]string{"desktop", "migrate"}, c.args...)...); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v", c.args, err)
		}
	}
	if r := f.requests(); len(r) != 0 {
		t.Errorf("requests sent: %v", r)
	}
}
