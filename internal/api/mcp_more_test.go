package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The rest of a desktop's life through MCP: pause/resume, snapshots,
// files, clipboard, events, console links and delete (data kept unless
// asked).
func TestMCPLifecycleAndIOTools(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	e.desktops.desktops[id].State = "running"
	e.desktops.desktops[id].DataDiskPath = "/var/lib/bureau/desktops/" + id + "/data.qcow2"
	cs, err := mcpSession(t, e, e.alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := ""
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
		return text, res.IsError
	}
	must := func(name string, args map[string]any) string {
		t.Helper()
		text, isErr := call(name, args)
		if isErr {
			t.Fatalf("%s: %s", name, text)
		}
		return text
	}
	tools, _ := cs.ListTools(ctx, nil)
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, name := range []string{"pause_desktop", "resume_desktop", "reboot_desktop", "delete_desktop", "create_snapshot", "list_snapshots",
		"revert_snapshot", "delete_snapshot", "delete_file", "list_files", "get_clipboard", "set_clipboard", "get_resolution", "set_resolution", "desktop_events", "console_link"} {
		if byName[name] == nil {
			t.Errorf("tool %s missing", name)
		}
	}
	if a := byName["delete_desktop"].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Error("delete_desktop is not marked destructive")
	}

	if out := must("create_snapshot", map[string]any{"desktop": id, "name": "before", "memory": false, "scope": "data"}); !strings.Contains(out, `"before"`) {
		t.Errorf("create_snapshot: %s", out)
	}
	if r := e.desktops.lastSnapshot; r.Name != "before" || r.Memory == nil || *r.Memory || r.Scope != "data" {
		t.Errorf("the snapshot asked for: %+v", r)
	}
	must("list_snapshots", map[string]any{"desktop": id})
	if out := must("delete_snapshot", map[string]any{"desktop": id, "name": "before"}); out != "snapshot before deleted" {
		t.Errorf("delete_snapshot: %s", out)
	}

	must("set_clipboard", map[string]any{"desktop": id, "text": "hello"})
	if out := must("get_clipboard", map[string]any{"desktop": id}); !strings.Contains(out, `"text":"clip"`) { // the fake's
		t.Errorf("get_clipboard: %s", out)
	}
	var link struct{ URL, Token string }
	json.Unmarshal([]byte(must("console_link", map[string]any{"desktop": id, "view_only": true})), &link)
	if !strings.HasPrefix(link.URL, e.srv.URL+"/console/"+id+"?token=") || link.Token != "" {
		t.Errorf("console_link: %+v", link)
	}
	must("desktop_events", map[string]any{"desktop": id, "limit": 5})
	must("pause_desktop", map[string]any{"desktop": id})
	if st := e.desktops.desktops[id].State; st != "paused" {
		t.Errorf("after pause_desktop: %s", st)
	}
	must("resume_desktop", map[string]any{"desktop": id})

	must("reboot_desktop", map[string]any{"desktop": id})
	// The fake screen's "image" is four bytes: the route takes the tool's
	// query (a passive JPEG) and only reading the size fails.
	if out, isErr := call("get_resolution", map[string]any{"desktop": id}); !isErr || !strings.Contains(out, "the screenshot's size") {
		t.Errorf("get_resolution: %t %s", isErr, out)
	}
	if out := must("set_resolution", map[string]any{"desktop": id, "width": 1280, "height": 800}); out != `{"width":1280,"height":800}` {
		t.Errorf("set_resolution: %s", out)
	}

	// Files: list_files says a file is not a directory; delete_file deletes.
	must("write_file", map[string]any{"desktop": id, "path": "notes.txt", "content": "x"})
	if out, isErr := call("list_files", map[string]any{"desktop": id, "path": "notes.txt"}); !isErr || !strings.Contains(out, "read_file") {
		t.Errorf("list_files of a file: %t %s", isErr, out)
	}
	if out := must("delete_file", map[string]any{"desktop": id, "path": "notes.txt"}); out != "deleted notes.txt" {
		t.Errorf("delete_file: %s", out)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/files?path=notes.txt", ""); code != 404 {
		t.Errorf("the deleted file answers %d through REST", code)
	}

	if st := e.desktops.desktops[id].State; st != "running" {
		t.Fatalf("before revert_snapshot: %s", st)
	}
	must("revert_snapshot", map[string]any{"desktop": id, "name": "before"})
	if st := e.desktops.desktops[id].State; st != "reverting" {
		t.Errorf("after revert_snapshot: %s", st)
	}
	e.desktops.desktops[id].State = "running"

	// Another owner reaches none of it: each tool answers not_found, as
	// REST does, so nobody learns that the desktop exists.
	bob, err := mcpSession(t, e, e.bob)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	for _, name := range []string{"delete_desktop", "get_desktop", "list_snapshots", "console_link", "desktop_events", "get_clipboard", "list_files", "pause_desktop"} {
		res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"desktop": id}})
		if err != nil {
			t.Fatalf("%s as bob: %v", name, err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "not_found") {
			t.Errorf("%s as bob: error %t, %s", name, res.IsError, text)
		}
	}
	if st := e.desktops.desktops[id].State; st != "running" {
		t.Errorf("after bob's calls alice's desktop is %s", st)
	}
	// The data disk is kept; where it is on the host is an admin's business.
	if out := must("delete_desktop", map[string]any{"desktop": id}); !strings.Contains(out, `"data_deleted":false`) || strings.Contains(out, "/var/lib/bureau") {
		t.Errorf("delete_desktop without delete_data: %s", out)
	}
}
