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
	mcp.AddTool(s, &mcp.Tool{Name: "pause_desktop", Description: "Pause a running desktop: its CPUs stop at once, its RAM stays in memory; resume_desktop continues it in milliseconds, programs and all."}, t.power("pause"))
	mcp.AddTool(s, &mcp.Tool{Name: "resume_desktop", Description: "Resume a paused or hibernated desktop; its programs continue where they were."}, t.power("resume"))
	mcp.AddTool(s, &mcp.Tool{Name: "reboot_desktop", Description: "Reboot a running desktop (the guest restarts; running programs end, files and installed packages stay)."}, t.power("reboot"))
	mcp.AddTool(s, &mcp.Tool{Name: "delete_desktop", Description: "Delete a desktop. Its persistent data disk (the home directory) is KEPT on the host unless delete_data is true; " +
		"only set delete_data when the user explicitly asked to destroy the data, it cannot be undone.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.deleteDesktop)
	mcp.AddTool(s, &mcp.Tool{Name: "create_snapshot", Description: "Take a snapshot of a desktop. With memory (the default when it runs) reverting brings back its running programs too; " +
		"scope \"all\" (default), \"os\" (the OS disk only) or \"data\" (the home directory only)."}, t.createSnapshot)
	mcp.AddTool(s, &mcp.Tool{Name: "list_snapshots", Description: "List a desktop's snapshots with their scope, size and whether they hold memory.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listSnapshots)
	mcp.AddTool(s, &mcp.Tool{Name: "revert_snapshot", Description: "Revert a desktop to a snapshot: what changed since (in the snapshot's scope) is lost.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.snapshotOp("POST", "/revert"))
	mcp.AddTool(s, &mcp.Tool{Name: "delete_snapshot", Description: "Delete a snapshot (the desktop itself is untouched).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.snapshotOp("DELETE", ""))
}

func ptr[T any](v T) *T { return &v }

func (t *tools) deleteDesktop(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop    string `json:"desktop" jsonschema:"the desktop's id"`
	DeleteData bool   `json:"delete_data,omitempty" jsonschema:"also destroy the data disk (default false: it is kept)"`
}) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "DELETE", desktopPath(in.Desktop, "?delete_data="+strconv.FormatBool(in.DeleteData)), nil, 0)
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
