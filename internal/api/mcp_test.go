package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, e *env, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true}, nil)
}

func TestMCPToolsCallTheAPIAsTheCaller(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	e.desktops.desktops[id].State = "running"

	if _, err := mcpSession(t, e, ""); err == nil {
		t.Error("MCP without a token connected")
	}
	cs, err := mcpSession(t, e, e.alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"list_desktops", "create_desktop", "wait_ready", "screenshot", "computer", "exec", "read_file", "write_file", "stop_desktop",
		"list_windows", "focus_window", "window_action", "launch_app", "ui_tree", "ui_find", "ui_action",
		"request_help", "get_request", "request_approval", "list_requests", "answer_request", "decide_approval", "control_status"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("tool %s missing from %v", want, names)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_desktops", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, id) {
		t.Fatalf("list_desktops: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "screenshot", Arguments: map[string]any{"desktop": id}})
	if err != nil || res.IsError {
		t.Fatalf("screenshot: %v %+v", err, res)
	}
	if img, ok := res.Content[0].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || string(img.Data) != "\x89PNG" {
		t.Errorf("screenshot content %#v", res.Content[0])
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"desktop": id, "cmd": "echo hi"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"stdout":"echo hi"`) {
		t.Fatalf("exec: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"desktop": id, "path": "/home/agent/n.txt", "content": "note"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"desktop": id, "path": "/home/agent/n.txt"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "note" {
		t.Fatalf("read_file: %v %+v", err, res)
	}

	// Bob's token reaches none of alice's desktops through MCP either.
	bob, err := mcpSession(t, e, e.bob)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	res, err = bob.CallTool(ctx, &mcp.CallToolParams{Name: "screenshot", Arguments: map[string]any{"desktop": id}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not_found") {
		t.Errorf("bob's screenshot of alice's desktop: %v %+v", err, res)
	}
}

// The process tools drive a real (in-process) bureau-agent: start a
// server in the background, fetch from its port, read its log, kill it.
func TestMCPProcessTools(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	cs, err := mcpSession(t, e, e.alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	call := func(name string, args map[string]any) string {
		t.Helper()
		args["desktop"] = id
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	out := call("exec", map[string]any{"cmd": "exec python3 -m http.server " + itoa(port) + " --bind 127.0.0.1", "cwd": "/", "background": true})
	var p struct{ ID string }
	json.Unmarshal([]byte(out), &p)
	var page string
	for i := 0; i < 50 && !strings.Contains(page, "HTTP 200"); i++ {
		time.Sleep(200 * time.Millisecond)
		page = call("fetch_port", map[string]any{"port": port, "path": "/"})
	}
	if !strings.Contains(page, "HTTP 200") || !strings.Contains(page, "Directory listing for /") {
		t.Fatalf("fetch_port: %.300s", page)
	}
	if list := call("list_processes", map[string]any{}); !strings.Contains(list, p.ID) {
		t.Errorf("list_processes: %s", list)
	}
	if log := call("process_log", map[string]any{"process": p.ID}); !strings.Contains(log, `"GET / HTTP/1.1" 200`) {
		t.Errorf("process_log: %q", log)
	}
	if got := call("kill_process", map[string]any{"process": p.ID, "signal": "KILL"}); !strings.Contains(got, p.ID) {
		t.Errorf("kill_process: %s", got)
	}
}
