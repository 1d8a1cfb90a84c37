package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
)

// streamGate holds the "gated" fake command after its first line until the
// test has read that line: proof that events are flushed as they come.
var streamGate = make(chan struct{})

// ExecStream of the fake guest plays a command chosen by r.Cmd.
func (g *fakeGuest) ExecStream(_ context.Context, _ string, r guest.ExecRequest, out guest.StreamOutput) (*guest.ExecResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.Cmd == "agent-down" {
		return nil, fmt.Errorf("no agent: %w", desktop.ErrUnavailable)
	}
	if err := out.Started(); err != nil {
		return nil, err
	}
	out.Output("stdout", []byte("line 1\n"))
	switch r.Cmd {
	case "gated":
		select {
		case <-streamGate:
		case <-time.After(5 * time.Second):
			return nil, errors.New("the test never read the first line")
		}
	case "dies":
		return nil, fmt.Errorf("the guest agent stopped answering: %w", desktop.ErrUnavailable)
	}
	out.Output("stderr", []byte("\xff\xfe"))
	out.Output("stdout", []byte("line \"2\"\n"))
	return &guest.ExecResult{ExitCode: 7, Truncated: true, DurationMS: 1500}, nil
}

type sseEvent struct {
	kind string
	data map[string]any
}

// readEvent reads the next event, skipping comments.
func readEvent(t *testing.T, rd *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v (event so far %+v)", err, ev)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && ev.kind != "":
			return ev
		case strings.HasPrefix(line, "event: "):
			ev.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		}
	}
}

func (e *env) post(t *testing.T, token, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestExecStream(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"streamer"}`)
	id := d["id"].(string)
	path := "/api/v1/desktops/" + id + "/exec?stream=true"

	// Not running yet: a JSON 409, not a stream.
	if code, r := e.do(t, e.alice, "POST", path, `{"cmd":"gated"}`); code != 409 || errCode(r) != "invalid_state" {
		t.Errorf("exec in a desktop being created: %d %v", code, r)
	}
	e.desktops.desktops[id].State = desktop.StateRunning

	// Invalid requests are JSON 422s before any stream.
	for _, body := range []string{`{}`, `{"cmd":"x","timeout_s":-1}`, `{"cmd":"x","max_output_bytes":999999999}`} {
		resp := e.post(t, e.alice, path, body)
		var r map[string]any
		json.NewDecoder(resp.Body).Decode(&r)
		if resp.StatusCode != 422 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || errCode(r) != "invalid" {
			t.Errorf("%s: %d %s %v", body, resp.StatusCode, resp.Header.Get("Content-Type"), r)
		}
	}
	if code, r := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/exec?stream=perhaps", `{"cmd":"x"}`); code != 422 || errCode(r) != "invalid" {
		t.Errorf("stream=perhaps: %d %v", code, r)
	}
	// A guest that cannot start the command: a JSON 503.
	if code, r := e.do(t, e.alice, "POST", path, `{"cmd":"agent-down"}`); code != 503 || errCode(r) != "unavailable" {
		t.Errorf("agent down: %d %v", code, r)
	}
	// Another owner's desktop stays hidden.
	if code, _ := e.do(t, e.bob, "POST", path, `{"cmd":"gated"}`); code != 404 {
		t.Errorf("bob streams alice's desktop: %d", code)
	}

	// The stream: each event as it comes, then the exit.
	resp := e.post(t, e.alice, path, `{"cmd":"gated"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	if ev := readEvent(t, rd); ev.kind != "stdout" || ev.data["data"] != "line 1\n" || ev.data["encoding"] != nil {
		t.Errorf("first event %+v", ev)
	}
	streamGate <- struct{}{} // only now does the command go on
	want := []sseEvent{
		{"stderr", map[string]any{"data": "//4=", "encoding": "base64"}},
		{"stdout", map[string]any{"data": "line \"2\"\n"}},
		{"exit", map[string]any{"exit_code": 7.0, "timed_out": false, "truncated": true, "duration_ms": 1500.0}},
	}
	for _, w := range want {
		ev := readEvent(t, rd)
		got, _ := json.Marshal(ev.data)
		exp, _ := json.Marshal(w.data)
		if ev.kind != w.kind || string(got) != string(exp) {
			t.Errorf("event %s %s, want %s %s", ev.kind, got, w.kind, exp)
		}
	}
	if rest, _ := io.ReadAll(rd); len(rest) != 0 {
		t.Errorf("after the exit: %q", rest)
	}

	// An error once the stream has begun is an error event.
	rd = bufio.NewReader(e.post(t, e.alice, path, `{"cmd":"dies"}`).Body)
	readEvent(t, rd)
	if ev := readEvent(t, rd); ev.kind != "error" || !strings.Contains(fmt.Sprint(ev.data["message"]), "stopped answering") {
		t.Errorf("error event %+v", ev)
	}

	// Without stream, exec answers JSON as before.
	if code, r := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/exec", `{"cmd":"echo hi"}`); code != 200 || r["stdout"] != "echo hi" {
		t.Errorf("plain exec: %d %v", code, r)
	}
}
