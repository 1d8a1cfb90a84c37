package main

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// fastReady makes the CLI's waits for readiness quick: the fake answers
// at once, so no pause between calls.
func fastReady(t *testing.T) {
	old := readyPace
	readyPace = 0
	t.Cleanup(func() { readyPace = old })
}

// answers makes GET /api/v1/desktops/d1 answer bodies in turn (the last
// one again and again).
func (f *fakeBureau) answers(bodies ...map[string]any) {
	var mu sync.Mutex
	f.routes["GET /api/v1/desktops/d1"] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		b := bodies[0]
		if len(bodies) > 1 {
			bodies = bodies[1:]
		}
		writeJSON(w, 200, b)
	}
}

func desktopWaiting(state, waitingFor string) map[string]any {
	d := map[string]any{"id": "d1", "name": "agent-1", "state": state, "ready": false}
	if waitingFor != "" {
		d["up"], d["waiting_for"] = "agent", waitingFor
	}
	return d
}

var readyDesktop = map[string]any{"id": "d1", "name": "agent-1", "state": "running", "ready": true, "up": "session"}

// bureau desktop wait asks the API to wait, tells on stderr each change of
// what the desktop waits for, and prints the desktop once it is ready.
func TestDesktopWaitShowsWhatItWaitsFor(t *testing.T) {
	fastReady(t)
	f := newFakeBureau(t)
	f.answers(desktopWaiting("running", "agent"), // the lookup
		desktopWaiting("starting", ""), desktopWaiting("running", "agent"), desktopWaiting("running", "cloud-init"),
		desktopWaiting("running", "cloud-init"), desktopWaiting("running", "session"), readyDesktop)
	out, errw, err := f.run("desktop", "wait", "d1")
	if err != nil || !strings.Contains(out, `"ready": true`) {
		t.Fatalf("wait: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(errw), "\n")
	want := []string{"it is starting", "waiting for its guest to boot: no agent in it answers yet",
		"waiting for its first-boot setup (cloud-init) to finish", "waiting for its desktop session to start"}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w+"…") {
			t.Fatalf("progress:\n%s\nwant lines starting\n%s", errw, strings.Join(want, "\n"))
		}
	}
	if len(lines) != 5 || !strings.HasPrefix(lines[4], "ready after ") {
		t.Errorf("progress:\n%s", errw)
	}
	reqs := f.requests()
	if reqs[1] != "GET /api/v1/desktops/d1?wait=ready&timeout_s=5" || len(reqs) != 7 {
		t.Errorf("requests %q", reqs)
	}
}

func TestDesktopWaitTimesOut(t *testing.T) {
	fastReady(t)
	f := newFakeBureau(t)
	f.answers(desktopWaiting("running", "session"))
	_, _, err := f.run("desktop", "wait", "d1", "--timeout", "0s")
	if err == nil || !strings.Contains(err.Error(), "desktop agent-1 is not ready after 0s (waiting for its desktop session to start); bureau desktop wait agent-1 waits on") {
		t.Errorf("err %v", err)
	}
	if reqs := f.requests(); reqs[len(reqs)-1] != "GET /api/v1/desktops/d1?wait=ready&timeout_s=0" {
		t.Errorf("requests %q", reqs)
	}
	// A stopped desktop does not get there by itself: the API says so.
	f.json("GET /api/v1/desktops/d1", 409, map[string]any{"error": map[string]string{"code": "invalid_state", "message": "cannot wait for desktop agent-1: it is stopped"}})
	f.json("GET /api/v1/desktops", 200, map[string]any{"desktops": []map[string]any{desktopWaiting("stopped", "")}})
	if _, _, err := f.run("desktop", "wait", "agent-1"); err == nil || !strings.Contains(err.Error(), "it is stopped (HTTP 409 invalid_state)") {
		t.Errorf("stopped: %v", err)
	}
}

// create --wait waits for the create, then for the desktop to be ready.
func TestCreateWaitsUntilReady(t *testing.T) {
	fastReady(t)
	f := newFakeBureau(t)
	f.json("POST /api/v1/desktops", 202, desktopWaiting("creating", ""))
	// The create settles (running), then the desktop's session comes.
	f.answers(desktopWaiting("running", "session"), desktopWaiting("running", "session"), readyDesktop)
	out, errw, err := f.run("desktop", "create", "agent-1", "--wait", "1m")
	if err != nil || !strings.Contains(out, `"ready": true`) {
		t.Fatalf("create: %v\n%s", err, out)
	}
	if !strings.Contains(errw, "waiting for its desktop session to start…") || !strings.Contains(errw, "ready after ") {
		t.Errorf("progress:\n%s", errw)
	}
	reqs := f.requests()
	if last := reqs[len(reqs)-1]; !strings.HasPrefix(last, "GET /api/v1/desktops/d1?wait=ready&timeout_s=") {
		t.Errorf("requests %q", reqs)
	}
	// Without --wait nothing is waited for.
	f.seen = nil
	if _, _, err := f.run("desktop", "create", "agent-2"); err != nil || len(f.requests()) != 1 {
		t.Errorf("create without --wait: %v %q", err, f.requests())
	}
}

func TestReadyMark(t *testing.T) {
	for _, c := range []struct {
		d    apiv1.Desktop
		want string
	}{
		{apiv1.Desktop{State: "running", Ready: true}, "yes"},
		{apiv1.Desktop{State: "running", WaitingFor: "session"}, "no (session)"},
		{apiv1.Desktop{State: "stopped"}, "-"},
	} {
		if got := readyMark(&c.d); got != c.want {
			t.Errorf("%+v: %q", c.d, got)
		}
	}
}
