package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// post makes route answer v; the func it returns gives the bodies the
// route was sent.
func (f *fakeBureau) post(route string, status int, v any) func() []string {
	var bodies []string
	f.routes[route] = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		bodies = append(bodies, string(b))
		f.mu.Unlock()
		writeJSON(w, status, v)
	}
	return func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return append([]string(nil), bodies...)
	}
}

// runFlagsFirst is run with the connection flags before args, for
// commands that take what follows -- as it is.
func (f *fakeBureau) runFlagsFirst(args ...string) (stdout string, err error) {
	var out, errw strings.Builder
	root := rootCmd()
	root.SetArgs(append([]string{"--url", f.URL, "--token", "tok"}, args...))
	root.SetOut(&out)
	root.SetErr(&errw)
	err = root.Execute()
	return out.String(), err
}

var mousepadWindow = map[string]any{"id": "0x1e00004", "title": "notes.txt - Mousepad", "app": "Mousepad", "instance": "mousepad", "pid": 812,
	"x": 40, "y": 60, "width": 800, "height": 600, "focused": true, "minimized": false, "maximized": false, "workspace": 0,
	"frame": map[string]int{"left": 1, "right": 1, "top": 28, "bottom": 1}}

func TestDesktopWindowsTable(t *testing.T) {
	f := newFakeBureau(t)
	shown := map[string]any{}
	for k, v := range mousepadWindow {
		shown[k] = v
	}
	shown["display_bounds"] = map[string]int{"x": 32, "y": 48, "width": 640, "height": 480}
	terminal := map[string]any{"id": "0x2a00007", "title": "Terminal", "app": "Xfce4-terminal", "workspace": -1, "minimized": true, "x": 0, "y": 0, "width": 10, "height": 10}
	f.json("GET /api/v1/desktops/d1/windows", 200, map[string]any{"windows": []any{shown, terminal}, "screen": map[string]int{"width": 1600, "height": 1000, "workspace": 0}})
	out, _, err := f.run("desktop", "windows", "agent-1", "--display", "1280x800")
	want := `ID         APP             TITLE                 GEOMETRY       FLAGS                     DISPLAY
0x1e00004  Mousepad        notes.txt - Mousepad  800x600+40+60  focused,ws 0              640x480+32+48
0x2a00007  Xfce4-terminal  Terminal              10x10+0+0      minimized,all workspaces  -
`
	if err != nil || out != want {
		t.Fatalf("windows: %v\n%s\nwant\n%s", err, out, want)
	}
	if r := f.requests(); r[len(r)-1] != "GET /api/v1/desktops/d1/windows?display=1280x800" {
		t.Errorf("requests %q", r)
	}
}

func TestDesktopWindowActions(t *testing.T) {
	f := newFakeBureau(t)
	sent := f.post("POST /api/v1/desktops/d1/windows/0x1e00004", 200, mousepadWindow)
	out, _, err := f.run("desktop", "window", "d1", "0x1e00004", "move", "--x", "0", "--y", "20")
	if err != nil || !strings.Contains(out, "0x1e00004  Mousepad") {
		t.Fatalf("window move: %v\n%s", err, out)
	}
	if _, _, err := f.run("desktop", "window", "d1", "0x1e00004", "focus"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sent(), "\n"); got != `{"action":"move","x":0,"y":20}`+"\n"+`{"action":"focus"}` {
		t.Errorf("sent %s", got)
	}
	f.post("POST /api/v1/desktops/d1/windows/0x2", 200, map[string]any{"closed": false, "window": mousepadWindow})
	if _, _, err := f.run("desktop", "window", "d1", "0x2", "close"); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Errorf("close of a window that stays: %v", err)
	}
	f.post("POST /api/v1/desktops/d1/windows/0x3", 200, map[string]any{"closed": true})
	if out, _, err := f.run("desktop", "window", "d1", "0x3", "close"); err != nil || out != "window 0x3 closed\n" {
		t.Errorf("close: %v %q", err, out)
	}
}

