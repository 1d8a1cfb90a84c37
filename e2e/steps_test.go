//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/jpeg"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
)

// stepList is GET /steps.
type stepList struct {
	Steps []steps.Step `json:"steps"`
}

// waitSteps lists a desktop's steps above after once n are recorded.
func (s *server) waitSteps(token, id string, after int64, n int) []steps.Step {
	s.t.Helper()
	var l stepList
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if code := s.call(token, "GET", "/api/v1/desktops/"+id+"/steps?after="+strconv.FormatInt(after, 10), nil, &l); code != 200 {
			s.t.Fatalf("list steps: %d", code)
		}
		if len(l.Steps) >= n {
			return l.Steps
		}
	}
	s.t.Fatalf("%d steps after %d, want %d: %+v", len(l.Steps), after, n, l.Steps)
	return nil
}

// testStepLog: what an agent does in the desktop is a step log with
// pictures of the screen, followed live, exported in both model formats,
// and "revert to before step N" undoes the step's file change.
func testStepLog(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	var last stepList
	s.call(token, "GET", base+"/steps?limit=1000", nil, &last)
	var from int64
	if n := len(last.Steps); n > 0 {
		from = last.Steps[n-1].Seq
	}
	marker := "/home/agent/step-marker.txt"
	if code := s.putRaw(token, base+"/files?path="+marker, "application/octet-stream", []byte("before\n")); code != 201 {
		t.Fatalf("write the marker: %d", code)
	}
	s.waitSteps(token, d.ID, from, 1)

	// A follower sees the next steps as they happen.
	req, _ := http.NewRequest("GET", s.url+base+"/steps?follow=true&after="+strconv.FormatInt(from+1, 10), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("follow: %v %v", resp, err)
	}
	defer resp.Body.Close()
	followed := make(chan steps.Step, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var st steps.Step
				if json.Unmarshal([]byte(l), &st) == nil {
					followed <- st
				}
			}
		}
	}()

	if code := s.call(token, "POST", base+"/computer", map[string]any{"actions": []map[string]any{
		{"action": "mouse_move", "coordinate": []int{640, 400}}, {"type": "move", "x": 600, "y": 380}}}, nil); code != 200 {
		t.Fatalf("computer: %d", code)
	}
	// Calls closer than a quarter of a second are a burst, whose steps go
	// without the pictures between them: pause as an agent thinking does.
	pause := func() { time.Sleep(400 * time.Millisecond) }
	pause()
	var ex struct {
		ExitCode int `json:"exit_code"`
	}
	// A checkpoint (with the RAM) just before the exec.
	if code := s.call(token, "POST", base+"/exec?checkpoint=memory", map[string]any{"cmd": "echo after > " + marker}, &ex); code != 200 || ex.ExitCode != 0 {
		t.Fatalf("exec: %d %+v", code, ex)
	}
	pause()
	s.expectError(token, "POST", base+"/exec", map[string]any{"cmd": "true", "user": "Not A User"}, 422, "invalid")
	list := s.waitSteps(token, d.ID, from+1, 3)
	move, change, refused := list[0], list[1], list[2]
	if move.Kind != steps.KindComputer || !move.Before || !move.After || move.Status != 200 || !strings.Contains(string(move.Input), "mouse_move") {
		t.Errorf("the computer step: %+v", move)
	}
	if change.Checkpoint != "" {
		defer s.call(token, "DELETE", base+"/snapshots/"+change.Checkpoint, nil, nil)
	}
	if !change.Before || !change.After || !refused.Before || !refused.After {
		t.Errorf("pictures of calls a pause apart: exec %v/%v, refused exec %v/%v", change.Before, change.After, refused.Before, refused.After)
	}
	if change.Kind != steps.KindExec || change.Status != 200 || !strings.Contains(string(change.Input), "echo after") || !strings.HasPrefix(change.Checkpoint, "checkpoint-") ||
		!strings.Contains(string(change.Result), `"exit_code":0`) || !strings.HasPrefix(change.Actor, "alice/") {
		t.Errorf("the exec step: %+v input %s result %s", change, change.Input, change.Result)
	}
	if refused.Status != 422 || refused.Error == "" {
		t.Errorf("a refused exec is a failed step: %+v", refused)
	}
	for _, want := range []int64{move.Seq, change.Seq} {
		select {
		case st := <-followed:
			if st.Seq != want {
				t.Errorf("followed step %d, want %d", st.Seq, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("step %d was not followed", want)
		}
	}

	// The pictures are the desktop's screen, small.
	var pic []byte
	if code := s.call(token, "GET", base+"/steps/"+strconv.FormatInt(move.Seq, 10)+"/thumbnails/after", nil, &pic); code != 200 {
		t.Fatalf("thumbnail: %d", code)
	}
	img, err := jpeg.Decode(bytes.NewReader(pic))
	if err != nil || img.Bounds().Dx() != 320 {
		t.Errorf("thumbnail: %v %v", err, img)
	}

	// Exports for replay.
	var anth struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	s.call(token, "GET", base+"/steps/export?format=anthropic&after="+strconv.FormatInt(from+1, 10), nil, &anth)
	if len(anth.Messages) < 4 || anth.Messages[0].Role != "assistant" || len(anth.Messages[0].Content) != 2 ||
		anth.Messages[0].Content[1]["input"].(map[string]any)["action"] != "mouse_move" || anth.Messages[2].Content[0]["name"] != "bash" {
		t.Errorf("anthropic export: %+v", anth.Messages)
	}
	var oai struct {
		Input []map[string]any `json:"input"`
	}
	s.call(token, "GET", base+"/steps/export?format=openai&after="+strconv.FormatInt(from+1, 10), nil, &oai)
	if len(oai.Input) < 4 || oai.Input[0]["type"] != "computer_call" || oai.Input[0]["action"].(map[string]any)["type"] != "move" ||
		!strings.HasPrefix(oai.Input[1]["output"].(map[string]any)["image_url"].(string), "data:image/jpeg;base64,") {
		t.Errorf("openai export: %v", oai.Input[:min(2, len(oai.Input))])
	}

	// The web console's Steps tab shows them with their pictures, and
	// downloads the export, in a real browser.
	shot := filepath.Join(os.TempDir(), "bureau-e2e-steps.png")
	cmd := exec.Command("node", "steps.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "TOKEN="+token, "DESKTOP="+d.ID, "SCREENSHOT="+shot, "MIN_STEPS=3", "EXPORT=anthropic")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser: %v\n%s", err, stderr.String())
	}
	var page struct {
		Rows  int `json:"rows"`
		First struct {
			Seq        int64 `json:"seq"`
			ThumbWidth int   `json:"thumb_width"`
		} `json:"first"`
		Detail struct {
			BeforeWidth int `json:"before_width"`
			AfterWidth  int `json:"after_width"`
		} `json:"detail"`
		Export struct {
			Items int `json:"items"`
		} `json:"export"`
		Errors []string `json:"errors"`
	}
	json.Unmarshal(stdout.Bytes(), &page)
	if page.Rows < 3 || page.First.Seq != refused.Seq || page.First.ThumbWidth != 320 || page.Detail.BeforeWidth != 320 ||
		page.Detail.AfterWidth != 320 || page.Export.Items == 0 || len(page.Errors) > 0 {
		t.Errorf("the console's Steps tab (see %s): %s", shot, stdout.String())
	}

	// Revert to before the exec: its checkpoint, where the marker was as
	// the file write left it.
	var rv struct {
		Snapshot apiv1.Snapshot `json:"snapshot"`
		Holds    int64          `json:"holds_through_step"`
	}
	if code := s.call(token, "POST", base+"/steps/"+strconv.FormatInt(change.Seq, 10)+"/revert", nil, &rv); code != http.StatusAccepted ||
		rv.Snapshot.Name != change.Checkpoint || rv.Holds != move.Seq {
		t.Fatalf("revert to before step %d: %d %+v", change.Seq, code, rv)
	}
	s.waitState(token, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(d, 2*time.Minute)
	if out, _ := s.guest(d, "cat "+marker); out != "before" {
		t.Errorf("marker after reverting to before step %d: %q", change.Seq, out)
	}
	testAutoCheckpoints(t, s, token, d)

	var metrics []byte
	s.call(adminToken, "GET", "/metrics", nil, &metrics)
	if !strings.Contains(string(metrics), `bureau_steps_total{kind="exec",result="ok"}`) {
		t.Error("no step counts in /metrics")
	}
}

// testAutoCheckpoints: with a checkpoint policy (every 2nd step, the
// newest 1 kept, with the RAM so a revert needs no boot) the steps carry
// automatic checkpoints, only the newest stays, and reverting to a step
// goes back to exactly before it.
func testAutoCheckpoints(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	var last stepList
	s.call(token, "GET", base+"/steps?newest=true&limit=1", nil, &last)
	var from int64
	if len(last.Steps) > 0 {
		from = last.Steps[0].Seq
	}
	if code := s.call(token, "PUT", base+"/checkpoints", map[string]any{"every_steps": 2, "keep": 1, "memory": true}, nil); code != 200 {
		t.Fatalf("set the checkpoint policy: %d", code)
	}
	defer s.call(token, "PUT", base+"/checkpoints", map[string]any{}, nil)
	marker := "/home/agent/auto-marker.txt"
	for _, word := range []string{"one", "two", "three"} {
		var ex struct {
			ExitCode int `json:"exit_code"`
		}
		if code := s.call(token, "POST", base+"/exec", map[string]any{"cmd": "echo " + word + " > " + marker}, &ex); code != 200 || ex.ExitCode != 0 {
			t.Fatalf("exec %s: %d %+v", word, code, ex)
		}
	}
	list := s.waitSteps(token, d.ID, from, 3)
	first, second, third := list[0], list[1], list[2]
	if third.Checkpoint != "" {
		defer s.call(token, "DELETE", base+"/snapshots/"+third.Checkpoint, nil, nil)
	}
	if !strings.HasPrefix(first.Checkpoint, "auto-") || second.Checkpoint != "" || !strings.HasPrefix(third.Checkpoint, "auto-") ||
		first.CheckpointError != "" || third.CheckpointError != "" {
		t.Fatalf("checkpoints of 3 steps under every_steps 2: %q %q %q (errors %q %q)", first.Checkpoint, second.Checkpoint, third.Checkpoint,
			first.CheckpointError, third.CheckpointError)
	}
	var snaps struct {
		Snapshots []apiv1.Snapshot `json:"snapshots"`
	}
	s.call(token, "GET", base+"/snapshots", nil, &snaps)
	var auto []string
	for _, sn := range snaps.Snapshots {
		if strings.HasPrefix(sn.Name, "auto-") {
			auto = append(auto, sn.Name)
			if !sn.Memory {
				t.Errorf("an automatic checkpoint of a memory policy: %+v", sn)
			}
		}
	}
	if len(auto) != 1 || auto[0] != third.Checkpoint {
		t.Errorf("automatic checkpoints kept %v, want only %s", auto, third.Checkpoint)
	}
	var rv struct {
		Snapshot apiv1.Snapshot `json:"snapshot"`
		Holds    int64          `json:"holds_through_step"`
	}
	if code := s.call(token, "POST", base+"/steps/"+strconv.FormatInt(third.Seq, 10)+"/revert", nil, &rv); code != http.StatusAccepted ||
		rv.Snapshot.Name != third.Checkpoint || rv.Holds != second.Seq {
		t.Fatalf("revert to before step %d: %d %+v", third.Seq, code, rv)
	}
	s.waitState(token, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(d, 2*time.Minute)
	if out, _ := s.guest(d, "cat "+marker); out != "two" {
		t.Errorf("marker after reverting to before step %d: %q, want two", third.Seq, out)
	}
}
