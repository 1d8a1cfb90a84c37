package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/readiness"
)

// guestStages answers readiness probes with what it is set to.
type guestStages struct {
	mu      sync.Mutex
	waiting string
	err     error
}

func (g *guestStages) Probe(context.Context, string) (guest.Probe, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return guest.Probe{Via: "bureau-agent", Waiting: g.waiting}, g.err
}

func (g *guestStages) set(waiting string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting, g.err = waiting, nil
}

// TestReady: a running desktop whose session is not up says so, refuses
// exec, files and computer use with 409 not_ready (what it waits for, a
// Retry-After), and ?wait=ready answers once it is.
func TestReady(t *testing.T) {
	g := &guestStages{waiting: guest.WaitSession}
	tr := readiness.New(context.Background(), g, nil)
	tr.Every = 10 * time.Millisecond
	e := newEnvDeps(t, nil, func(d *Deps) { d.Readiness = tr })
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"slow"}`)
	id := d["id"].(string)
	base := "/api/v1/desktops/" + id

	// Being created: not ready, nothing more said.
	if code, r := e.do(t, e.alice, "GET", base, ""); code != 200 || r["ready"] != false || r["up"] != nil {
		t.Fatalf("a desktop being created: %d %v", code, r)
	}
	e.desktops.desktops[id].State = desktop.StateRunning
	if code, r := e.do(t, e.alice, "GET", base, ""); code != 200 || r["ready"] != false || r["up"] == nil || r["ready_at"] != nil {
		t.Fatalf("a running desktop not ready: %d %v", code, r)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", base + "/exec", `{"cmd":"id"}`},
		{"GET", base + "/files?path=/home/agent", ""},
		{"PUT", base + "/files?path=/home/agent/x", "x"},
		{"POST", base + "/computer", `{"action":"left_click","coordinate":[1,1]}`},
		{"GET", base + "/clipboard", ""},
	} {
		code, r := e.do(t, e.alice, c.method, c.path, c.body)
		body, _ := r["error"].(map[string]any)
		if code != 409 || errCode(r) != "not_ready" || body["waiting_for"] != guest.WaitSession || body["up"] != readiness.UpAgent {
			t.Errorf("%s %s before ready: %d %v", c.method, c.path, code, r)
		}
	}
	// The header says when to try again.
	req, _ := http.NewRequest("POST", e.srv.URL+base+"/exec", strings.NewReader(`{"cmd":"id"}`))
	req.Header.Set("Authorization", "Bearer "+e.alice)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 409 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("Retry-After on not_ready: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// Other routes are not held back: the desktop's history, its processes.
	if code, _ := e.do(t, e.alice, "GET", base+"/events", ""); code != 200 {
		t.Errorf("events of a desktop not ready: %d", code)
	}

	// Bad waits.
	for _, q := range []string{"?wait=session", "?wait=ready&timeout_s=-1", "?wait=ready&timeout_s=99999", "?wait=ready&timeout_s=x"} {
		if code, r := e.do(t, e.alice, "GET", base+q, ""); code != 422 || errCode(r) != "invalid" {
			t.Errorf("GET %s: %d %v", q, code, r)
		}
	}
	// A wait that runs out answers the desktop, not ready.
	if code, r := e.do(t, e.alice, "GET", base+"?wait=ready&timeout_s=0", ""); code != 200 || r["ready"] != false || r["waiting_for"] != guest.WaitSession {
		t.Fatalf("a wait that ran out: %d %v", code, r)
	}
	// The session comes up while a caller waits.
	go func() {
		time.Sleep(50 * time.Millisecond)
		g.set("")
	}()
	code, r := e.do(t, e.alice, "GET", base+"?wait=ready&timeout_s=30", "")
	if code != 200 || r["ready"] != true || r["up"] != readiness.UpSession || r["ready_at"] == nil || r["waiting_for"] != nil {
		t.Fatalf("waited for ready: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"id"}`); code != 200 {
		t.Errorf("exec once ready: %d %v", code, r)
	}
	// Someone else's desktop is not found, waiting or not.
	if code, _ := e.do(t, e.bob, "GET", base+"?wait=ready", ""); code != 404 {
		t.Errorf("bob waits for alice's desktop: %d", code)
	}
	// A stopped desktop will not get there: 409 at once.
	e.desktops.desktops[id].State = desktop.StateStopped
	tr.Follow(e.desktops.desktops[id])
	if code, r := e.do(t, e.alice, "GET", base+"?wait=ready", ""); code != 409 || r["ready"] != nil {
		t.Errorf("waiting for a stopped desktop: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "GET", base, ""); code != 200 || r["ready"] != false || r["ready_at"] != nil {
		t.Errorf("a stopped desktop: %d %v", code, r)
	}
}
