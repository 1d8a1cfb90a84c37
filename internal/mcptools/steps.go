package mcptools

import (
	"context"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addStepTools registers the tools for the step log and recordings.
func (t *historyTools) addStepTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_steps", Description: "List what was done in a desktop (its step log): each computer-use call, exec, file write or delete and clipboard write, " +
		"numbered, with who did it, the input, the result and whether it failed. The newest limit steps (default 20), oldest first; after gives the steps numbered above it instead.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listSteps)
	mcp.AddTool(s, &mcp.Tool{Name: "revert_to_step", Description: "Put a desktop back as it was before a step of its step log: it is reverted to the checkpoint taken for that step " +
		"(exec with checkpoint) or else to the newest snapshot taken before the step began; every step after that point is undone. The revert runs on: wait for the desktop to be running."}, t.revertToStep)
	mcp.AddTool(s, &mcp.Tool{Name: "set_checkpoint_policy", Description: "Make bureau snapshot a desktop by itself just before steps of its step log, so revert_to_step " +
		"goes back to exactly before them: every_steps N checkpoints the next step and then every Nth; before names step kinds always checkpointed " +
		"(computer, exec, file_write, file_delete, clipboard); memory keeps the RAM too; keep is how many automatic checkpoints stay (default 5; older ones are deleted, " +
		"never other snapshots). Replaces the whole policy (nothing given turns it off) and answers it."}, t.setCheckpointPolicy)
	mcp.AddTool(s, &mcp.Tool{Name: "start_recording", Description: "Start recording a desktop's screen as a video (until stop_recording, max_seconds or the desktop stops). " +
		"A person can watch it in bureau's web console, where each step of the step log opens the video at its time."}, t.startRecording)
	mcp.AddTool(s, &mcp.Tool{Name: "stop_recording", Description: "Stop a desktop's recording (the one start_recording returned); answers once the video is complete."}, t.stopRecording)
}

type listStepsIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many steps (default 20, at most 1000)"`
	After   int64  `json:"after,omitempty" jsonschema:"only the steps numbered above this (the oldest of them rather than the newest)"`
}

func (t *historyTools) listSteps(ctx context.Context, req *mcp.CallToolRequest, in listStepsIn) (*mcp.CallToolResult, Out, error) {
	q := url.Values{"limit": {strconv.Itoa(20)}}
	if in.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(in.Limit, 1000)))
	}
	if in.After > 0 {
		q.Set("after", strconv.FormatInt(in.After, 10))
	} else {
		q.Set("newest", "true")
	}
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/steps?"+q.Encode()), nil)
}

type stepIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Step    int64  `json:"step" jsonschema:"the step's number (seq) from list_steps"`
}

func (t *historyTools) revertToStep(ctx context.Context, req *mcp.CallToolRequest, in stepIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/steps/"+strconv.FormatInt(in.Step, 10)+"/revert"), nil)
}

type checkpointPolicyIn struct {
	Desktop    string   `json:"desktop" jsonschema:"the desktop's id"`
	EverySteps int      `json:"every_steps,omitempty" jsonschema:"a checkpoint before the next step and then every this many steps (0: none by count)"`
	Before     []string `json:"before,omitempty" jsonschema:"step kinds that always get a checkpoint: computer, exec, file_write, file_delete, clipboard"`
	Memory     bool     `json:"memory,omitempty" jsonschema:"snapshot the RAM as well as the disks (running programs come back on revert)"`
	Keep       int      `json:"keep,omitempty" jsonschema:"how many automatic checkpoints are kept, 1 to 50 (default 5)"`
}

func (t *historyTools) setCheckpointPolicy(ctx context.Context, req *mcp.CallToolRequest, in checkpointPolicyIn) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{"every_steps": in.EverySteps, "before": append([]string{}, in.Before...), "memory": in.Memory}
	if in.Keep != 0 {
		body["keep"] = in.Keep
	}
	return t.callJSON(ctx, req, "PUT", desktopPath(in.Desktop, "/checkpoints"), body)
}

type startRecordingIn struct {
	Desktop    string `json:"desktop" jsonschema:"the desktop's id"`
	FPS        int    `json:"fps,omitempty" jsonschema:"how often the screen is looked at, 1 to 10 a second (default 2)"`
	MaxSeconds int    `json:"max_seconds,omitempty" jsonschema:"end it after this long (default: bureau's limit, an hour)"`
}

func (t *historyTools) startRecording(ctx context.Context, req *mcp.CallToolRequest, in startRecordingIn) (*mcp.CallToolResult, Out, error) {
	body := map[string]int{}
	if in.FPS != 0 {
		body["fps"] = in.FPS
	}
	if in.MaxSeconds != 0 {
		body["max_seconds"] = in.MaxSeconds
	}
	return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/recordings"), body)
}

type recordingIn struct {
	Desktop   string `json:"desktop" jsonschema:"the desktop's id"`
	Recording string `json:"recording" jsonschema:"the recording's id (rec_…) from start_recording"`
}

func (t *historyTools) stopRecording(ctx context.Context, req *mcp.CallToolRequest, in recordingIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/recordings/"+url.PathEscape(in.Recording)+"/stop"), nil)
}
