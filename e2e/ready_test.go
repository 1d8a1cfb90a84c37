//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// notReadyYet checks a desktop just running, its guest still booting: it
// says it is not ready and how far it has come, and the calls that need
// its session answer 409 not_ready saying what they wait for — never a
// raw guest error ("runuser: user agent does not exist").
func notReadyYet(t *testing.T, s *server, token, id string) {
	t.Helper()
	var d apiv1.Desktop
	if code := s.call(token, "GET", "/api/v1/desktops/"+id, nil, &d); code != http.StatusOK || d.Ready || d.ReadyAt != nil || d.Up == "" || d.Up == "session" || d.WaitingFor == "" {
		t.Errorf("a desktop just running: %d ready=%v ready_at=%v up=%q waiting_for=%q", code, d.Ready, d.ReadyAt, d.Up, d.WaitingFor)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/exec", map[string]any{"cmd": "id"}},
		{"GET", "/files?path=/home/agent", nil},
		{"POST", "/computer", map[string]any{"action": "left_click", "coordinate": []int{10, 10}}},
	} {
		e := s.expectError(token, c.method, "/api/v1/desktops/"+id+c.path, c.body, http.StatusConflict, "not_ready")
		if e.Error.WaitingFor == "" || e.Error.Up == "" {
			t.Errorf("%s %s before ready: %+v", c.method, c.path, e.Error)
		}
	}
	// A short wait runs out and says so: the desktop, not ready.
	if code := s.call(token, "GET", "/api/v1/desktops/"+id+"?wait=ready&timeout_s=1", nil, &d); code != http.StatusOK || d.Ready {
		t.Errorf("a 1 s wait for a booting desktop: %d ready=%v", code, d.Ready)
	}
	t.Logf("running, not ready: up %s, waiting for %s", d.Up, d.WaitingFor)
}

// waitReady waits for the desktop through the API (as an SDK's
// wait_ready does) once its session is up, and checks what it says then:
// ready since a moment after its session came, and a "ready" event in its
// history.
func waitReady(t *testing.T, s *server, token, id string, createdAt time.Time) {
	t.Helper()
	var d apiv1.Desktop
	begun := time.Now()
	if code := s.call(token, "GET", "/api/v1/desktops/"+id+"?wait=ready&timeout_s=300", nil, &d); code != http.StatusOK || !d.Ready || d.ReadyAt == nil || d.Up != "session" || d.WaitingFor != "" {
		t.Fatalf("wait=ready: %d ready=%v ready_at=%v up=%q waiting_for=%q after %s", code, d.Ready, d.ReadyAt, d.Up, d.WaitingFor, time.Since(begun))
	}
	if d.ReadyAt.Before(createdAt) || d.ReadyAt.After(time.Now()) {
		t.Errorf("ready_at %s: not between the create (%s) and now", d.ReadyAt, createdAt)
	}
	t.Logf("create→ready: %s (the wait took %s once the session was seen)", d.ReadyAt.Sub(createdAt).Round(time.Second), time.Since(begun).Round(100*time.Millisecond))
	var events struct{ Events []apiv1.Event }
	s.call(token, "GET", "/api/v1/desktops/"+id+"/events", nil, &events)
	found := false
	for _, e := range events.Events {
		found = found || e.Type == "ready"
	}
	if !found {
		t.Errorf("no ready event in the desktop's history: %+v", events.Events)
	}
}

// waitReadyAPI waits through the API until the desktop is ready (exec,
// files and computer use answer), as a client does before using it.
func (s *server) waitReadyAPI(token, id string, timeout time.Duration) {
	s.t.Helper()
	var d apiv1.Desktop
	code := s.call(token, "GET", fmt.Sprintf("/api/v1/desktops/%s?wait=ready&timeout_s=%d", id, int(timeout.Seconds())), nil, &d)
	if code != http.StatusOK || !d.Ready {
		s.t.Fatalf("desktop %s not ready after %s: %d up %q, waiting for %q", id, timeout, code, d.Up, d.WaitingFor)
	}
}
