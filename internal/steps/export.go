package steps

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Export formats.
const (
	FormatBureau    = "bureau"
	FormatAnthropic = "anthropic"
	FormatOpenAI    = "openai"
)

// Formats lists the export formats.
var Formats = []string{FormatBureau, FormatAnthropic, FormatOpenAI}

// Image returns a step's after-thumbnail (JPEG), or nil for none or when
// images are not exported.
type Image func(st *Step) []byte

// computerInput and computerResult are the parts of a computer step's
// input and result an export reads.
type computerInput struct {
	Actions []action `json:"actions"`
}

type computerResult struct {
	Display struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	} `json:"display"`
}

// toolOf names the tool a non-computer step was made with, and its input.
func toolOf(st *Step) (string, map[string]any) {
	var in map[string]any
	json.Unmarshal(st.Input, &in)
	switch st.Kind {
	case KindExec:
		cmd, _ := in["cmd"].(string)
		if cmd == "" {
			if argv, ok := in["argv"].([]any); ok {
				var parts []string
				for _, a := range argv {
					parts = append(parts, fmt.Sprint(a))
				}
				cmd = strings.Join(parts, " ")
			}
		}
		return "bash", map[string]any{"command": cmd}
	case KindFileWrite, KindFileDelete:
		op := "write"
		if st.Kind == KindFileDelete {
			op = "delete"
		}
		return "bureau_files", map[string]any{"command": op, "path": in["path"]}
	case KindClipboard:
		return "bureau_clipboard", in
	}
	return "bureau_" + st.Kind, in
}

// outcome is a step's result as text for a model.
func outcome(st *Step) string {
	if st.Error != "" {
		return "error: " + st.Error
	}
	if st.Kind == KindExec {
		var r struct {
			ExitCode *int   `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			Process  string `json:"process"`
		}
		json.Unmarshal(st.Result, &r)
		var b strings.Builder
		if r.ExitCode != nil {
			fmt.Fprintf(&b, "exit code %d\n", *r.ExitCode)
		}
		b.WriteString(r.Stdout)
		if r.Stderr != "" {
			b.WriteString("\nstderr:\n" + r.Stderr)
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	if len(st.Result) > 0 && string(st.Result) != "null" {
		return string(st.Result)
	}
	return "ok"
}

func display(list []*Step) (w, h int) {
	for _, st := range list {
		if st.Kind != KindComputer {
			continue
		}
		var r computerResult
		if json.Unmarshal(st.Result, &r) == nil && r.Display.Width > 0 {
			return r.Display.Width, r.Display.Height
		}
	}
	return 1280, 800
}

func dataURL(b []byte) string {
	return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(b)
}

func actionsOf(st *Step) []action {
	var in computerInput
	json.Unmarshal(st.Input, &in)
	return in.Actions
}

// Anthropic gives the steps as a conversation in Anthropic's Messages
// format: each step an assistant turn of tool_use blocks (the computer
// tool for actions, bash for exec, bureau_files and bureau_clipboard for
// the rest) and a user turn of their tool_result blocks, the last with the
// screen after the step when image gives it.
func Anthropic(list []*Step, image Image) map[string]any {
	w, h := display(list)
	tools := []map[string]any{
		{"type": "computer_20250124", "name": "computer", "display_width_px": w, "display_height_px": h},
		{"type": "bash_20250124", "name": "bash"},
		customTool("bureau_files", "Writes or deletes a file in the desktop (bureau's files API)."),
		customTool("bureau_clipboard", "Sets the desktop's clipboard."),
		customTool("bureau_computer", "A computer-use action the computer tool has no name for, as bureau ran it."),
	}
	var msgs []map[string]any
	for _, st := range list {
		var uses, results []map[string]any
		add := func(name string, input any) string {
			id := fmt.Sprintf("toolu_bureau_%d_%d", st.Seq, len(uses))
			uses = append(uses, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
			return id
		}
		if st.Kind == KindComputer {
			for _, a := range actionsOf(st) {
				if ca, ok := toAnthropic(a); ok {
					add("computer", ca)
				} else {
					add("bureau_computer", a)
				}
			}
		} else {
			name, in := toolOf(st)
			add(name, in)
		}
		for i, u := range uses {
			r := map[string]any{"type": "tool_result", "tool_use_id": u["id"]}
			if !st.OK() {
				r["is_error"] = true
			}
			var content []map[string]any
			if i == len(uses)-1 {
				if st.Kind != KindComputer || !st.OK() {
					content = append(content, map[string]any{"type": "text", "text": outcome(st)})
				}
				if img := image(st); img != nil {
					content = append(content, map[string]any{"type": "image", "source": map[string]any{
						"type": "base64", "media_type": "image/jpeg", "data": base64.StdEncoding.EncodeToString(img)}})
				}
			}
			if len(content) == 0 {
				content = append(content, map[string]any{"type": "text", "text": "ok"})
			}
			r["content"] = content
			results = append(results, r)
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": uses},
			map[string]any{"role": "user", "content": results})
	}
	if msgs == nil {
		msgs = []map[string]any{}
	}
	return map[string]any{"format": FormatAnthropic, "tools": tools, "messages": msgs}
}

func customTool(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc,
		"input_schema": map[string]any{"type": "object", "additionalProperties": true}}
}

// OpenAI gives the steps as input items of OpenAI's Responses API:
// computer_call and computer_call_output items for actions (each output
// carrying the screen after the step when image gives it), and
// function_call and function_call_output items for the rest.
func OpenAI(list []*Step, image Image) map[string]any {
	w, h := display(list)
	tools := []map[string]any{
		{"type": "computer_use_preview", "display_width": w, "display_height": h, "environment": "linux"},
		function("exec", "Runs a shell command in the desktop."),
		function("bureau_files", "Writes or deletes a file in the desktop (bureau's files API)."),
		function("bureau_clipboard", "Sets the desktop's clipboard."),
		function("bureau_computer", "A computer-use action OpenAI's computer tool has no name for, as bureau ran it."),
	}
	items := []map[string]any{}
	for _, st := range list {
		img := image(st)
		call := func(n int) string { return fmt.Sprintf("call_bureau_%d_%d", st.Seq, n) }
		fn := func(id, name string, args any) {
			b, _ := json.Marshal(args)
			items = append(items,
				map[string]any{"type": "function_call", "call_id": id, "name": name, "arguments": string(b)},
				map[string]any{"type": "function_call_output", "call_id": id, "output": outcome(st)})
		}
		if st.Kind != KindComputer {
			name, in := toolOf(st)
			if name == "bash" {
				name = "exec"
			}
			fn(call(0), name, in)
			continue
		}
		for i, a := range actionsOf(st) {
			oa, ok := toOpenAI(a)
			if !ok {
				fn(call(i), "bureau_computer", a)
				continue
			}
			items = append(items, map[string]any{"type": "computer_call", "id": fmt.Sprintf("cu_bureau_%d_%d", st.Seq, i),
				"call_id": call(i), "action": oa, "pending_safety_checks": []any{}, "status": "completed"})
			out := map[string]any{"type": "computer_call_output", "call_id": call(i)}
			if img != nil {
				out["output"] = map[string]any{"type": "computer_screenshot", "image_url": dataURL(img)}
			}
			items = append(items, out)
		}
	}
	return map[string]any{"format": FormatOpenAI, "tools": tools, "input": items}
}

func function(name, desc string) map[string]any {
	return map[string]any{"type": "function", "name": name, "description": desc,
		"parameters": map[string]any{"type": "object", "additionalProperties": true}}
}
