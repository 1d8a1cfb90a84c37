package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

// fakeBureau answers the CLI from a table of routes ("GET /path") and
// records the requests it was sent (path and query).
type fakeBureau struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	seen   []string
}

func newFakeBureau(t *testing.T) *fakeBureau {
	f := &fakeBureau{routes: map[string]http.HandlerFunc{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.RequestURI())
		h := f.routes[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok" {
			writeJSON(w, 401, map[string]any{"error": map[string]string{"code": "unauthorized", "message": "no token"}})
			return
		}
		if h == nil {
			writeJSON(w, 404, map[string]any{"error": map[string]string{"code": "not_found", "message": "desktop not found"}})
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.Close)
	// The desktop is found by its id, d1, or by its name.
	d := map[string]any{"id": "d1", "name": "agent-1", "state": "running"}
	f.json("GET /api/v1/desktops/d1", 200, d)
	f.json("GET /api/v1/desktops", 200, map[string]any{"desktops": []map[string]any{d}})
	return f
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeBureau) json(route string, status int, v any) {
	f.routes[route] = func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, v) }
}

func (f *fakeBureau) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// run runs bureau with args against the fake and returns what it wrote.
func (f *fakeBureau) run(args ...string) (stdout, stderr string, err error) {
	var out, errw strings.Builder
	root := rootCmd()
	root.SetArgs(append(args, "--url", f.URL, "--token", "tok"))
	root.SetOut(&out)
	root.SetErr(&errw)
	err = root.Execute()
	return out.String(), errw.String(), err
}

func inUTC(t *testing.T) {
	old := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = old })
}

var stepAt = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func step(seq int64, kind, input string) *steps.Step {
	return &steps.Step{DesktopID: "d1", Seq: seq, At: stepAt.Add(time.Duration(seq) * time.Second), Actor: "alice/tok_1", Kind: kind,
		Input: json.RawMessage(input), Result: json.RawMessage("null"), Status: 200}
}

func TestStepSummary(t *testing.T) {
	failed := step(1, "exec", `{"cmd":"make\n  test"}`)
	failed.Status, failed.Error = 503, "the guest agent does not answer"
	for _, c := range []struct {
		st   *steps.Step
		want string
	}{
		{step(1, "computer", `{"actions":[{"action":"left_click","coordinate":[640,400]},{"action":"type","text":"hello"}]}`),
			`left_click (640,400); type "hello"`},
		{step(1, "computer", `{"actions":[{"action":"key","text":"ctrl+s"},{"action":"scroll","coordinate":[5,6],"scroll_direction":"down","scroll_amount":3},`+
			`{"action":"left_click_drag","start_coordinate":[1,2],"coordinate":[3,4]},{"action":"zoom","region":[0,0,10,10]},{"action":"type","text":"a\nb"}]}`),
			`key ctrl+s; scroll down 3 (5,6); left_click_drag (1,2)→(3,4); zoom [0,0,10,10]; type "a\nb"`},
		{step(1, "computer", `{"actions":[{"type":"click","x":5,"y":6,"button":"right"},{"type":"keypress","keys":["CTRL","C"]},`+
			`{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]},{"type":"scroll","x":1,"y":1,"scroll_y":300}]}`),
			`click right (5,6); keypress CTRL+C; drag (1,2)→(3,4); scroll (1,1) by 0,300`},
		{step(1, "exec", `{"cmd":"npm run dev","background":true}`), "npm run dev (background)"},
		{step(1, "exec", `{"cmd":"","argv":["ls","-l","my dir"]}`), `ls -l "my dir"`},
		{step(1, "file_write", `{"path":"docs/a.txt","mode":"0644"}`), "docs/a.txt"},
		{step(1, "file_delete", `{"path":"/tmp/x","recursive":"true"}`), "/tmp/x"},
		{step(1, "clipboard", `{"chars":12}`), "12 chars"},
		{failed, "make test — error: the guest agent does not answer"},
		{step(1, "exec", `{"cmd":"`+strings.Repeat("x", 150)+`"}`), strings.Repeat("x", 99) + "…"},
	} {
		if got := stepSummary(c.st); got != c.want {
			t.Errorf("%s: got  %q\nwant %q", c.st.Input, got, c.want)
		}
	}
}

