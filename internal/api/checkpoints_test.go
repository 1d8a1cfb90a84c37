package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheckpointPolicyRoutes(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	path := "/api/v1/desktops/" + id + "/checkpoints"
	code, p := e.do(t, e.alice, "GET", path, "")
	if code != 200 || p["every_steps"] != 0.0 || fmt.Sprint(p["before"]) != "[]" || p["memory"] != false || p["keep"] != 5.0 {
		t.Fatalf("the default policy (off): %d %v", code, p)
	}
	code, p = e.do(t, e.alice, "PUT", path, `{"every_steps":10,"before":["file_delete","exec","exec"],"memory":true}`)
	if code != 200 || p["every_steps"] != 10.0 || fmt.Sprint(p["before"]) != "[exec file_delete]" || p["memory"] != true || p["keep"] != 5.0 {
		t.Fatalf("set: %d %v", code, p)
	}
	if code, got := e.do(t, e.alice, "GET", path, ""); code != 200 || fmt.Sprint(got) != fmt.Sprint(p) {
		t.Errorf("read back: %d %v, want %v", code, got, p)
	}
	for body, field := range map[string]string{
		`{"before":["exec","rm -rf"]}`: "before",
		`{"keep":0}`:                   "keep",
		`{"keep":51}`:                  "keep",
		`{"every_steps":-2}`:           "every_steps",
	} {
		code, resp := e.do(t, e.alice, "PUT", path, body)
		if code != 422 || errField(resp) != field {
			t.Errorf("PUT %s: %d %v, want 422 on %s", body, code, resp, field)
		}
	}
	_, resp := e.do(t, e.alice, "PUT", path, `{"before":["delete"]}`)
	if msg := resp["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"delete"`) || !strings.Contains(msg, "file_delete") {
		t.Errorf("an unknown kind's message: %q", msg)
	}
	if code, _ := e.do(t, e.alice, "PUT", path, `{"every":2}`); code != 400 {
		t.Errorf("an unknown field: %d", code)
	}
	// A refused policy changed nothing.
	if _, got := e.do(t, e.alice, "GET", path, ""); got["every_steps"] != 10.0 {
		t.Errorf("after refused changes: %v", got)
	}
	// Another owner's desktop does not exist for bob.
	for _, m := range []string{"GET", "PUT"} {
		if code, _ := e.do(t, e.bob, m, path, `{"every_steps":1}`); code != 404 {
			t.Errorf("bob %s alice's policy: %d", m, code)
		}
	}
	if code, _ := e.do(t, e.admin, "GET", path, ""); code != 200 {
		t.Errorf("an admin reads it: %d", code)
	}
	// Left-out fields take their defaults: {} turns it off.
	if code, got := e.do(t, e.alice, "PUT", path, `{}`); code != 200 || got["every_steps"] != 0.0 || got["memory"] != false || fmt.Sprint(got["before"]) != "[]" {
		t.Errorf("PUT {}: %d %v", code, got)
	}
}

// snapshotNames are a desktop's snapshots in the fake, oldest first.
func snapshotNames(e *env, id string) []string {
	e.desktops.mu.Lock()
	defer e.desktops.mu.Unlock()
	var out []string
	for _, sn := range e.desktops.snapshots[id] {
		out = append(out, sn.Name)
	}
	return out
}

