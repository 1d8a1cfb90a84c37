package steps

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func computerStep(seq int64, input string) *Step {
	return &Step{DesktopID: "d1", Seq: seq, Kind: KindComputer, Status: 200, After: true,
		Input: json.RawMessage(input), Result: json.RawMessage(`{"results":[],"display":{"width":1024,"height":640}}`)}
}

func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func TestAnthropicExport(t *testing.T) {
	list := []*Step{
		computerStep(1, `{"actions":[{"type":"click","x":10,"y":20,"button":"left"},{"action":"type","text":"hi"},{"action":"triple_click","coordinate":[5,6]}]}`),
		{DesktopID: "d1", Seq: 2, Kind: KindExec, Status: 200, Input: json.RawMessage(`{"cmd":"ls /"}`),
			Result: json.RawMessage(`{"exit_code":0,"stdout":"bin\n","stderr":""}`)},
		{DesktopID: "d1", Seq: 3, Kind: KindFileWrite, Status: 422, Error: "bad path", Input: json.RawMessage(`{"path":"../x"}`)},
	}
	img := func(st *Step) []byte {
		if st.After {
			return []byte("jpeg")
		}
		return nil
	}
	out := roundTrip(t, Anthropic(list, img))
	tools := out["tools"].([]any)
	if c := tools[0].(map[string]any); c["display_width_px"] != 1024.0 || c["name"] != "computer" {
		t.Errorf("computer tool %v", c)
	}
	msgs := out["messages"].([]any)
	if len(msgs) != 6 {
		t.Fatalf("%d messages, want 6 (an assistant and a user turn per step)", len(msgs))
	}
	uses := msgs[0].(map[string]any)["content"].([]any)
	want := []map[string]any{
		{"name": "computer", "input": map[string]any{"action": "left_click", "coordinate": []any{10.0, 20.0}}},
		{"name": "computer", "input": map[string]any{"action": "type", "text": "hi"}},
		{"name": "computer", "input": map[string]any{"action": "triple_click", "coordinate": []any{5.0, 6.0}}},
	}
	for i, w := range want {
		u := uses[i].(map[string]any)
		if u["type"] != "tool_use" || u["name"] != w["name"] || !reflect.DeepEqual(u["input"], w["input"]) {
			t.Errorf("tool_use %d = %v, want %v", i, u, w)
		}
	}
	results := msgs[1].(map[string]any)["content"].([]any)
	last := results[2].(map[string]any)
	if last["tool_use_id"] != uses[2].(map[string]any)["id"] {
		t.Errorf("tool_result %v does not answer %v", last, uses[2])
	}
	if img := last["content"].([]any)[0].(map[string]any); img["type"] != "image" {
		t.Errorf("the last result of a computer step carries the screen: %v", last)
	}
	bash := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if bash["name"] != "bash" || bash["input"].(map[string]any)["command"] != "ls /" {
		t.Errorf("exec as bash: %v", bash)
	}
	execOut := msgs[3].(map[string]any)["content"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(execOut, "exit code 0") || !strings.Contains(execOut, "bin") {
		t.Errorf("exec result text %q", execOut)
	}
	failed := msgs[5].(map[string]any)["content"].([]any)[0].(map[string]any)
	if failed["is_error"] != true || !strings.Contains(failed["content"].([]any)[0].(map[string]any)["text"].(string), "bad path") {
		t.Errorf("a failed step: %v", failed)
	}
}

func TestOpenAIExport(t *testing.T) {
	list := []*Step{
		computerStep(1, `{"actions":[{"action":"left_click","coordinate":[10,20]},{"action":"key","text":"ctrl+c"},{"action":"scroll","coordinate":[1,2],"scroll_direction":"up","scroll_amount":2},{"action":"triple_click","coordinate":[5,6]}]}`),
	}
	out := roundTrip(t, OpenAI(list, func(*Step) []byte { return []byte("jpeg") }))
	items := out["input"].([]any)
	var calls []map[string]any
	for _, it := range items {
		m := it.(map[string]any)
		if m["type"] == "computer_call" {
			calls = append(calls, m["action"].(map[string]any))
		}
	}
	want := []map[string]any{
		{"type": "click", "button": "left", "x": 10.0, "y": 20.0},
		{"type": "keypress", "keys": []any{"CTRL", "C"}},
		{"type": "scroll", "x": 1.0, "y": 2.0, "scroll_y": -200.0},
	}
	if len(calls) != 3 {
		t.Fatalf("computer calls %v", calls)
	}
	for i, w := range want {
		if !reflect.DeepEqual(calls[i], w) {
			t.Errorf("action %d = %v, want %v", i, calls[i], w)
		}
	}
	out1 := items[1].(map[string]any)
	if out1["type"] != "computer_call_output" || out1["call_id"] != items[0].(map[string]any)["call_id"] ||
		!strings.HasPrefix(out1["output"].(map[string]any)["image_url"].(string), "data:image/jpeg;base64,") {
		t.Errorf("computer_call_output %v", out1)
	}
	// triple_click has no OpenAI name: a bureau_computer function call.
	fc := items[6].(map[string]any)
	if fc["type"] != "function_call" || fc["name"] != "bureau_computer" || !strings.Contains(fc["arguments"].(string), "triple_click") {
		t.Errorf("an action OpenAI has no name for: %v", fc)
	}
}

// Actions survive a trip through the other shape.
func TestActionShapesRoundTrip(t *testing.T) {
	for _, a := range []string{
		`{"action":"left_click","coordinate":[1,2]}`, `{"action":"right_click","coordinate":[1,2]}`,
		`{"action":"double_click","coordinate":[3,4]}`, `{"action":"mouse_move","coordinate":[3,4]}`,
		`{"action":"left_click_drag","start_coordinate":[1,1],"coordinate":[9,9]}`, `{"action":"type","text":"x y"}`,
		`{"action":"key","text":"ctrl+shift+t"}`, `{"action":"key","text":"Return"}`,
		`{"action":"scroll","coordinate":[5,5],"scroll_direction":"down","scroll_amount":3}`, `{"action":"screenshot"}`,
	} {
		var in action
		json.Unmarshal([]byte(a), &in)
		o, ok := toOpenAI(in)
		if !ok {
			t.Errorf("%s: no OpenAI shape", a)
			continue
		}
		back, ok := toAnthropic(o)
		got, _ := json.Marshal(back)
		var g, w map[string]any
		json.Unmarshal(got, &g)
		json.Unmarshal([]byte(a), &w)
		if !ok || !reflect.DeepEqual(g, w) {
			t.Errorf("%s → %+v → %s", a, o, got)
		}
	}
}
