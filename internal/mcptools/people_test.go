package mcptools

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
)

// scriptCaller answers each "METHOD path" (its path without the query)
// from its script in turn, the last answer again and again, and records
// the calls with their bodies.
type scriptCaller struct {
	mu     sync.Mutex
	script map[string][]Response
	calls  []string // "METHOD path body"
}

func (f *scriptCaller) Call(_ context.Context, _, method, path string, body []byte, _ int) (Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.TrimSpace(method+" "+path+" "+string(body)))
	p, _, _ := strings.Cut(path, "?")
	rs := f.script[method+" "+p]
	if len(rs) == 0 {
		return Response{Status: 404, Body: []byte(`{"error":{"code":"not_found","message":"no such thing"}}`)}, nil
	}
	if len(rs) > 1 {
		f.script[method+" "+p] = rs[1:]
	}
	return rs[0], nil
}

func (f *scriptCaller) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

const (
	helpPending = `{"id":"req_1","desktop_id":"d1","owner":"alice","kind":"help","status":"pending","question":"Which account?","choices":["work","personal"],` +
		`"screenshot":false,"asked_by":"alice/tok_2","asked_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T04:04:05Z","gated":false}`
	helpAnswered = `{"id":"req_1","desktop_id":"d1","owner":"alice","kind":"help","status":"answered","question":"Which account?","choices":["work","personal"],` +
		`"screenshot":false,"asked_by":"alice/tok_2","asked_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T04:04:05Z","gated":false,` +
		`"decided_by":"console/ct_1","decided_at":"2026-01-02T03:05:00Z","answer":"work","choice":true}`
	approvalPending = `{"id":"req_2","desktop_id":"d1","owner":"alice","kind":"approval","status":"pending","question":"submit the order form",` +
		`"action":{"kind":"explicit","summary":"submit the order form"},"screenshot":true,"asked_by":"alice/tok_2","asked_at":"2026-01-02T03:04:05Z",` +
		`"expires_at":"2026-01-02T03:14:05Z","gated":false}`
)

// decided is request base with fields changed, as a 200 answer.
func decided(base string, fields map[string]any) Response {
	var r map[string]any
	if err := json.Unmarshal([]byte(base), &r); err != nil {
		panic(err)
	}
	maps.Copy(r, fields)
	b, _ := json.Marshal(r)
	return ok(string(b))
}