// An automatic checkpoint goes before every Nth step and before the kinds
// named; only the newest keep of them stay, and neither the caller's own
// snapshots nor the checkpoints calls asked for are pruned. A call that
// asks for its own checkpoint gets one, not two.
func TestAutomaticCheckpoints(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	if code, _ := e.do(t, e.alice, "POST", base+"/snapshots", `{"name":"mine"}`); code != 201 {
		t.Fatal(code)
	}
	if code, p := e.do(t, e.alice, "PUT", base+"/checkpoints", `{"every_steps":3,"before":["file_delete"],"keep":2}`); code != 200 {
		t.Fatalf("set: %d %v", code, p)
	}
	calls := []struct{ method, path, body string }{
		{"POST", "/exec", `{"cmd":"one"}`},                      // 1: the first: due
		{"POST", "/exec", `{"cmd":"two"}`},                      // 2
		{"DELETE", "/files?path=/tmp/x", ""},                    // 3: a kind always checkpointed
		{"POST", "/exec", `{"cmd":"four"}`},                     // 4
		{"POST", "/exec?checkpoint=true", `{"cmd":"five"}`},     // 5: its own, not doubled
		{"POST", "/exec", `{"cmd":"six"}`},                      // 6
		{"POST", "/computer", `{"action":"left_click","x":1}`},  // 7 (refused: a step all the same)
		{"POST", "/exec", `{"cmd":"eight"}`},                    // 8: 3rd after the last checkpoint
		{"PUT", "/files?path=/tmp/y&checkpoint=memory", "data"}, // 9: its own, with the RAM
	}
	for _, c := range calls {
		e.do(t, e.alice, c.method, base+c.path, c.body)
		time.Sleep(2 * time.Millisecond) // each checkpoint its own millisecond
	}
	list := stepsOf(t, e, e.alice, id, len(calls))
	var got []string
	for _, st := range list {
		cp, _ := st["checkpoint"].(string)
		switch {
		case strings.HasPrefix(cp, "auto-"):
			got = append(got, "auto")
		case strings.HasPrefix(cp, "checkpoint-"):
			got = append(got, "asked")
		default:
			got = append(got, "-")
		}
		if st["checkpoint_error"] != nil {
			t.Errorf("step %v: %v", st["seq"], st["checkpoint_error"])
		}
	}
	if want := "auto - auto - asked - - auto asked"; strings.Join(got, " ") != want {
		t.Errorf("checkpoints %s, want %s", strings.Join(got, " "), want)
	}
	// Of the automatic ones (steps 1, 3 and 8) the newest 2 stay.
	names := snapshotNames(e, id)
	auto1, auto3, auto8 := list[0]["checkpoint"], list[2]["checkpoint"], list[7]["checkpoint"]
	want := []string{"mine", auto3.(string), list[4]["checkpoint"].(string), auto8.(string), list[8]["checkpoint"].(string)}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("snapshots %v, want %v (%v pruned)", names, want, auto1)
	}
	e.desktops.mu.Lock()
	for _, sn := range e.desktops.snapshots[id] {
		if strings.HasPrefix(sn.Name, "auto-") && (sn.Memory || !strings.HasPrefix(sn.Description, "automatic checkpoint before a ")) {
			t.Errorf("an automatic checkpoint of a disks-only policy: %+v", sn)
		}
	}
	e.desktops.mu.Unlock()
	if !*e.desktops.lastSnapshot.Memory {
		t.Errorf("checkpoint=memory under a disks-only policy took %+v", e.desktops.lastSnapshot)
	}

	// Step 1's checkpoint was pruned: reverting to before it goes to the
	// newest snapshot before it began, and says so.
	code, r := e.do(t, e.alice, "POST", base+"/steps/1/revert", "")
	if code != 202 || r["snapshot"].(map[string]any)["name"] != "mine" || !strings.Contains(fmt.Sprint(r["note"]), auto1.(string)) {
		t.Errorf("revert to before step 1: %d %v", code, r)
	}
	e.desktops.setState(id, desktop.StateRunning)
	code, r = e.do(t, e.alice, "POST", base+"/steps/8/revert", "")
	if code != 202 || r["snapshot"].(map[string]any)["name"] != auto8 || r["note"] != nil || r["holds_through_step"] != 7.0 {
		t.Errorf("revert to before step 8: %d %v", code, r)
	}

	// With memory, and a stopped desktop: no checkpoint (nothing the call
	// can change), nor a count.
	e.desktops.setState(id, desktop.StateRunning)
	e.do(t, e.alice, "PUT", base+"/checkpoints", `{"every_steps":1,"memory":true}`)
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"ten"}`)
	if sn := e.desktops.lastSnapshot; !strings.HasPrefix(sn.Name, "auto-") || !*sn.Memory {
		t.Errorf("a memory policy took %+v", sn)
	}
	e.desktops.setState(id, desktop.StateStopped)
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"eleven"}`)
	if st := stepsOf(t, e, e.alice, id, 11)[10]; st["checkpoint"] != nil || st["checkpoint_error"] != nil {
		t.Errorf("a step on a stopped desktop: %v", st)
	}
}