func TestStepsList(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	f.json("GET /api/v1/desktops/d1/steps", 200, map[string]any{"steps": []*steps.Step{
		step(4, "computer", `{"actions":[{"action":"left_click","coordinate":[640,400]}]}`),
		step(5, "clipboard", `{"chars":3}`),
	}})
	out, errw, err := f.run("steps", "list", "agent-1", "--after", "3", "--limit", "2")
	if err != nil {
		t.Fatal(err)
	}
	want := `SEQ    TIME                KIND        ACTOR                  STATUS INPUT
4      2025-03-04 05:06:11 computer    alice/tok_1            200    left_click (640,400)
5      2025-03-04 05:06:12 clipboard   alice/tok_1            200    3 chars
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if errw != "(there may be more: --after 5)\n" {
		t.Errorf("stderr %q", errw)
	}
	if got := f.requests(); got[len(got)-1] != "GET /api/v1/desktops/d1/steps?after=3&limit=2" {
		t.Errorf("requests %q", got)
	}

	out, _, err = f.run("steps", "list", "d1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var st steps.Step
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &st) != nil || st.Seq != 5 || string(st.Input) != `{"chars":3}` {
		t.Errorf("--json: %q", out)
	}

	if _, _, err := f.run("steps", "list", "nope"); err == nil || !strings.Contains(err.Error(), "desktop not found (HTTP 404 not_found)") {
		t.Errorf("an unknown desktop: %v", err)
	}
}

// --follow prints the steps as they come, reconnects after the last one
// when the stream breaks off (trying again while bureau does not answer),
// and ends on the server's last word.
func TestStepsFollow(t *testing.T) {
	inUTC(t)
	old := stepsRetryEvery
	stepsRetryEvery = time.Millisecond
	t.Cleanup(func() { stepsRetryEvery = old })
	f := newFakeBureau(t)
	event := func(w http.ResponseWriter, name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	var conns atomic.Int32
	f.routes["GET /api/v1/desktops/d1/steps"] = func(w http.ResponseWriter, r *http.Request) {
		n := conns.Add(1)
		if n == 2 { // bureau restarting: tried again
			writeJSON(w, 503, map[string]any{"error": map[string]string{"code": "unavailable", "message": "starting"}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": bureau step log of d1\n\n")
		switch n {
		case 1:
			event(w, "step", step(1, "exec", `{"cmd":"ls"}`))
			fmt.Fprint(w, ": keepalive\n\n")
			event(w, "step", step(2, "file_write", `{"path":"a.txt"}`))
		default:
			event(w, "step", step(2, "file_write", `{"path":"a.txt"}`)) // already shown
			event(w, "step", step(3, "clipboard", `{"chars":1}`))
			event(w, "unauthorized", map[string]string{"code": "unauthorized", "message": "token revoked"})
		}
	}
	out, errw, err := f.run("steps", "list", "agent-1", "--follow")
	if err == nil || err.Error() != "the step stream ended: the token is no longer valid: token revoked" {
		t.Errorf("err %v", err)
	}
	want := `SEQ    TIME                KIND        ACTOR                  STATUS INPUT
1      2025-03-04 05:06:08 exec        alice/tok_1            200    ls
2      2025-03-04 05:06:09 file_write  alice/tok_1            200    a.txt
3      2025-03-04 05:06:10 clipboard   alice/tok_1            200    1 chars
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(errw, "the step stream broke off (the server closed it); reconnecting") {
		t.Errorf("stderr %q", errw)
	}
	reqs := f.requests()
	if strings.Join(reqs[len(reqs)-3:], "\n") != "GET /api/v1/desktops/d1/steps?follow=true&after=0\n"+
		"GET /api/v1/desktops/d1/steps?follow=true&after=2\nGET /api/v1/desktops/d1/steps?follow=true&after=2" {
		t.Errorf("requests %q", reqs)
	}

	// A refusal when the stream opens is the command's error.
	f.json("GET /api/v1/desktops/d1/steps", 422, map[string]any{"error": map[string]string{"code": "invalid", "message": "after: must be a step number (0 or more)", "field": "after"}})
	if _, _, err := f.run("steps", "list", "d1", "-f"); err == nil || !strings.Contains(err.Error(), "HTTP 422 invalid") {
		t.Errorf("a refusal: %v", err)
	}
}

