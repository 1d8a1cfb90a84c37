package mcptools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// seqCaller answers GETs of desktop d1 from gets in turn (the last one
// again and again), a create with created and anything else with other;
// it records each call with its body.
type seqCaller struct {
	mu      sync.Mutex
	gets    []Response
	created Response
	other   Response
	calls   []string
	bodies  []string
}

func (f *seqCaller) Call(_ context.Context, _, method, path string, body []byte, _ int) (Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method+" "+path)
	f.bodies = append(f.bodies, string(body))
	switch {
	case method == "POST" && path == "/api/v1/desktops":
		return f.created, nil
	case method == "GET" && strings.HasPrefix(path, "/api/v1/desktops/d1?"):
		r := f.gets[0]
		if len(f.gets) > 1 {
			f.gets = f.gets[1:]
		}
		return r, nil
	}
	return f.other, nil
}

func (f *seqCaller) seen() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, "\n")
}

var (
	creating = Response{Status: 202, Body: []byte(`{"id":"d1","name":"work","state":"creating","ready":false}`)}
	booting  = Response{Status: 200, Body: []byte(`{"id":"d1","name":"work","state":"running","ready":false,"up":"agent","waiting_for":"session"}`)}
	isReady  = Response{Status: 200, Body: []byte(`{"id":"d1","name":"work","state":"running","ready":true,"up":"session"}`)}
)

func noPace(t *testing.T) {
	old := readyPace
	readyPace = 0
	t.Cleanup(func() { readyPace = old })
}

// create_desktop waits until the desktop is ready, the API doing the
// waiting in slices of at most five minutes, and says how it went.
func TestCreateDesktopWaitsUntilReady(t *testing.T) {
	noPace(t)
	f := &seqCaller{created: creating, gets: []Response{booting, isReady}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "create_desktop", map[string]any{"name": "work", "vcpus": 2})
	var out struct {
		Ready   bool     `json:"ready"`
		TookS   *float64 `json:"took_s"`
		Desktop struct{ ID, Up string }
	}
	if isErr || json.Unmarshal([]byte(text), &out) != nil || !out.Ready || out.TookS == nil || out.Desktop.ID != "d1" || out.Desktop.Up != "session" {
		t.Fatalf("create_desktop: %t %s", isErr, text)
	}
	want := "POST /api/v1/desktops\nGET /api/v1/desktops/d1?wait=ready&timeout_s=300\nGET /api/v1/desktops/d1?wait=ready&timeout_s=300"
	if got := f.seen(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	// The tool's own parameters are not the API's.
	if f.bodies[0] != `{"name":"work","vcpus":2}` {
		t.Errorf("create body %s", f.bodies[0])
	}
}

func TestCreateDesktopWithoutWaiting(t *testing.T) {
	f := &seqCaller{created: creating}
	cs := session(t, f)
	if text, isErr := callText(t, cs, "create_desktop", map[string]any{"name": "work", "wait_ready": false, "timeout_s": 30}); isErr || text != string(creating.Body) {
		t.Errorf("create_desktop without waiting: %t %s", isErr, text)
	}
	if got := f.seen(); got != "POST /api/v1/desktops" {
		t.Errorf("calls: %s", got)
	}
	if text, isErr := callText(t, cs, "create_desktop", map[string]any{"name": "work", "timeout_s": 901}); !isErr || !strings.Contains(text, "0 to 900") {
		t.Errorf("timeout_s 901: %t %s", isErr, text)
	}
}

// A wait that runs out is an answer, not an error: not ready yet, what it
// waits for, and what to do.
func TestCreateDesktopThatIsNotReadyInTime(t *testing.T) {
	f := &seqCaller{created: creating, gets: []Response{booting}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "create_desktop", map[string]any{"name": "work", "timeout_s": 0})
	if isErr || !strings.Contains(text, `"ready":false`) || !strings.Contains(text, `"waiting_for":"session"`) || !strings.Contains(text, "call wait_ready") {
		t.Errorf("create_desktop: %t %s", isErr, text)
	}
	if got := f.seen(); got != "POST /api/v1/desktops\nGET /api/v1/desktops/d1?wait=ready&timeout_s=0" {
		t.Errorf("calls: %s", got)
	}
}

func TestWaitReady(t *testing.T) {
	noPace(t)
	f := &seqCaller{gets: []Response{booting, booting, isReady}}
	cs := session(t, f)
	if text, isErr := callText(t, cs, "wait_ready", map[string]any{"desktop": "d1", "timeout_s": 20}); isErr || !strings.Contains(text, `"ready":true`) {
		t.Errorf("wait_ready: %t %s", isErr, text)
	}
	if got := f.seen(); !strings.HasPrefix(got, "GET /api/v1/desktops/d1?wait=ready&timeout_s=20\nGET ") || strings.Count(got, "\n") != 2 {
		t.Errorf("calls: %s", got)
	}
	// A stopped desktop will not get there by itself: the API's 409.
	f.gets = []Response{{Status: 409, Body: []byte(`{"error":{"code":"invalid_state","message":"cannot wait for desktop work: it is stopped"}}`)}}
	if text, isErr := callText(t, cs, "wait_ready", map[string]any{"desktop": "d1"}); !isErr || !strings.Contains(text, "it is stopped (409 invalid_state)") {
		t.Errorf("wait_ready of a stopped desktop: %t %s", isErr, text)
	}
}

// A call the desktop is not ready for says what to do about it.
func TestNotReadyTellsTheAgentToWait(t *testing.T) {
	f := &seqCaller{other: Response{Status: 409, Body: []byte(`{"error":{"code":"not_ready","message":"cannot exec desktop work yet: its desktop session is starting","up":"agent","waiting_for":"session"}}`)}}
	cs := session(t, f)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"exec", map[string]any{"desktop": "d1", "cmd": "true"}},
		{"computer", map[string]any{"desktop": "d1", "actions": []map[string]any{{"action": "left_click", "coordinate": []int{1, 2}}}}},
	} {
		text, isErr := callText(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, "(409 not_ready)") || !strings.Contains(text, "Call wait_ready") {
			t.Errorf("%s before ready: %t %s", c.tool, isErr, text)
		}
	}
}