// A failed automatic checkpoint does not fail the call: the step has no
// checkpoint and says why, and the next step is due one. A failed
// checkpoint the call asked for fails the call.
func TestAutomaticCheckpointFails(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	e.do(t, e.alice, "PUT", base+"/checkpoints", `{"every_steps":5}`)
	e.desktops.mu.Lock()
	e.desktops.snapshotErr = &desktop.QuotaError{Limit: "max_snapshots", Max: 10, Would: 11, Plan: "free"}
	e.desktops.mu.Unlock()
	if code, body := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"one"}`); code != 200 {
		t.Fatalf("a call whose checkpoint failed: %d %v", code, body)
	}
	if code, _ := e.do(t, e.alice, "POST", base+"/exec?checkpoint=true", `{"cmd":"two"}`); code != 403 {
		t.Errorf("a call whose own checkpoint failed: %d", code)
	}
	e.desktops.mu.Lock()
	e.desktops.snapshotErr = nil
	e.desktops.mu.Unlock()
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"three"}`)
	e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"four"}`)
	list := stepsOf(t, e, e.alice, id, 3) // the refused call is no step
	if len(list) != 3 {
		t.Fatalf("steps %v", list)
	}
	first := list[0]
	if first["status"] != 200.0 || first["checkpoint"] != nil || !strings.Contains(fmt.Sprint(first["checkpoint_error"]), "max_snapshots limit is 10") {
		t.Errorf("the step whose checkpoint failed: %v", first)
	}
	if cp, _ := list[1]["checkpoint"].(string); !strings.HasPrefix(cp, "auto-") || list[1]["checkpoint_error"] != nil {
		t.Errorf("the next step is due the missed checkpoint: %v", list[1])
	}
	if list[2]["checkpoint"] != nil {
		t.Errorf("the step after it: %v", list[2])
	}
	// A busy desktop: the checkpoint waits (here the fake answers busy at
	// once, as the manager does after waiting).
	e.desktops.mu.Lock()
	e.desktops.snapshotErr = fmt.Errorf("%w (revert)", desktop.ErrBusy)
	e.desktops.mu.Unlock()
	e.do(t, e.alice, "PUT", base+"/checkpoints", `{"before":["exec"]}`)
	if code, _ := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"five"}`); code != 200 {
		t.Errorf("a call on a busy desktop: %d", code)
	}
	if st := stepsOf(t, e, e.alice, id, 4)[3]; !strings.Contains(fmt.Sprint(st["checkpoint_error"]), "another operation") {
		t.Errorf("a step whose checkpoint found the desktop busy: %v", st)
	}
	if e.desktops.lastSnapshot.Wait <= 0 {
		t.Errorf("a checkpoint does not wait for another operation: %+v", e.desktops.lastSnapshot)
	}
}

// set_checkpoint_policy sets the policy through the API as the caller.
func TestMCPSetCheckpointPolicy(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	cs, err := mcpSession(t, e, e.alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "set_checkpoint_policy",
		Arguments: map[string]any{"desktop": id, "every_steps": 4, "before": []string{"exec"}, "keep": 2}})
	if err != nil || res.IsError {
		t.Fatalf("set_checkpoint_policy: %v %+v", err, res)
	}
	if _, p := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/checkpoints", ""); p["every_steps"] != 4.0 || p["keep"] != 2.0 || fmt.Sprint(p["before"]) != "[exec]" {
		t.Errorf("policy after the tool: %v", p)
	}
	res, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "set_checkpoint_policy",
		Arguments: map[string]any{"desktop": id, "before": []string{"format_disk"}}})
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "format_disk") {
		t.Errorf("an unknown kind through MCP: %+v", res.Content[0])
	}
}