func TestRequestHelpWaitsForTheAnswer(t *testing.T) {
	noPace(t)
	f := &scriptCaller{script: map[string][]Response{
		"POST /api/v1/desktops/d1/help":          {{Status: 201, Body: []byte(helpPending)}},
		"GET /api/v1/desktops/d1/requests/req_1": {ok(helpPending), ok(helpAnswered)},
	}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "request_help", map[string]any{"desktop": "d1", "question": "Which account?", "choices": []string{"work", "personal"}, "screenshot": true, "wait_s": 600})
	if isErr || text != "ANSWERED by console/ct_1 (request req_1). The answer: work (one of the choices)" {
		t.Errorf("request_help: %t %s", isErr, text)
	}
	want := []string{
		`POST /api/v1/desktops/d1/help {"choices":["work","personal"],"question":"Which account?","screenshot":true,"wait_s":300}`,
		"GET /api/v1/desktops/d1/requests/req_1?wait_s=300",
		"GET /api/v1/desktops/d1/requests/req_1?wait_s=300",
	}
	if got := f.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A wait that runs out says the request is pending, with what to do.
func TestRequestHelpStillPending(t *testing.T) {
	f := &scriptCaller{script: map[string][]Response{"POST /api/v1/desktops/d1/help": {{Status: 201, Body: []byte(helpPending)}}}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "request_help", map[string]any{"desktop": "d1", "question": "Which account?", "wait_s": 0})
	if isErr || !strings.HasPrefix(text, "still PENDING after 0 s") || !strings.Contains(text, `get_request with desktop "d1", request_id "req_1"`) {
		t.Errorf("request_help without waiting: %t %s", isErr, text)
	}
	if got := f.seen(); len(got) != 1 || got[0] != `POST /api/v1/desktops/d1/help {"question":"Which account?"}` {
		t.Errorf("calls %q", got)
	}
	if text, isErr := callText(t, cs, "request_help", map[string]any{"desktop": "d1", "question": "?", "wait_s": 901}); !isErr || !strings.Contains(text, "0 to 900") {
		t.Errorf("wait_s 901: %t %s", isErr, text)
	}
}

func TestRequestApprovalSaysApprovedOrDenied(t *testing.T) {
	noPace(t)
	f := &scriptCaller{script: map[string][]Response{
		"POST /api/v1/desktops/d1/approvals":     {{Status: 201, Body: []byte(approvalPending)}},
		"GET /api/v1/desktops/d1/requests/req_2": {decided(approvalPending, map[string]any{"status": "denied", "decided_by": "alice/tok_1", "reason": "not today"})},
	}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "request_approval", map[string]any{"desktop": "d1", "action": "submit the order form", "detail": map[string]any{"total": 42}, "screenshot": true})
	if isErr || text != "DENIED by alice/tok_1 (request req_2): not today. Do not do it: submit the order form" {
		t.Errorf("request_approval: %t %s", isErr, text)
	}
	if got := f.seen(); got[0] != `POST /api/v1/desktops/d1/approvals {"action":"submit the order form","detail":{"total":42},"screenshot":true,"wait_s":300}` {
		t.Errorf("sent %s", got[0])
	}
	f.script["GET /api/v1/desktops/d1/requests/req_2"] = []Response{decided(approvalPending, map[string]any{"status": "approved", "decided_by": "console/ct_1", "reason": "ok"})}
	if text, isErr := callText(t, cs, "get_request", map[string]any{"desktop": "d1", "request_id": "req_2", "wait_s": 60}); isErr || text != "APPROVED by console/ct_1 (request req_2): ok. Go ahead: submit the order form" {
		t.Errorf("get_request: %t %s", isErr, text)
	}
	if got := f.seen(); got[len(got)-1] != "GET /api/v1/desktops/d1/requests/req_2?wait_s=60" {
		t.Errorf("get_request asked %s", got[len(got)-1])
	}
	f.script["GET /api/v1/desktops/d1/requests/req_2"] = []Response{ok(approvalPending)}
	if text, _ := callText(t, cs, "get_request", map[string]any{"desktop": "d1", "request_id": "req_2"}); !strings.HasPrefix(text, "still PENDING") || !strings.HasSuffix(text, "Do not go ahead until it is approved") {
		t.Errorf("get_request of a pending approval: %s", text)
	}
}

func TestListAnswerAndDecide(t *testing.T) {
	f := &scriptCaller{script: map[string][]Response{
		"GET /api/v1/requests":                           {ok(`{"requests":[` + helpPending + `,` + approvalPending + `]}`)},
		"GET /api/v1/desktops/d1/requests":               {ok(`{"requests":[` + helpAnswered + `]}`)},
		"POST /api/v1/desktops/d1/requests/req_1/answer": {ok(helpAnswered)},
		"POST /api/v1/desktops/d1/requests/req_2/deny":   {decided(approvalPending, map[string]any{"status": "denied", "decided_by": "alice/tok_1", "reason": "no"})},
	}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "list_requests", map[string]any{})
	want := "2 requests; id desktop kind status \"question\"\n" +
		`req_1 d1 help pending "Which account?" choices=work|personal` + "\n" +
		`req_2 d1 approval pending "submit the order form"` + "\n"
	if isErr || text != want {
		t.Errorf("list_requests: %t %q", isErr, text)
	}
	text, _ = callText(t, cs, "list_requests", map[string]any{"desktop": "d1", "status": "all", "kind": "help"})
	if !strings.Contains(text, `answer="work" by console/ct_1`) {
		t.Errorf("list_requests of d1: %s", text)
	}
	callText(t, cs, "answer_request", map[string]any{"desktop": "d1", "request_id": "req_1", "choice": "work"})
	if text, isErr := callText(t, cs, "decide_approval", map[string]any{"desktop": "d1", "request_id": "req_2", "approve": false, "reason": "no"}); isErr || !strings.HasPrefix(text, "DENIED by alice/tok_1") {
		t.Errorf("decide_approval: %t %s", isErr, text)
	}
	if _, isErr := callText(t, cs, "answer_request", map[string]any{"desktop": "d1", "request_id": "req_1"}); !isErr {
		t.Error("answer_request without an answer")
	}
	want2 := []string{
		"GET /api/v1/requests?status=pending",
		"GET /api/v1/desktops/d1/requests?kind=help",
		`POST /api/v1/desktops/d1/requests/req_1/answer {"choice":"work"}`,
		`POST /api/v1/desktops/d1/requests/req_2/deny {"reason":"no"}`,
	}
	if got := f.seen(); strings.Join(got, "\n") != strings.Join(want2, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want2, "\n"))
	}
}

