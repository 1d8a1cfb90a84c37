package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sequence makes route answer bodies in turn (the last one again and
// again).
func (f *fakeBureau) sequence(route string, bodies ...map[string]any) {
	var mu sync.Mutex
	f.routes[route] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		b := bodies[0]
		if len(bodies) > 1 {
			bodies = bodies[1:]
		}
		writeJSON(w, 200, b)
	}
}

func fastRequests(t *testing.T) {
	fastReady(t)
	old := requestSlice
	t.Cleanup(func() { requestSlice = old })
}

var (
	helpPending = map[string]any{"id": "req_1", "desktop_id": "d1", "owner": "alice", "kind": "help", "status": "pending", "question": "Which account?",
		"choices": []string{"work", "personal"}, "screenshot": true, "asked_by": "alice/tok_2", "asked_at": "2026-01-02T03:04:05Z",
		"expires_at": "2026-01-02T04:04:05Z", "gated": false}
	helpAnswered = with(helpPending, map[string]any{"status": "answered", "answer": "work", "choice": true, "decided_by": "console/con_1",
		"decided_at": "2026-01-02T03:05:00Z"})
	gatedExec = map[string]any{"id": "req_2", "desktop_id": "d1", "owner": "alice", "kind": "approval", "status": "pending",
		"question": "exec: rm -rf /home/agent/build", "action": map[string]any{"kind": "exec", "summary": "exec: rm -rf /home/agent/build",
			"rule": "exec[0]: rm -rf", "detail": map[string]any{"command": []string{"rm", "-rf", "/home/agent/build"}}},
		"screenshot": false, "asked_by": "alice/tok_2", "asked_at": "2026-01-02T03:06:00Z", "expires_at": "2026-01-02T03:11:00Z", "gated": true}
)

