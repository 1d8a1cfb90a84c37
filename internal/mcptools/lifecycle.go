package mcptools

import (
	"context"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addLifecycleTools registers the tools for the rest of a desktop's life:
// pause, resume, reboot, delete and snapshots.
func (t *tools) addLifecycleTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "pause_desktop", Description: "Pause a running desktop: its CPUs stop at once, its RAM stays in the host's memory; resume_desktop continues it in milliseconds, programs and all. Returns the desktop."}, t.power("pause"))
	mcp.AddTool(s, &mcp.Tool{Name: "resume_desktop", Description: "Resume a paused or hibernated desktop; its programs continue where they were. Returns the desktop (a hibernated one takes a few seconds: poll get_desktop)."}, t.power("resume"))
	mcp.AddTool(s, &mcp.Tool{Name: "reboot_desktop", Description: "Reboot a running desktop (the guest restarts; running programs end, files and installed packages stay). Returns the desktop; poll get_desktop until it runs again."}, t.power("reboot"))
	mcp.AddTool(s, &mcp.Tool{Name: "delete_desktop", Description: "Delete a desktop: its VM, OS disk and snapshots go. Its persistent data disk (the home directory) is KEPT on the host unless delete_data is true " +
		"(default false); the answer's data_deleted says which (an admin also sees data_disk_kept, its path on the host). " +
		"Only set delete_data when the user explicitly asked to destroy the data: it cannot be undone. " +
		"Its screen recordings go too, but those marked kept; keep_recordings keeps them all.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.deleteDesktop)
	mcp.AddTool(s, &mcp.Tool{Name: "create_snapshot", Description: "Take a snapshot of a running, paused or stopped desktop and return it (name, scope, memory, size_bytes). " +
		"scope is \"all\" (default: both disks), \"os\" (the OS disk only) or \"data\" (the home directory only). " +
		"memory (default: true for scope all on a running desktop) also saves RAM so reverting brings back running programs; it needs scope all and is slower and larger than memory:false (disks only)."}, t.createSnapshot)
	mcp.AddTool(s, &mcp.Tool{Name: "list_snapshots", Description: "List a desktop's snapshots: {\"snapshots\": [{name, description, scope, memory, size_bytes, parent, created_at}]}.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listSnapshots)
	mcp.AddTool(s, &mcp.Tool{Name: "revert_snapshot", Description: "Revert a desktop to a snapshot, in the background (poll get_desktop until its operation ends). What changed since on the snapshot's disks is lost. " +
		"A memory snapshot comes back running with its programs; a disks-only one shuts a running desktop down, reverts and starts it again.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.snapshotOp("POST", "/revert"))
	mcp.AddTool(s, &mcp.Tool{Name: "delete_snapshot", Description: "Delete one of a desktop's snapshots for good; the desktop itself and its other snapshots are untouched.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.snapshotOp("DELETE", ""))
}

func ptr[T any](v T) *T { return &v }

func (t *tools) deleteDesktop(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop        string `json:"desktop" jsonschema:"the desktop's id"`
	DeleteData     bool   `json:"delete_data,omitempty" jsonschema:"also destroy the data disk (default false: it is kept)"`
	KeepRecordings bool   `json:"keep_recordings,omitempty" jsonschema:"keep all its screen recordings (default false: only those marked kept stay)"`
}) (*mcp.CallToolResult, Out, error) {
	q := "?delete_data=" + strconv.FormatBool(in.DeleteData)
	if in.KeepRecordings {
		q += "&keep_recordings=true"
	}
	r, err := t.call(ctx, req, "DELETE", desktopPath(in.Desktop, q), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

func (t *tools) createSnapshot(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop     string `json:"desktop" jsonschema:"the desktop's id"`
	Name        string `json:"name" jsonschema:"the snapshot's name"`
	Description string `json:"description,omitempty" jsonschema:"what it is for"`
	Scope       string `json:"scope,omitempty" jsonschema:"all (default), os or data"`
	Memory      *bool  `json:"memory,omitempty" jsonschema:"include the running programs (default: true when running)"`
}) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{"name": in.Name, "description": in.Description, "scope": in.Scope}
	if in.Memory != nil {
		body["memory"] = *in.Memory
	}
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/snapshots"), body, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

func (t *tools) listSnapshots(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/snapshots"), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

type snapshotIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Name    string `json:"name" jsonschema:"the snapshot's name"`
}

func (t *tools) snapshotOp(method, suffix string) mcp.ToolHandlerFor[snapshotIn, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in snapshotIn) (*mcp.CallToolResult, Out, error) {
		r, err := t.call(ctx, req, method, desktopPath(in.Desktop, "/snapshots/"+url.PathEscape(in.Name)+suffix), nil, 0)
		if err != nil {
			return nil, nil, err
		}
		if len(r.Body) == 0 {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "snapshot " + in.Name + " deleted"}}}, nil, nil
		}
		return jsonResult(r)
	}
}