func TestControlStatusAndTakeoverErrors(t *testing.T) {
	taken := `{"error":{"code":"human_in_control","message":"Dana has taken over this desktop's mouse and keyboard (since 2026-01-02T03:04:05Z)","holder":"person","person":"Dana","since":"2026-01-02T03:04:05Z"}}`
	f := &scriptCaller{script: map[string][]Response{
		"GET /api/v1/desktops/d1/control": {ok(`{"holder":"person","person":"Dana","by":"console/ct_1","since":"2026-01-02T03:04:05Z","until":"2026-01-02T03:14:05Z","idle_timeout_s":600,` +
			`"viewers":[{"session":"ct_1","name":"Dana","view_only":false,"since":"2026-01-02T03:00:00Z","holds_input":true},{"session":"ct_2","name":"","view_only":true,"since":"2026-01-02T03:00:00Z","holds_input":false}]}`)},
		"GET /api/v1/desktops/d2/control":      {ok(`{"holder":"agent","since":"0001-01-01T00:00:00Z"}`)},
		"POST /api/v1/desktops/d1/computer":    {{Status: 409, Body: []byte(taken)}},
		"PUT /api/v1/desktops/d1/clipboard":    {{Status: 409, Body: []byte(taken)}},
		"POST /api/v1/desktops/d1/windows/0x2": {{Status: 409, Body: []byte(taken)}},
		"POST /api/v1/desktops/d1/exec": {{Status: 403, Body: []byte(`{"error":{"code":"denied","message":"exec: rm -rf build was denied by alice/tok_1: not now (approval req_3)",` +
			`"reason":"not now","request_id":"req_3","decided_by":"alice/tok_1"}}`)}},
	}}
	cs := session(t, f)
	text, isErr := callText(t, cs, "control_status", map[string]any{"desktop": "d1"})
	want := "Dana holds the mouse and keyboard since 2026-01-02T03:04:05Z; it comes back to you by itself at 2026-01-02T03:14:05Z (after 600 s without their input) or when they hand it back. " +
		"Until then your input fails with human_in_control; screenshots and other reads work, and request_help asks them something. Watching in the console: Dana (holds input), ct_2 (view only)."
	if isErr || text != want {
		t.Errorf("control_status:\n%s\nwant\n%s", text, want)
	}
	if text, _ := callText(t, cs, "control_status", map[string]any{"desktop": "d2"}); text != "You (the agent) hold the mouse and keyboard." {
		t.Errorf("control_status of the agent's desktop: %s", text)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"computer", map[string]any{"desktop": "d1", "actions": []map[string]any{{"action": "left_click", "coordinate": []int{1, 2}}}}},
		{"set_clipboard", map[string]any{"desktop": "d1", "text": "x"}},
		{"window_action", map[string]any{"desktop": "d1", "window": "0x2", "action": "focus"}},
	} {
		text, isErr := callText(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, "(409 human_in_control). A person has taken over") || !strings.Contains(text, "request_help") {
			t.Errorf("%s while a person holds control: %t %s", c.tool, isErr, text)
		}
	}
	text, isErr = callText(t, cs, "exec", map[string]any{"desktop": "d1", "cmd": "rm -rf build"})
	if !isErr || !strings.Contains(text, "not now (approval req_3) (403 denied). A person denied this action") {
		t.Errorf("a denied exec: %t %s", isErr, text)
	}
}

// A console link can say who it is for.
func TestConsoleLinkForAPerson(t *testing.T) {
	f := &scriptCaller{script: map[string][]Response{"POST /api/v1/desktops/d1/console": {{Status: 201, Body: []byte(`{"id":"con_1","name":"Dana","url":"/console/d1?token=x"}`)}}}}
	cs := session(t, f)
	if text, isErr := callText(t, cs, "console_link", map[string]any{"desktop": "d1", "name": "Dana"}); isErr || !strings.Contains(text, `"name":"Dana"`) {
		t.Errorf("console_link: %t %s", isErr, text)
	}
	if got := f.seen(); got[0] != `POST /api/v1/desktops/d1/console {"name":"Dana","ttl_seconds":0,"view_only":false}` {
		t.Errorf("sent %s", got[0])
	}
}