func with(m map[string]any, more map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

func TestDesktopControlTakeRelease(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	person := map[string]any{"holder": "person", "person": "Dana", "by": "alice/tok_1", "since": "2026-01-02T03:04:05Z", "until": "2026-01-02T03:14:05Z",
		"idle_timeout_s": 600, "viewers": []map[string]any{
			{"session": "con_1", "name": "Dana", "view_only": false, "since": "2026-01-02T03:00:00Z", "holds_input": true},
			{"session": "con_2", "name": "", "view_only": true, "since": "2026-01-02T03:01:00Z", "holds_input": false}}}
	f.json("GET /api/v1/desktops/d1/control", 200, person)
	out, _, err := f.run("desktop", "control", "agent-1")
	want := `Dana has control since 2026-01-02 03:04:05 (alice/tok_1); back to the agent at 2026-01-02 03:14:05 unless they use it (idle 10m)
WATCHING  NAME  INPUT      SINCE
con_1     Dana  holds it   2026-01-02 03:00:00
con_2     -     view only  2026-01-02 03:01:00
`
	if err != nil || out != want {
		t.Fatalf("control: %v\n%s\nwant\n%s", err, out, want)
	}
	sent := f.post("POST /api/v1/desktops/d1/control/take", 200, person)
	if _, _, err := f.run("desktop", "take", "d1", "--name", "Dana", "--idle", "15m"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.run("desktop", "take", "d1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sent(), "\n"); got != `{"idle_timeout_s":900,"name":"Dana"}`+"\n{}" {
		t.Errorf("take sent %s", got)
	}
	f.post("POST /api/v1/desktops/d1/control/release", 200, map[string]any{"holder": "agent", "viewers": []any{}})
	if out, _, err := f.run("desktop", "release", "d1"); err != nil || out != "the agent has control\n" {
		t.Errorf("release: %v %q", err, out)
	}
	f.json("POST /api/v1/desktops/d1/control/take", 403, map[string]any{"error": map[string]string{"code": "forbidden", "message": "an agent's token cannot take control"}})
	if _, _, err := f.run("desktop", "take", "d1"); err == nil || !strings.Contains(err.Error(), "HTTP 403 forbidden") {
		t.Errorf("take with an agent's token: %v", err)
	}
}

func TestDesktopHelpWaitsForTheAnswer(t *testing.T) {
	fastRequests(t)
	f := newFakeBureau(t)
	sent := f.post("POST /api/v1/desktops/d1/help", 201, helpPending)
	f.sequence("GET /api/v1/desktops/d1/requests/req_1", helpPending, helpAnswered)
	out, _, err := f.run("desktop", "help", "agent-1", "Which account?", "--choice", "work", "--choice", "personal", "--screenshot", "--wait", "10m", "--timeout", "2h")
	if err != nil || out != "work\n" {
		t.Fatalf("help: %v %q", err, out)
	}
	if got := sent()[0]; got != `{"choices":["work","personal"],"question":"Which account?","screenshot":true,"timeout_s":7200,"wait_s":240}` {
		t.Errorf("help sent %s", got)
	}
	r := f.requests()
	if r[len(r)-2] != "GET /api/v1/desktops/d1/requests/req_1?wait_s=240" || r[len(r)-1] != r[len(r)-2] {
		t.Errorf("requests %q", r)
	}
	// Without --wait: the request's id, and how to wait for it.
	out, stderr, err := f.run("desktop", "help", "d1", "Anyone?")
	if err != nil || out != "req_1\n" || !strings.Contains(stderr, "bureau request show agent-1 req_1 --wait 10m") {
		t.Errorf("help without waiting: %v %q %q", err, out, stderr)
	}
	if sent()[1] != `{"question":"Anyone?"}` {
		t.Errorf("help sent %s", sent()[1])
	}
	// A wait that runs out fails, saying what to do.
	f.json("GET /api/v1/desktops/d1/requests/req_1", 200, helpPending)
	if _, _, err := f.run("desktop", "help", "d1", "Anyone?", "--wait", "1s"); err == nil || !strings.Contains(err.Error(), "no answer within 1s; request req_1 stays open") {
		t.Errorf("help that nobody answers: %v", err)
	}
}

func TestRequestsTable(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	denied := with(gatedExec, map[string]any{"status": "denied", "decided_by": "alice/tok_1", "reason": "not the build dir", "gated": true})
	f.json("GET /api/v1/requests", 200, map[string]any{"requests": []any{gatedExec, helpPending}})
	f.json("GET /api/v1/desktops/d1/requests", 200, map[string]any{"requests": []any{denied, helpAnswered}})
	out, _, err := f.run("requests")
	want := `ID     DESKTOP  KIND      STATUS                  ASKED                QUESTION                        OUTCOME
req_2  agent-1  approval  pending (a call waits)  2026-01-02 03:06:00  exec: rm -rf /home/agent/build  -
req_1  agent-1  help      pending                 2026-01-02 03:04:05  Which account? [work|personal]  -
`
	if err != nil || out != want {
		t.Fatalf("requests: %v\n%s\nwant\n%s", err, out, want)
	}
	out, _, err = f.run("requests", "--desktop", "agent-1", "--all-states", "--kind", "help")
	if err != nil || !strings.Contains(out, `by alice/tok_1: not the build dir`) || !strings.Contains(out, `"work" by console/con_1`) {
		t.Errorf("requests of a desktop: %v\n%s", err, out)
	}
	r := f.requests()
	if r[0] != "GET /api/v1/requests?status=pending" || r[len(r)-1] != "GET /api/v1/desktops/d1/requests?kind=help" {
		t.Errorf("requests %q", r)
	}
	if _, _, err := f.run("requests", "--status", "denied", "--all-states"); err == nil {
		t.Error("--status with --all-states")
	}
}

func TestRequestShowAnswerApproveDeny(t *testing.T) {
	inUTC(t)
	fastRequests(t)
	f := newFakeBureau(t)
	f.json("GET /api/v1/desktops/d1/requests/req_2", 200, gatedExec)
	out, _, err := f.run("request", "show", "agent-1", "req_2")
	want := `request:     req_2 (approval) on agent-1: pending
action:      exec: rm -rf /home/agent/build
rule:        exec[0]: rm -rf
detail:      {"command":["rm","-rf","/home/agent/build"]}
asked:       2026-01-02 03:06:00 by alice/tok_2 (a call waits for it)
open until:  2026-01-02 03:11:00
`
	if err != nil || out != want {
		t.Fatalf("show: %v\n%s\nwant\n%s", err, out, want)
	}
	approved := with(gatedExec, map[string]any{"status": "approved", "decided_by": "alice/tok_1", "decided_at": "2026-01-02T03:07:00Z", "reason": "fine"})
	sent := f.post("POST /api/v1/desktops/d1/requests/req_2/approve", 200, approved)
	out, _, err = f.run("request", "approve", "d1", "req_2", "--reason", "fine")
	if err != nil || !strings.Contains(out, "approved") || !strings.Contains(out, "2026-01-02 03:07:00 by alice/tok_1") || sent()[0] != `{"reason":"fine"}` {
		t.Errorf("approve: %v %q %q", err, out, sent())
	}
	denySent := f.post("POST /api/v1/desktops/d1/requests/req_2/deny", 200, with(approved, map[string]any{"status": "denied"}))
	if _, _, err := f.run("request", "deny", "d1", "req_2"); err != nil || denySent()[0] != `{"reason":""}` {
		t.Errorf("deny: %v %q", err, denySent())
	}
	answerSent := f.post("POST /api/v1/desktops/d1/requests/req_1/answer", 200, helpAnswered)
	if out, _, err := f.run("request", "answer", "d1", "req_1", "--choice", "work"); err != nil || !strings.Contains(out, "work") {
		t.Errorf("answer --choice: %v %q", err, out)
	}
	if _, _, err := f.run("request", "answer", "d1", "req_1", "the work one"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(answerSent(), "\n"); got != `{"choice":"work"}`+"\n"+`{"answer":"the work one"}` {
		t.Errorf("answer sent %s", got)
	}
	if _, _, err := f.run("request", "answer", "d1", "req_1"); err == nil {
		t.Error("answer of nothing")
	}
	f.json("POST /api/v1/desktops/d1/requests/req_1/answer", 409, map[string]any{"error": map[string]string{"code": "already_decided", "message": "request req_1 is already answered", "status": "answered"}})
	if _, _, err := f.run("request", "answer", "d1", "req_1", "x"); err == nil || !strings.Contains(err.Error(), "HTTP 409 already_decided") {
		t.Errorf("answer of an answered request: %v", err)
	}
	// show --wait waits for the decision; --screenshot saves the picture.
	f.sequence("GET /api/v1/desktops/d1/requests/req_1", helpPending, helpAnswered)
	f.routes["GET /api/v1/desktops/d1/requests/req_1/screenshot"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG"))
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	out, _, err = f.run("request", "show", "d1", "req_1", "--wait", "5m", "--screenshot", shot)
	if b, _ := os.ReadFile(shot); err != nil || !strings.Contains(out, "answer:") || string(b) != "\x89PNG" {
		t.Errorf("show --wait: %v %q %q", err, out, b)
	}
	r := f.requests()
	if !strings.HasSuffix(strings.Join(r, "\n"), "GET /api/v1/desktops/d1/requests/req_1?wait_s=240\nGET /api/v1/desktops/d1/requests/req_1?wait_s=240\nGET /api/v1/desktops/d1/requests/req_1/screenshot") {
		t.Errorf("requests %q", r[len(r)-3:])
	}
}

func TestDesktopPolicy(t *testing.T) {
	f := newFakeBureau(t)
	f.json("GET /api/v1/desktops/d1/approval-policy", 200, map[string]any{})
	out, stderr, err := f.run("desktop", "policy", "d1")
	if err != nil || out != "{}\n" || !strings.Contains(stderr, "no approval policy") {
		t.Errorf("policy: %v %q %q", err, out, stderr)
	}
	policy := `{"exec":["rm\\s+-rf"],"file_delete":true,"timeout_s":300}`
	file := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(file, []byte(policy), 0o644)
	sent := f.post("PUT /api/v1/desktops/d1/approval-policy", 200, map[string]any{"exec": []string{`rm\s+-rf`}, "file_delete": true, "timeout_s": 300})
	out, _, err = f.run("desktop", "policy", "d1", "--set", file)
	if err != nil || !strings.Contains(out, `"file_delete": true`) || sent()[0] != policy {
		t.Errorf("policy --set: %v %q %q", err, out, sent())
	}
	if _, _, err := f.run("desktop", "policy", "d1", "--set", file, "--clear"); err == nil {
		t.Error("--set with --clear")
	}
	os.WriteFile(file, []byte("[1]"), 0o644)
	if _, _, err := f.run("desktop", "policy", "d1", "--set", file); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("policy --set of a list: %v", err)
	}
	f.routes["DELETE /api/v1/desktops/d1/approval-policy"] = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }
	if out, _, err := f.run("desktop", "policy", "agent-1", "--clear"); err != nil || !strings.Contains(out, "approval policy of agent-1 cleared") {
		t.Errorf("policy --clear: %v %q", err, out)
	}
	f.json("PUT /api/v1/desktops/d1/approval-policy", 422, map[string]any{"error": map[string]string{"code": "invalid", "message": "exec[0]: bad pattern", "field": "exec[0]"}})
	os.WriteFile(file, []byte(`{"exec":["("]}`), 0o644)
	if _, _, err := f.run("desktop", "policy", "d1", "--set", file); err == nil || !strings.Contains(err.Error(), "HTTP 422 invalid") {
		t.Errorf("a bad policy: %v", err)
	}
}