func TestStepsExport(t *testing.T) {
	f := newFakeBureau(t)
	f.routes["GET /api/v1/desktops/d1/steps/export"] = func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("format") != "anthropic" || q.Get("images") != "false" {
			writeJSON(w, 422, map[string]any{"error": map[string]string{"code": "invalid", "message": "query " + r.URL.RawQuery}})
			return
		}
		tools := []map[string]string{{"name": "computer"}, {"name": "bash"}}
		switch q.Get("after") {
		case "0":
			writeJSON(w, 200, map[string]any{"format": "anthropic", "desktop_id": "d1", "tools": tools, "next_after": 2,
				"messages": []map[string]any{{"role": "assistant", "n": 1}, {"role": "user", "n": 1}, {"role": "assistant", "n": 2}, {"role": "user", "n": 2}}})
		case "2":
			writeJSON(w, 200, map[string]any{"format": "anthropic", "desktop_id": "d1", "tools": tools, "next_after": 3,
				"messages": []map[string]any{{"role": "assistant", "n": 3}, {"role": "user", "n": 3}}})
		default: // the last page may be empty
			writeJSON(w, 200, map[string]any{"format": "anthropic", "desktop_id": "d1", "tools": tools, "messages": nil})
		}
	}
	file := filepath.Join(t.TempDir(), "steps.json")
	if _, _, err := f.run("steps", "export", "agent-1", "--format", "anthropic", "--no-images", "-o", file); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format    string
		DesktopID string `json:"desktop_id"`
		NextAfter *int64 `json:"next_after"`
		Tools     []map[string]string
		Messages  []struct {
			Role string
			N    int
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range doc.Messages {
		order = append(order, fmt.Sprint(m.Role[:1], m.N))
	}
	if doc.Format != "anthropic" || doc.DesktopID != "d1" || doc.NextAfter != nil || len(doc.Tools) != 2 ||
		strings.Join(order, " ") != "a1 u1 a2 u2 a3 u3" {
		t.Errorf("export %s", b)
	}

	// The bureau format to standard output; a refusal is the server's.
	f.json("GET /api/v1/desktops/d1/steps/export", 200, map[string]any{"format": "bureau", "desktop_id": "d1", "steps": []*steps.Step{step(1, "clipboard", `{"chars":1}`)}})
	out, _, err := f.run("steps", "export", "d1", "--after", "0")
	if err != nil || !strings.Contains(out, `"chars": 1`) || !strings.Contains(out, `"format": "bureau"`) {
		t.Errorf("stdout %s %v", out, err)
	}
	if reqs := f.requests(); reqs[len(reqs)-1] != "GET /api/v1/desktops/d1/steps/export?after=0&format=bureau" {
		t.Errorf("requests %q", reqs)
	}
	f.json("GET /api/v1/desktops/d1/steps/export", 422, map[string]any{"error": map[string]string{"code": "invalid", "message": "format: must be one of bureau, anthropic, openai", "field": "format"}})
	if _, _, err := f.run("steps", "export", "d1", "--format", "gemini"); err == nil || !strings.Contains(err.Error(), "must be one of") {
		t.Errorf("bad format: %v", err)
	}
}

func TestStepsThumbnail(t *testing.T) {
	f := newFakeBureau(t)
	f.routes["GET /api/v1/desktops/d1/steps/7/thumbnails/before"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg")
		w.Write([]byte("\xff\xd8 jpeg"))
	}
	file := filepath.Join(t.TempDir(), "before.jpg")
	if _, _, err := f.run("steps", "thumbnail", "agent-1", "7", "before", "-o", file); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "\xff\xd8 jpeg" {
		t.Errorf("file %q", b)
	}
	out, _, err := f.run("steps", "thumbnail", "agent-1", "7", "before", "-o", "-")
	if err != nil || out != "\xff\xd8 jpeg" {
		t.Errorf("stdout %q %v", out, err)
	}
	n := len(f.requests())
	for _, args := range [][]string{{"agent-1", "7", "during", "-o", file}, {"agent-1", "0", "after", "-o", file}, {"agent-1", "7", "after"}} {
		if _, _, err := f.run(append([]string{"steps", "thumbnail"}, args...)...); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if len(f.requests()) != n {
		t.Errorf("bad arguments were sent: %q", f.requests()[n:])
	}
	if _, _, err := f.run("steps", "thumbnail", "agent-1", "8", "after", "-o", file); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("no thumbnail: %v", err)
	}
}

func TestStepsRevert(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	f.json("POST /api/v1/desktops/d1/steps/42/revert", 202, map[string]any{
		"desktop":            map[string]any{"id": "d1", "name": "agent-1", "state": "running"},
		"snapshot":           map[string]any{"name": "clean", "created_at": "2025-03-04T05:00:00Z"},
		"holds_through_step": 40,
	})
	out, _, err := f.run("steps", "revert", "agent-1", "42", "--wait", "1m")
	if err != nil {
		t.Fatal(err)
	}
	want := `desktop agent-1 reverting to snapshot "clean" (taken 2025-03-04 05:00:00), from before step 42: it holds the steps through 40; the steps after 40 are undone
desktop agent-1 is running
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if reqs := f.requests(); reqs[len(reqs)-1] != "POST /api/v1/desktops/d1/steps/42/revert" {
		t.Errorf("requests %q", reqs)
	}
	out, _, err = f.run("steps", "revert", "d1", "42", "--json")
	var res struct {
		HoldsThroughStep int64 `json:"holds_through_step"`
		Snapshot         struct{ Name string }
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.HoldsThroughStep != 40 || res.Snapshot.Name != "clean" {
		t.Errorf("--json: %s %v", out, err)
	}

	f.json("POST /api/v1/desktops/d1/steps/1/revert", 409, map[string]any{"error": map[string]string{"code": "conflict", "message": "no snapshot of this desktop was taken before step 1 began"}})
	if _, _, err := f.run("steps", "revert", "agent-1", "1"); err == nil || err.Error() != "no snapshot of this desktop was taken before step 1 began (HTTP 409 conflict)" {
		t.Errorf("no snapshot: %v", err)
	}
	if _, _, err := f.run("steps", "revert", "agent-1", "x"); err == nil || !strings.Contains(err.Error(), "want a step number") {
		t.Errorf("a bad step: %v", err)
	}
}
