package main

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHostDrainWaitPrintsEachMoveAndWhatStayed(t *testing.T) {
	old := drainPoll
	drainPoll = time.Millisecond
	t.Cleanup(func() { drainPoll = old })
	f := newFakeBureau(t)
	started := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	host := func(drain map[string]any, desktops int) map[string]any {
		return map[string]any{"name": "two", "state": "up", "draining": true, "desktops": desktops, "drain": drain}
	}
	seq := []map[string]any{
		host(map[string]any{"started_at": started, "done": false, "moving": "d1", "moved": 0, "left": map[string]string{}}, 3),
		host(map[string]any{"started_at": started, "done": false, "moving": "d2", "moved": 1, "left": map[string]string{}}, 2),
		host(map[string]any{"started_at": started, "done": true, "ended_at": started.Add(95 * time.Second), "moved": 2,
			"left": map[string]string{"d3": "it is error: start or delete it, then drain again"}}, 1),
	}
	var mu sync.Mutex
	reads := 0
	f.json("POST /api/v1/hosts/two/drain", 202, seq[0])
	f.routes["GET /api/v1/hosts/two"] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		writeJSON(w, 200, seq[min(reads, len(seq)-1)])
	}
	out, errw, err := f.run("host", "drain", "two", "--wait", "1m")
	if err == nil || err.Error() != "host two: 1 desktops could not be moved off" {
		t.Errorf("err %v", err)
	}
	if want := "host two drained: 2 desktops moved off in 1m35s\n  left: desktop d3: it is error: start or delete it, then drain again\n"; out != want {
		t.Errorf("out %q\nwant %q", out, want)
	}
	if want := "moving desktop d1 (0 moved, 3 desktops left on the host)\nmoving desktop d2 (1 moved, 2 desktops left on the host)\n"; errw != want {
		t.Errorf("progress %q", errw)
	}

	f.json("DELETE /api/v1/hosts/two/drain", 200, map[string]any{"name": "two", "draining": false})
	if out, _, err := f.run("host", "undrain", "two"); err != nil || out != "host two is no longer draining\n" {
		t.Errorf("undrain: %q %v", out, err)
	}
	f.json("POST /api/v1/hosts/two/drain", 409, map[string]any{"error": map[string]string{"code": "conflict", "message": "this bureau does not move desktops between hosts, so it cannot drain one"}})
	if _, _, err := f.run("host", "drain", "two"); err == nil || !strings.Contains(err.Error(), "cannot drain one") {
		t.Errorf("refused: %v", err)
	}
}