func TestDesktopLaunch(t *testing.T) {
	f := newFakeBureau(t)
	proc := map[string]any{"id": "p-1", "pid": 812, "command": []string{"mousepad"}, "running": true, "started_at": "2025-01-02T03:04:05Z", "log_bytes": 0}
	sent := f.post("POST /api/v1/desktops/d1/apps", 200, map[string]any{"process": proc, "window": mousepadWindow, "timed_out": false})
	out, _, err := f.run("desktop", "launch", "d1", "--desktop-file", "mousepad", "--wait", "30s")
	if err != nil || !strings.HasPrefix(out, "started p-1 (pid 812)\nID") {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	if _, err := f.runFlagsFirst("desktop", "launch", "d1", "--", "mousepad", "/tmp/notes.txt"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sent(), "\n"); got != `{"desktop_file":"mousepad","wait_s":30}`+"\n"+`{"command":"mousepad /tmp/notes.txt"}` {
		t.Errorf("sent %s", got)
	}
	if _, _, err := f.run("desktop", "launch", "d1"); err == nil || !strings.Contains(err.Error(), "--desktop-file NAME or a command") {
		t.Errorf("launch of nothing: %v", err)
	}
	proc["running"], proc["exit_code"] = false, 127
	f.post("POST /api/v1/desktops/d1/apps", 200, map[string]any{"process": proc, "window": nil, "timed_out": false})
	if _, _, err := f.run("desktop", "launch", "d1", "--desktop-file", "nosuch"); err == nil || !strings.Contains(err.Error(), "p-1 exited with 127 before a window opened; its output: bureau desktop logs agent-1 p-1") {
		t.Errorf("launch of a program that failed: %v", err)
	}
}

func TestDesktopUITreeFindAndAct(t *testing.T) {
	f := newFakeBureau(t)
	app := map[string]any{"id": "N1", "role": "application", "name": "mousepad", "states": []string{}, "actions": []string{}, "children": []string{"N2"}, "child_count": 1, "app": "mousepad", "depth": 0}
	save := map[string]any{"id": "N2", "role": "push button", "name": "Save", "states": []string{"enabled", "showing"}, "actions": []string{"click"},
		"bounds": map[string]int{"x": 620, "y": 512, "width": 84, "height": 34}, "children": []string{}, "child_count": 0, "app": "mousepad", "depth": 1}
	screen := map[string]int{"width": 1600, "height": 1000}
	f.json("GET /api/v1/desktops/d1/ui", 200, map[string]any{"nodes": []any{app, save}, "truncated": false, "screen": screen})
	f.json("GET /api/v1/desktops/d1/ui/find", 200, map[string]any{"nodes": []any{save}, "truncated": false, "screen": screen})
	out, _, err := f.run("desktop", "ui", "d1", "--app", "mousepad", "--depth", "3", "--limit", "50", "--all")
	want := "2 nodes; positions in screen pixels (1600x1000)\napplication \"mousepad\" id=N1\n  push button \"Save\" id=N2 @620,512 84x34 actions=click\n"
	if err != nil || out != want {
		t.Fatalf("ui: %v\n%s\nwant\n%s", err, out, want)
	}
	out, _, err = f.run("desktop", "ui-find", "d1", "--role", "button", "--name", "save")
	if err != nil || !strings.HasSuffix(out, "\npush button \"Save\" id=N2 @620,512 84x34 actions=click\n") {
		t.Fatalf("ui-find: %v\n%s", err, out)
	}
	r := f.requests()
	if r[len(r)-3] != "GET /api/v1/desktops/d1/ui?app=mousepad&depth=3&limit=50&visible_only=false" || r[len(r)-1] != "GET /api/v1/desktops/d1/ui/find?name=save&role=button" {
		t.Errorf("requests %q", r)
	}
	sent := f.post("POST /api/v1/desktops/d1/ui/N2", 200, map[string]any{"node": save, "changed": true, "gone": false, "performed": "set_text_contents", "screen": screen})
	out, _, err = f.run("desktop", "ui-act", "d1", "N2", "set_value", "--value", "")
	if err != nil || out != "set_text_contents: changed\npush button \"Save\" id=N2 @620,512 84x34 actions=click\n" || sent()[0] != `{"action":"set_value","value":""}` {
		t.Errorf("ui-act: %v %q %q", err, out, sent())
	}
	f.json("POST /api/v1/desktops/d1/ui/N9", 410, map[string]any{"error": map[string]string{"code": "gone", "message": "the element is no longer there"}})
	if _, _, err := f.run("desktop", "ui-act", "d1", "N9", "click"); err == nil || !strings.Contains(err.Error(), "HTTP 410 gone") {
		t.Errorf("ui-act on a stale id: %v", err)
	}
}
