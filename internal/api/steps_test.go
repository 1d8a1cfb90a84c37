package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stepsOf lists a desktop's steps once n are recorded (they are recorded
// just after each call answers).
func stepsOf(t *testing.T, e *env, token, id string, n int) []map[string]any {
	t.Helper()
	var list []any
	waitFor(t, "steps recorded", func() bool {
		_, body := e.do(t, token, "GET", "/api/v1/desktops/"+id+"/steps", "")
		list, _ = body["steps"].([]any)
		return len(list) >= n
	})
	out := []map[string]any{}
	for _, x := range list {
		out = append(out, x.(map[string]any))
	}
	return out
}

func TestStepLogRecordsWhatAnAgentDoes(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	if code, body := e.do(t, e.alice, "POST", base+"/computer", `{"actions":[{"action":"left_click","coordinate":[10,20]},{"action":"type","text":"hello"}]}`); code != 200 {
		t.Fatalf("computer: %d %v", code, body)
	}
	time.Sleep(settleFor + 100*time.Millisecond) // its picture after
	if code, body := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"echo hi","env":{"TOKEN":"s3cret-value"}}`); code != 200 {
		t.Fatalf("exec: %d %v", code, body)
	}
	if code, body := e.do(t, e.alice, "PUT", base+"/files?path=/home/agent/notes.txt", "the file's content"); code != 201 {
		t.Fatalf("write: %d %v", code, body)
	}
	if code, _ := e.do(t, e.alice, "POST", base+"/computer", `{"action":"left_click","bogus":1}`); code != 400 {
		t.Fatalf("a bad action: %d", code)
	}
	if code, _ := e.do(t, e.alice, "PUT", base+"/clipboard", `{"text":"copied words"}`); code != 204 && code != 200 {
		t.Fatalf("clipboard: %d", code)
	}
	list := stepsOf(t, e, e.alice, id, 5)
	kinds := []string{}
	for i, st := range list {
		kinds = append(kinds, st["kind"].(string))
		if st["seq"] != float64(i+1) || !strings.HasPrefix(st["actor"].(string), "alice/tok_") {
			t.Errorf("step %d: %v", i, st)
		}
	}
	if strings.Join(kinds, " ") != "computer exec file_write computer clipboard" {
		t.Fatalf("kinds %v", kinds)
	}
	click := list[0]
	actions := click["input"].(map[string]any)["actions"].([]any)
	if len(actions) != 2 || actions[1].(map[string]any)["text"] != "hello" || click["status"] != 200.0 ||
		click["thumbnail_before"] != true || click["thumbnail_after"] != true {
		t.Errorf("computer step %v", click)
	}
	all, _ := json.Marshal(list)
	if strings.Contains(string(all), "s3cret-value") || strings.Contains(string(all), "the file's content") || strings.Contains(string(all), "copied words") {
		t.Errorf("a step keeps an env value, a file's content or the clipboard: %s", all)
	}
	if env := list[1]["input"].(map[string]any)["env"].([]any); len(env) != 1 || env[0] != "TOKEN" {
		t.Errorf("exec env names %v", env)
	}
	if r := list[1]["result"].(map[string]any); r["stdout"] != "echo hi" {
		t.Errorf("exec result %v", r)
	}
	if in, r := list[2]["input"].(map[string]any), list[2]["result"].(map[string]any); in["path"] != "/home/agent/notes.txt" || r["size"] != 18.0 {
		t.Errorf("file step %v %v", in, r)
	}
	if bad := list[3]; bad["status"] != 400.0 || bad["error"] == nil || bad["error"] == "" {
		t.Errorf("a refused action is a failed step: %v", bad)
	}
	if in := list[4]["input"].(map[string]any); in["chars"] != 12.0 {
		t.Errorf("clipboard step %v", in)
	}

	// One step, its pictures, and what is refused.
	if code, st := e.do(t, e.alice, "GET", base+"/steps/2", ""); code != 200 || st["kind"] != "exec" {
		t.Errorf("get step 2: %d %v", code, st)
	}
	resp, err := http.Get(e.srv.URL + base + "/steps/1/thumbnails/before")
	if err != nil || resp.StatusCode != 401 {
		t.Errorf("a thumbnail without a token: %v %v", resp.StatusCode, err)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+base+"/steps/1/thumbnails/after", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Errorf("thumbnail: %v %v", resp.StatusCode, err)
	}
	for path, want := range map[string]int{
		"/steps/99": 404, "/steps/0": 422, "/steps/x": 422, "/steps/1/thumbnails/sideways": 422,
		"/steps?limit=0": 422, "/steps?after=-1": 422, "/steps/export?format=xml": 422,
	} {
		if code, body := e.do(t, e.alice, "GET", base+path, ""); code != want {
			t.Errorf("%s: %d %v, want %d", path, code, body, want)
		}
	}
	// Another owner sees none of it.
	for _, path := range []string{"/steps", "/steps/1", "/steps/1/thumbnails/after", "/steps/export"} {
		if code, _ := e.do(t, e.bob, "GET", base+path, ""); code != 404 {
			t.Errorf("bob GET %s: %d", path, code)
		}
	}
	if code, _ := e.do(t, e.bob, "POST", base+"/steps/1/revert", ""); code != 404 {
		t.Errorf("bob reverts alice's step: %d", code)
	}
	// bob's calls on alice's desktop are not her steps.
	e.do(t, e.bob, "POST", base+"/exec", `{"cmd":"id"}`)
	time.Sleep(50 * time.Millisecond)
	if n := len(stepsOf(t, e, e.alice, id, 5)); n != 5 {
		t.Errorf("%d steps after bob's refused call", n)
	}
	for q, want := range map[string]string{"after=3&limit=1": "4", "newest=true&limit=2": "4 5", "before=3&newest=true&limit=1": "2", "before=3": "1 2"} {
		code, page := e.do(t, e.alice, "GET", base+"/steps?"+q, "")
		var got []string
		for _, st := range page["steps"].([]any) {
			got = append(got, fmt.Sprint(st.(map[string]any)["seq"]))
		}
		if code != 200 || strings.Join(got, " ") != want {
			t.Errorf("steps?%s: %d %v, want %s", q, code, got, want)
		}
	}
	if code, _ := e.do(t, e.alice, "GET", base+"/steps?follow=true&newest=true", ""); code != 422 {
		t.Errorf("follow with newest: %d", code)
	}
}

func TestStepExportAndRevert(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	e.do(t, e.alice, "POST", base+"/computer", `{"type":"click","x":5,"y":6,"button":"left"}`)
	stepsOf(t, e, e.alice, id, 1)
	time.Sleep(5 * time.Millisecond)
	if code, _ := e.do(t, e.alice, "POST", base+"/snapshots", `{"name":"cp1"}`); code != 202 && code != 201 {
		t.Fatalf("snapshot: %d", code)
	}
	time.Sleep(5 * time.Millisecond)
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"rm -rf work"}`)
	stepsOf(t, e, e.alice, id, 2)

	code, ex := e.do(t, e.alice, "GET", base+"/steps/export?format=anthropic", "")
	if code != 200 || ex["format"] != "anthropic" || len(ex["messages"].([]any)) != 4 {
		t.Fatalf("anthropic export: %d %v", code, ex)
	}
	use := ex["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	if in := use["input"].(map[string]any); in["action"] != "left_click" {
		t.Errorf("an OpenAI click exported to Anthropic: %v", use)
	}
	code, ex = e.do(t, e.alice, "GET", base+"/steps/export?format=openai&images=false", "")
	if code != 200 || len(ex["input"].([]any)) != 4 {
		t.Fatalf("openai export: %d %v", code, ex)
	}
	if out := ex["input"].([]any)[1].(map[string]any); out["output"] != nil {
		t.Errorf("images=false still carries a picture: %v", out)
	}
	if code, ex = e.do(t, e.alice, "GET", base+"/steps/export?limit=1", ""); code != 200 || ex["next_after"] != 1.0 || len(ex["steps"].([]any)) != 1 {
		t.Errorf("a page of the export: %d %v", code, ex)
	}

	// Step 1 began before any snapshot; step 2 after cp1.
	if code, body := e.do(t, e.alice, "POST", base+"/steps/1/revert", ""); code != 409 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "no snapshot") {
		t.Errorf("revert before the first snapshot: %d %v", code, body)
	}
	code, body := e.do(t, e.alice, "POST", base+"/steps/2/revert", "")
	if code != 202 || body["snapshot"].(map[string]any)["name"] != "cp1" || body["holds_through_step"] != 1.0 || e.desktops.lastRevert != "cp1" {
		t.Errorf("revert to before step 2: %d %v (reverted to %q)", code, body, e.desktops.lastRevert)
	}
}

