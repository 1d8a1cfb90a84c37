package mcptools

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeCaller answers each call with the response its path starts with
// and records the paths asked for.
type fakeCaller struct {
	mu      sync.Mutex
	answers map[string]Response
	paths   []string
}

func (f *fakeCaller) Call(_ context.Context, _, method, path string, _ []byte, _ int) (Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, method+" "+path)
	for prefix, r := range f.answers {
		if strings.HasPrefix(path, prefix) {
			return r, nil
		}
	}
	return Response{Status: 404, Body: []byte(`{"error":{"code":"not_found","message":"no such thing"}}`)}, nil
}

func session(t *testing.T, c Caller) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewServer(c, func(*mcp.CallToolRequest) string { return "tok" }, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		t.Fatalf("%s: no text: %#v", name, res.Content)
	}
	return tc.Text, res.IsError
}

func TestGetResolutionReadsTheScreenshotsSize(t *testing.T) {
	var shot bytes.Buffer
	jpeg.Encode(&shot, image.NewGray(image.Rect(0, 0, 1280, 800)), &jpeg.Options{Quality: 1})
	f := &fakeCaller{answers: map[string]Response{"/api/v1/desktops/d1/screenshot": {Status: 200, Body: shot.Bytes(), ContentType: "image/jpeg"}}}
	cs := session(t, f)
	if out, isErr := callText(t, cs, "get_resolution", map[string]any{"desktop": "d1"}); isErr || out != `{"height":800,"width":1280}` {
		t.Errorf("get_resolution: %t %s", isErr, out)
	}
	// A passive screenshot: asking the size neither wakes the desktop nor
	// keeps it awake.
	if p := f.paths[0]; !strings.Contains(p, "passive=true") {
		t.Errorf("asked for %s", p)
	}
	if out, isErr := callText(t, cs, "get_resolution", map[string]any{"desktop": "d2"}); !isErr || !strings.Contains(out, "not_found") {
		t.Errorf("get_resolution of an unknown desktop: %t %s", isErr, out)
	}
}

func TestListFilesListsDirectoriesOnly(t *testing.T) {
	f := &fakeCaller{answers: map[string]Response{
		"/api/v1/desktops/d1/files?path=.": {Status: 200, ContentType: "application/json; charset=utf-8",
			Body: []byte(`{"path":"/home/user","dir":true,"size":0,"entries":[{"name":"notes.txt","type":"file","size":3,"mode":"0644","mtime":1}]}`)},
		"/api/v1/desktops/d1/files?path=notes.txt": {Status: 200, ContentType: "application/octet-stream", Body: []byte("abc")},
	}}
	cs := session(t, f)
	if out, isErr := callText(t, cs, "list_files", map[string]any{"desktop": "d1"}); isErr || !strings.Contains(out, `"notes.txt"`) {
		t.Errorf("list_files of the home directory: %t %s", isErr, out)
	}
	if out, isErr := callText(t, cs, "list_files", map[string]any{"desktop": "d1", "path": "notes.txt"}); !isErr || !strings.Contains(out, "is a file") {
		t.Errorf("list_files of a file: %t %s", isErr, out)
	}
}

func TestDesktopEventsAsksForABoundedList(t *testing.T) {
	f := &fakeCaller{answers: map[string]Response{"/api/v1/desktops/d1/events": {Status: 200, ContentType: "application/json", Body: []byte(`{"events":[]}`)}}}
	cs := session(t, f)
	for _, limit := range []int{0, 5, 100000} {
		if out, isErr := callText(t, cs, "desktop_events", map[string]any{"desktop": "d1", "limit": limit}); isErr || out != `{"events":[]}` {
			t.Errorf("desktop_events: %t %s", isErr, out)
		}
	}
	want := []string{"GET /api/v1/desktops/d1/events?limit=50", "GET /api/v1/desktops/d1/events?limit=5", "GET /api/v1/desktops/d1/events?limit=500"}
	if strings.Join(f.paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("asked for\n%s\nwant\n%s", strings.Join(f.paths, "\n"), strings.Join(want, "\n"))
	}
}

