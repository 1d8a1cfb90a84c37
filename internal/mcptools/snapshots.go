package mcptools

import (
	"context"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// historyTools are the tools for what a desktop was and what was done in
// it: snapshots, the step log, checkpoints and screen recordings.
type historyTools struct{ *api }

// addSnapshotTools registers the tools for a desktop's snapshots.
func (t *historyTools) addSnapshotTools(s *mcp.Server) {
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

func (t *historyTools) createSnapshot(ctx context.Context, req *mcp.CallToolRequest, in struct {
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
	return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/snapshots"), body)
}

func (t *historyTools) listSnapshots(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/snapshots"), nil)
}

type snapshotIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Name    string `json:"name" jsonschema:"the snapshot's name"`
}

func (t *historyTools) snapshotOp(method, suffix string) mcp.ToolHandlerFor[snapshotIn, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in snapshotIn) (*mcp.CallToolResult, Out, error) {
		r, err := t.call(ctx, req, method, desktopPath(in.Desktop, "/snapshots/"+url.PathEscape(in.Name)+suffix), nil, 0)
		if err != nil {
			return nil, nil, err
		}
		if len(r.Body) == 0 {
			return textResult("snapshot " + in.Name + " deleted"), nil, nil
		}
		return jsonResult(r)
	}
}
