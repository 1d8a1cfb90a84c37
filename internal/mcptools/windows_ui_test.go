package mcptools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// bodyCaller answers each call with the response its "METHOD path"
// starts with and records the calls with their bodies.
type bodyCaller struct {
	mu      sync.Mutex
	answers map[string]Response
	calls   []string // "METHOD path body"
}

func (f *bodyCaller) Call(_ context.Context, _, method, path string, body []byte, _ int) (Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := method + " " + path
	f.calls = append(f.calls, strings.TrimSpace(call+" "+string(body)))
	best := ""
	for prefix := range f.answers {
		if strings.HasPrefix(call, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return Response{Status: 404, Body: []byte(`{"error":{"code":"not_found","message":"no such thing"}}`)}, nil
	}
	return f.answers[best], nil
}

func (f *bodyCaller) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

func ok(body string) Response {
	return Response{Status: 200, Body: []byte(body), ContentType: "application/json"}
}

const mousepad = `{"id":"0x1e00004","title":"notes.txt - Mousepad","app":"Mousepad","instance":"mousepad","pid":812,"x":40,"y":60,"width":800,"height":600,` +
	`"focused":true,"minimized":false,"maximized":false,"workspace":0,"frame":{"left":1,"right":1,"top":28,"bottom":1}`

func TestWindowTools(t *testing.T) {
	f := &bodyCaller{answers: map[string]Response{
		"GET /api/v1/desktops/d1/windows":            ok(`{"windows":[` + mousepad + `,"display_bounds":{"x":32,"y":48,"width":640,"height":480}}],"screen":{"width":1600,"height":1000,"workspace":0}}`),
		"POST /api/v1/desktops/d1/windows/0x1e00004": ok(mousepad + `}`),
		"POST /api/v1/desktops/d1/windows/0x2":       ok(`{"closed":false,"window":` + mousepad + `}}`),
		"POST /api/v1/desktops/d1/windows/0x3":       ok(`{"closed":true}`),
		"POST /api/v1/desktops/d1/apps":              ok(`{"process":{"id":"p-1","pid":812,"running":true},"window":` + mousepad + `},"timed_out":false}`),
		"POST /api/v1/desktops/d2/apps":              ok(`{"process":{"id":"p-2","pid":9,"running":false,"exit_code":127},"window":null,"timed_out":false}`),
	}}
	cs := session(t, f)

	out, isErr := callText(t, cs, "list_windows", map[string]any{"desktop": "d1", "display": map[string]int{"width": 1280, "height": 800}})
	want := "1 windows on a 1600x1000 screen (workspace 0 shown); id app \"title\" @x,y widthxheight in screen pixels\n" +
		`0x1e00004 Mousepad "notes.txt - Mousepad" @40,60 800x600 (display @32,48 640x480) focused` + "\n"
	if isErr || out != want || f.last() != "GET /api/v1/desktops/d1/windows?display=1280x800" {
		t.Errorf("list_windows: %t %q (%s)", isErr, out, f.last())
	}
	if out, isErr := callText(t, cs, "focus_window", map[string]any{"desktop": "d1", "window": "0x1e00004"}); isErr || !strings.HasPrefix(out, "0x1e00004 Mousepad") {
		t.Errorf("focus_window: %t %s", isErr, out)
	}
	if f.last() != `POST /api/v1/desktops/d1/windows/0x1e00004 {"action":"focus"}` {
		t.Errorf("focus_window sent %s", f.last())
	}
	callText(t, cs, "window_action", map[string]any{"desktop": "d1", "window": "0x1e00004", "action": "move", "x": 0, "y": 20})
	if f.last() != `POST /api/v1/desktops/d1/windows/0x1e00004 {"action":"move","x":0,"y":20}` {
		t.Errorf("window_action move sent %s", f.last())
	}
	if out, isErr := callText(t, cs, "window_action", map[string]any{"desktop": "d1", "window": "0x2", "action": "close"}); isErr || !strings.HasPrefix(out, "still open") {
		t.Errorf("window_action close of a window that stays: %t %s", isErr, out)
	}
	if out, _ := callText(t, cs, "window_action", map[string]any{"desktop": "d1", "window": "0x3", "action": "close"}); out != "closed" {
		t.Errorf("window_action close: %s", out)
	}
	// The action is one of the list: the schema refuses others before a call.
	n := len(f.calls)
	if out, isErr := callText(t, cs, "window_action", map[string]any{"desktop": "d1", "window": "0x3", "action": "explode"}); !isErr || len(f.calls) != n {
		t.Errorf("window_action explode: %t %s", isErr, out)
	}

	out, isErr = callText(t, cs, "launch_app", map[string]any{"desktop": "d1", "desktop_file": "mousepad", "wait_s": 0})
	if isErr || out != `process p-1 (pid 812); its window: 0x1e00004 Mousepad "notes.txt - Mousepad" @40,60 800x600 focused` {
		t.Errorf("launch_app: %t %s", isErr, out)
	}
	if f.last() != `POST /api/v1/desktops/d1/apps {"desktop_file":"mousepad","wait_s":0}` {
		t.Errorf("launch_app sent %s", f.last())
	}
	if out, _ := callText(t, cs, "launch_app", map[string]any{"desktop": "d2", "argv": []string{"nosuch"}}); !strings.Contains(out, "exited with 127 before a window opened; process_log p-2") {
		t.Errorf("launch_app of a program that failed: %s", out)
	}
}

const saveButton = `{"id":"N3","role":"push button","name":"Save","states":["enabled","focusable","showing","focused"],"actions":["click"],` +
	`"bounds":{"x":620,"y":512,"width":84,"height":34},"display_bounds":{"x":496,"y":410,"width":67,"height":27},"parent":"N2","children":[],"child_count":0,"app":"mousepad","depth":2}`

func TestUITools(t *testing.T) {
	tree := `{"nodes":[` +
		`{"id":"N1","role":"application","name":"mousepad","states":[],"actions":[],"children":["N2"],"child_count":1,"app":"mousepad","depth":0},` +
		`{"id":"N2","role":"frame","name":"notes.txt - Mousepad","states":["enabled","showing"],"actions":[],"bounds":{"x":40,"y":60,"width":800,"height":600},"children":["N3","N4","N5"],"child_count":3,"app":"mousepad","depth":1},` +
		saveButton + `,` +
		`{"id":"N4","role":"text","name":"","states":["enabled","editable","showing"],"text":"hello","actions":[],"children":[],"child_count":0,"app":"mousepad","depth":2}` +
		`],"truncated":true,"screen":{"width":1600,"height":1000},"warnings":["firefox did not answer within 3 s"]}`
	f := &bodyCaller{answers: map[string]Response{
		"GET /api/v1/desktops/d1/ui?":     ok(tree),
		"GET /api/v1/desktops/d1/ui/find": ok(`{"nodes":[` + saveButton + `],"truncated":false,"screen":{"width":1600,"height":1000},"display":{"width":1280,"height":800}}`),
		"POST /api/v1/desktops/d1/ui/N3":  ok(`{"node":` + saveButton + `,"changed":true,"gone":false,"performed":"click","screen":{"width":1600,"height":1000}}`),
		"POST /api/v1/desktops/d1/ui/N9":  {Status: 410, Body: []byte(`{"error":{"code":"gone","message":"the element is no longer there"}}`)},
	}}
	cs := session(t, f)

	out, isErr := callText(t, cs, "ui_tree", map[string]any{"desktop": "d1", "window": "Mousepad"})
	want := `4 nodes, truncated (a limit or the time left some out); positions in screen pixels (1600x1000)
application "mousepad" id=N1
  frame "notes.txt - Mousepad" id=N2 @40,60 800x600 (+1 children not listed)
    push button "Save" id=N3 @620,512 84x34 [focused] actions=click
    text "" id=N4 [editable] text="hello"
warning: firefox did not answer within 3 s
`
	if isErr || out != want {
		t.Errorf("ui_tree:\n%s\nwant\n%s", out, want)
	}
	if f.last() != "GET /api/v1/desktops/d1/ui?limit=200&window=Mousepad" {
		t.Errorf("ui_tree asked %s (want the MCP default limit)", f.last())
	}
	out, _ = callText(t, cs, "ui_find", map[string]any{"desktop": "d1", "role": "button", "name": "save", "states": "enabled,!checked",
		"visible_only": false, "display": map[string]int{"width": 1280, "height": 800}})
	if out != "1 nodes; positions in the 1280x800 display\npush button \"Save\" id=N3 @496,410 67x27 [focused] actions=click\n" {
		t.Errorf("ui_find: %q", out)
	}
	if f.last() != "GET /api/v1/desktops/d1/ui/find?display=1280x800&name=save&role=button&states=enabled%2C%21checked&visible_only=false" {
		t.Errorf("ui_find asked %s", f.last())
	}
	out, _ = callText(t, cs, "ui_action", map[string]any{"desktop": "d1", "node": "N3", "action": "set_value", "value": ""})
	if out != "performed click: it changed\npush button \"Save\" id=N3 @620,512 84x34 [focused] actions=click" {
		t.Errorf("ui_action: %q", out)
	}
	if f.last() != `POST /api/v1/desktops/d1/ui/N3 {"action":"set_value","value":""}` {
		t.Errorf("ui_action sent %s", f.last())
	}
	if out, isErr := callText(t, cs, "ui_action", map[string]any{"desktop": "d1", "node": "N9", "action": "click"}); !isErr || !strings.Contains(out, "(410 gone). Read the tree again") {
		t.Errorf("ui_action on a stale id: %t %s", isErr, out)
	}
}

// The computer tool takes an element (an id or a query) where it takes
// a coordinate, and verification's expect and verify_ms.
func TestComputerToolTakesElementsAndVerification(t *testing.T) {
	f := &bodyCaller{answers: map[string]Response{
		"POST /api/v1/desktops/d1/computer": ok(`{"results":[{"action":"left_click","duration_ms":30,"screen_changed":true,"changed_after_ms":40,` +
			`"element":{"id":"N3","role":"push button","name":"Save","changed":true}}],"display":{"width":1280,"height":800},"screen":{"width":1600,"height":1000}}`),
		"POST /api/v1/desktops/d2/computer": {Status: 422, Body: []byte(`{"error":{"code":"no_effect","index":0,"message":"actions[0] left_click: the screen did not change within 500 ms"}}`)},
	}}
	cs := session(t, f)
	args := map[string]any{"desktop": "d1", "expect": "change", "verify_ms": 800, "actions": []any{
		map[string]any{"action": "left_click", "element": "N3"},
		map[string]any{"type": "move", "element": map[string]any{"role": "button", "name": "Save"}},
	}}
	out, isErr := callText(t, cs, "computer", args)
	if isErr || !strings.Contains(out, `"element":{"id":"N3","role":"push button","name":"Save","changed":true}`) || !strings.Contains(out, `"screen_changed":true`) {
		t.Errorf("computer: %t %s", isErr, out)
	}
	var sent map[string]any
	json.Unmarshal([]byte(strings.TrimPrefix(f.last(), "POST /api/v1/desktops/d1/computer ")), &sent)
	b, _ := json.Marshal(sent)
	if string(b) != `{"actions":[{"action":"left_click","element":"N3"},{"element":{"name":"Save","role":"button"},"type":"move"}],"expect":"change","verify_ms":800}` {
		t.Errorf("computer sent %s", b)
	}
	n := len(f.calls)
	for _, bad := range []map[string]any{
		{"desktop": "d1", "expect": "maybe", "actions": []any{map[string]any{"action": "left_click", "coordinate": []int{1, 2}}}},
		{"desktop": "d1", "actions": []any{map[string]any{"action": "left_click", "element": 7}}},
	} {
		if out, isErr := callText(t, cs, "computer", bad); !isErr || len(f.calls) != n {
			t.Errorf("computer %v: %t %s", bad, isErr, out)
		}
	}
	out, isErr = callText(t, cs, "computer", map[string]any{"desktop": "d2", "expect": "change", "actions": []any{map[string]any{"action": "left_click", "coordinate": []int{1, 2}}}})
	if !isErr || !strings.Contains(out, "the screen did not change within 500 ms (422 no_effect). The actions after it did not run") {
		t.Errorf("computer with no effect: %t %s", isErr, out)
	}
}