// Every tool says what it does, and the ones that destroy say so.
func TestToolsDescribeThemselves(t *testing.T) {
	res, err := session(t, &fakeCaller{}).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	destructive := map[string]bool{"delete_desktop": true, "delete_snapshot": true, "delete_file": true, "revert_snapshot": true}
	for _, tl := range res.Tools {
		if len(tl.Description) < 40 {
			t.Errorf("%s: description %q is too short to use unaided", tl.Name, tl.Description)
		}
		a := tl.Annotations
		if destructive[tl.Name] && (a == nil || a.DestructiveHint == nil || !*a.DestructiveHint) {
			t.Errorf("%s is not marked destructive", tl.Name)
		}
		if destructive[tl.Name] && a.ReadOnlyHint {
			t.Errorf("%s is marked read-only", tl.Name)
		}
	}
}

// The step log and recordings are reachable as tools, and exec can ask
// for a checkpoint.
func TestStepAndRecordingTools(t *testing.T) {
	f := &fakeCaller{answers: map[string]Response{
		"/api/v1/desktops/d1/steps":       {Status: 200, Body: []byte(`{"steps":[{"seq":7,"kind":"exec"}]}`)},
		"/api/v1/desktops/d1/recordings":  {Status: 201, Body: []byte(`{"id":"rec_0123456789abcdef","state":"recording"}`)},
		"/api/v1/desktops/d1/exec":        {Status: 200, Body: []byte(`{"exit_code":0}`)},
		"/api/v1/desktops/d1/checkpoints": {Status: 200, Body: []byte(`{"every_steps":5,"before":["file_delete"],"memory":false,"keep":5}`)},
	}}
	cs := session(t, f)
	if text, _ := callText(t, cs, "list_steps", map[string]any{"desktop": "d1"}); !strings.Contains(text, `"seq":7`) {
		t.Errorf("list_steps: %s", text)
	}
	callText(t, cs, "list_steps", map[string]any{"desktop": "d1", "after": 3, "limit": 5})
	callText(t, cs, "revert_to_step", map[string]any{"desktop": "d1", "step": 7})
	if text, _ := callText(t, cs, "start_recording", map[string]any{"desktop": "d1", "fps": 5}); !strings.Contains(text, "rec_") {
		t.Errorf("start_recording: %s", text)
	}
	callText(t, cs, "stop_recording", map[string]any{"desktop": "d1", "recording": "rec_0123456789abcdef"})
	callText(t, cs, "exec", map[string]any{"desktop": "d1", "cmd": "rm -rf build", "checkpoint": "true"})
	if text, isErr := callText(t, cs, "set_checkpoint_policy", map[string]any{"desktop": "d1", "every_steps": 5, "before": []string{"file_delete"}}); isErr || !strings.Contains(text, `"keep":5`) {
		t.Errorf("set_checkpoint_policy: %t %s", isErr, text)
	}
	want := []string{
		"GET /api/v1/desktops/d1/steps?limit=20&newest=true",
		"GET /api/v1/desktops/d1/steps?after=3&limit=5",
		"POST /api/v1/desktops/d1/steps/7/revert",
		"POST /api/v1/desktops/d1/recordings",
		"POST /api/v1/desktops/d1/recordings/rec_0123456789abcdef/stop",
		"POST /api/v1/desktops/d1/exec?checkpoint=true",
		"PUT /api/v1/desktops/d1/checkpoints",
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Join(f.paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(f.paths, "\n"), strings.Join(want, "\n"))
	}
}

func TestScreenshotCanWaitForTheScreenToSettle(t *testing.T) {
	f := &fakeCaller{answers: map[string]Response{"/api/v1/desktops/d1/screenshot": {Status: 200, Body: []byte("\x89PNG"), ContentType: "image/png"}}}
	cs := session(t, f)
	for _, args := range []map[string]any{{"desktop": "d1"}, {"desktop": "d1", "settle": true, "width": 640}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "screenshot", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("screenshot %v: %v %+v", args, err, res)
		}
	}
	if f.paths[0] != "GET /api/v1/desktops/d1/screenshot?" || f.paths[1] != "GET /api/v1/desktops/d1/screenshot?settle=true&width=640" {
		t.Errorf("asked for %q", f.paths)
	}
}