func TestStepLogFollow(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"one"}`)
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"two"}`)
	stepsOf(t, e, e.alice, id, 2)
	req, _ := http.NewRequest("GET", e.srv.URL+base+"/steps?follow=true&after=1", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("follow: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data: ") {
				lines <- l
			}
		}
		close(lines)
	}()
	next := func() map[string]any {
		select {
		case l := <-lines:
			var st map[string]any
			json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &st)
			return st
		case <-time.After(5 * time.Second):
			t.Fatal("no step event")
		}
		return nil
	}
	if st := next(); st["seq"] != 2.0 {
		t.Errorf("first event %v, want step 2 (after=1)", st)
	}
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"three"}`)
	if st := next(); st["seq"] != 3.0 || st["input"].(map[string]any)["cmd"] != "three" {
		t.Errorf("a new step %v", st)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 0))
}

// checkpoint=true snapshots the desktop just before the call, and
// reverting to before that step goes to it.
func TestStepCheckpoint(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	if code, body := e.do(t, e.alice, "POST", base+"/exec?checkpoint=maybe", `{"cmd":"true"}`); code != 422 || errField(body) != "checkpoint" {
		t.Errorf("checkpoint=maybe: %d %v", code, body)
	}
	if code, _ := e.do(t, e.alice, "POST", base+"/exec?checkpoint=true", `{"cmd":"rm -rf ~/work"}`); code != 200 {
		t.Fatalf("exec with a checkpoint: %d", code)
	}
	st := stepsOf(t, e, e.alice, id, 1)[0]
	name, _ := st["checkpoint"].(string)
	if !strings.HasPrefix(name, "checkpoint-") || e.desktops.lastSnapshot.Name != name || *e.desktops.lastSnapshot.Memory {
		t.Fatalf("step %v, snapshot asked %+v", st, e.desktops.lastSnapshot)
	}
	if code, r := e.do(t, e.alice, "POST", base+"/steps/1/revert", ""); code != 202 || r["snapshot"].(map[string]any)["name"] != name {
		t.Errorf("revert to before the step: %d %v", code, r)
	}
	e.do(t, e.alice, "PUT", base+"/files?path=/tmp/x&checkpoint=memory", "x")
	if !*e.desktops.lastSnapshot.Memory {
		t.Errorf("checkpoint=memory took %+v", e.desktops.lastSnapshot)
	}
}

// Calls in quick succession do not wait for pictures: a burst's steps go
// without the pictures between them, the next call after a short pause
// reuses the last picture as its before, and only one after a long pause
// takes a fresh one.
func TestStepPicturesStayOffTheCallsPath(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	move := func() {
		if code, _ := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/computer", `{"action":"mouse_move","coordinate":[1,1]}`); code != 200 {
			t.Fatal(code)
		}
	}
	move() // a fresh before (nothing to reuse)
	for i := 0; i < 4; i++ {
		move() // a burst
	}
	list := stepsOf(t, e, e.alice, id, 5)
	if n := e.computer.shots.Load(); n != 2 {
		t.Errorf("%d screenshots for a burst of 5 calls, want 2 (before the first, after the last)", n)
	}
	for i, st := range list {
		before, after := st["thumbnail_before"] == true, st["thumbnail_after"] == true
		if before != (i == 0) || after != (i == 4) {
			t.Errorf("step %d: before %v after %v", i+1, before, after)
		}
	}
	time.Sleep(settleFor + 200*time.Millisecond)
	e.computer.shots.Store(0)
	move() // within reuseWithin of the last picture: reused
	time.Sleep(settleFor + 200*time.Millisecond)
	if n := e.computer.shots.Load(); n != 1 {
		t.Errorf("%d screenshots for a call after a short pause, want 1 (its after)", n)
	}
	if st := stepsOf(t, e, e.alice, id, 6)[5]; st["thumbnail_before"] != true || st["thumbnail_after"] != true {
		t.Errorf("the call after a short pause: %v", st)
	}
}
