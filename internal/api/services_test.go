package api

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServicesThroughTheAPI(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	base := "/api/v1/desktops/" + id
	if code, body := e.do(t, e.alice, "PUT", "/api/v1/secrets/API_KEY", `{"value":"k3y-value-42"}`); code != 200 {
		t.Fatalf("set secret: %d %v", code, body)
	}
	svc := `{"name":"web","cmd":"echo \"key=$API_KEY\"; exec sleep 60","port":8080,"secrets":["API_KEY"]}`
	code, sv := e.do(t, e.alice, "POST", base+"/services", svc)
	if code != 201 || sv["name"] != "web" || sv["url"] != base+"/ports/8080/" || sv["restart"] != "on-failure" {
		t.Fatalf("create: %d %v", code, sv)
	}
	t.Cleanup(func() { e.do(t, e.alice, "DELETE", base+"/services/web", "") })
	if code, body := e.do(t, e.alice, "POST", base+"/services", svc); code != 409 {
		t.Errorf("a second create of web: %d %v", code, body)
	}
	for _, bad := range []string{
		`{"name":"x","cmd":"true","secrets":["NOPE"]}`,
		`{"name":"Bad","cmd":"true"}`,
		`{"name":"x","cmd":"true","restart":"sometimes"}`,
		`{"name":"x","cmd":"true","secrets":["API_KEY"],"env":{"API_KEY":"y"}}`,
		`{"name":"x"}`,
	} {
		if code, body := e.do(t, e.alice, "POST", base+"/services", bad); code != 422 {
			t.Errorf("%s: %d %v", bad, code, body)
		}
	}
	if code, _ := e.do(t, e.bob, "GET", base+"/services", ""); code != 404 {
		t.Errorf("bob lists alice's services: %d", code)
	}
	if code, _ := e.do(t, "", "GET", base+"/services", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}
	var log string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && log == ""; time.Sleep(50 * time.Millisecond) {
		log = e.text(t, e.alice, base+"/services/web/logs")
	}
	if log != "key=[secret API_KEY]\n" {
		t.Fatalf("log %q: the secret's value is not scrubbed", log)
	}
	code, list := e.do(t, e.alice, "GET", base+"/services", "")
	if l, _ := list["services"].([]any); code != 200 || len(l) != 1 || l[0].(map[string]any)["state"] != "running" {
		t.Fatalf("list: %d %v", code, list)
	}
	// A followed log is a stream of events.
	req, _ := http.NewRequest("GET", e.srv.URL+base+"/services/web/logs?follow=true", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("follow: %v %v", resp, err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	if got := sc.Text(); got != `data: {"data":"key=[secret API_KEY]\n"}` {
		t.Errorf("first event %q", got)
	}
	resp.Body.Close()
	// Exec output that echoes a secret is scrubbed too (the fake guest
	// answers with the command line).
	code, res := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"echo k3y-value-42","secrets":["API_KEY"]}`)
	if code != 200 || res["stdout"] != "echo [secret API_KEY]" {
		t.Errorf("exec: %d %v", code, res)
	}
	if code, res := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"true","secrets":["NOPE"]}`); code != 422 {
		t.Errorf("exec naming an unknown secret: %d %v", code, res)
	}
	for action, want := range map[string]string{"stop": "stopped", "start": "running", "restart": "running"} {
		code, got := e.do(t, e.alice, "POST", base+"/services/web/"+action, "")
		if code != 200 || got["state"] != want && !(action != "stop" && got["state"] == "starting") {
			t.Errorf("%s: %d %v", action, code, got)
		}
	}
	if code, _ := e.do(t, e.alice, "DELETE", base+"/services/web", ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := e.do(t, e.alice, "GET", base+"/services/web", ""); code != 404 {
		t.Errorf("after delete: %d", code)
	}
}

// text GETs path and returns the body of a 200.
func (e *env) text(t *testing.T, token, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}
