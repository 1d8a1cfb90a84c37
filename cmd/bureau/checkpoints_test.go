package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestCheckpointsCmd(t *testing.T) {
	f := newFakeBureau(t)
	policy := map[string]any{"every_steps": 0, "before": []string{}, "memory": false, "keep": 5}
	var put map[string]any
	f.json("GET /api/v1/desktops/d1/checkpoints", 200, policy)
	f.routes["PUT /api/v1/desktops/d1/checkpoints"] = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		put = nil
		json.Unmarshal(b, &put)
		writeJSON(w, 200, put)
	}
	out, _, err := f.run("desktop", "checkpoints", "agent-1")
	if err != nil || out != "automatic checkpoints: off (keep 5)\n" {
		t.Fatalf("show: %q %v", out, err)
	}
	if put != nil {
		t.Errorf("showing the policy set it: %v", put)
	}
	out, _, err = f.run("desktop", "checkpoints", "agent-1", "--every", "10", "--before", "exec,file_delete", "--memory")
	if err != nil || put["every_steps"] != 10.0 || put["memory"] != true || put["keep"] != 5.0 || len(put["before"].([]any)) != 2 {
		t.Fatalf("set: %v %v", put, err)
	}
	if want := "automatic checkpoints: every 10 steps and before each exec, file_delete; the disks and RAM; the newest 5 kept\n"; out != want {
		t.Errorf("set printed %q, want %q", out, want)
	}
	// Flags left out keep the policy as it is (here, the fake's).
	f.json("GET /api/v1/desktops/d1/checkpoints", 200, map[string]any{"every_steps": 3, "before": []string{"exec"}, "memory": true, "keep": 9})
	f.run("desktop", "checkpoints", "agent-1", "--keep", "2")
	if put["every_steps"] != 3.0 || put["memory"] != true || put["keep"] != 2.0 || len(put["before"].([]any)) != 1 {
		t.Errorf("--keep alone: %v", put)
	}
	f.run("desktop", "checkpoints", "agent-1", "--off")
	if put["every_steps"] != 0.0 || len(put["before"].([]any)) != 0 || put["keep"] != 9.0 {
		t.Errorf("--off: %v", put)
	}
	if _, _, err := f.run("desktop", "checkpoints", "agent-1", "--off", "--every", "2"); err == nil || !strings.Contains(err.Error(), "pick one") {
		t.Errorf("--off --every: %v", err)
	}
	out, _, _ = f.run("desktop", "checkpoints", "agent-1", "--json")
	if !strings.Contains(out, `"every_steps": 3`) {
		t.Errorf("--json: %s", out)
	}
}
