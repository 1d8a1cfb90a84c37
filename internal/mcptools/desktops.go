package mcptools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// desktopTools are the tools for a desktop's life: create, list, show,
// power, delete, and its events.
type desktopTools struct{ *api }

// addDesktopTools registers the tools that list, create, show, start,
// stop and hibernate desktops.
func (t *desktopTools) addDesktopTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_desktops", Description: "List your desktops: id, name, state (running, paused, hibernated, stopped, …), size and image. Use the id with the other tools.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listDesktops)
	mcp.AddTool(s, &mcp.Tool{Name: "create_desktop", Description: "Create a desktop (a persistent Linux VM with Xfce) and, by default, wait until it is ready " +
		"(running, its session up: exec, files, screenshot input and the clipboard work), up to timeout_s. Answers {ready, took_s, waiting_for, note, desktop}; " +
		"ready false means it is still coming up (call wait_ready). With wait_ready false it answers the desktop at once, booting in the background."}, t.createDesktop)
	mcp.AddTool(s, &mcp.Tool{Name: "get_desktop", Description: "Show one desktop: its state and desired state, the operation under way, whether it is ready (ready; else up and waiting_for), size, image, network policy, keyboard layout and last error.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getDesktop)
	for _, op := range []string{"start", "stop", "hibernate"} {
		mcp.AddTool(s, &mcp.Tool{Name: op + "_desktop", Description: strings.ToUpper(op[:1]) + op[1:] + " a desktop. Its disks (and, for hibernate, its running programs) are kept."},
			t.power(op))
	}
}

// addLifecycleTools registers the tools for the rest of a desktop's life:
// pause, resume, reboot and delete.
func (t *desktopTools) addLifecycleTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "pause_desktop", Description: "Pause a running desktop: its CPUs stop at once, its RAM stays in the host's memory; resume_desktop continues it in milliseconds, programs and all. Returns the desktop."}, t.power("pause"))
	mcp.AddTool(s, &mcp.Tool{Name: "resume_desktop", Description: "Resume a paused or hibernated desktop; its programs continue where they were. Returns the desktop (a hibernated one takes a few seconds: wait_ready waits for it)."}, t.power("resume"))
	mcp.AddTool(s, &mcp.Tool{Name: "reboot_desktop", Description: "Reboot a running desktop (the guest restarts; running programs end, files and installed packages stay). Returns the desktop; call wait_ready before using it again."}, t.power("reboot"))
	mcp.AddTool(s, &mcp.Tool{Name: "delete_desktop", Description: "Delete a desktop: its VM, OS disk and snapshots go. Its persistent data disk (the home directory) is KEPT on the host unless delete_data is true " +
		"(default false); the answer's data_deleted says which (an admin also sees data_disk_kept, its path on the host). " +
		"Only set delete_data when the user explicitly asked to destroy the data: it cannot be undone. " +
		"Its screen recordings go too, but those marked kept; keep_recordings keeps them all.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.deleteDesktop)
}

// addEventsTool registers desktop_events.
func (t *desktopTools) addEventsTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "desktop_events", Description: "A desktop's recent history: {\"events\": [...]}, the last limit events (default 50, at most 500) in time order, the newest last: " +
		"state changes, operations and their results, crashes and who asked. Read-only; for a live feed use the REST event stream.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.desktopEvents)
}

func (t *desktopTools) listDesktops(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", "/api/v1/desktops", nil)
}

// createBody is the API's create request, as create_desktop sends it.
type createBody struct {
	Name        string `json:"name"`
	Image       string `json:"image,omitempty"`
	VCPUs       int    `json:"vcpus,omitempty"`
	MemoryMiB   int    `json:"memory_mib,omitempty"`
	DataDiskGiB int    `json:"data_disk_gib,omitempty"`
}

type createIn struct {
	Name        string `json:"name" jsonschema:"1-63 characters of a-z, 0-9 and -"`
	Image       string `json:"image,omitempty" jsonschema:"image name (default: the built desktop image)"`
	VCPUs       int    `json:"vcpus,omitempty"`
	MemoryMiB   int    `json:"memory_mib,omitempty"`
	DataDiskGiB int    `json:"data_disk_gib,omitempty" jsonschema:"size of the persistent /home disk"`
	WaitReady   *bool  `json:"wait_ready,omitempty" jsonschema:"wait until the desktop is ready before answering (default true)"`
	TimeoutS    *int   `json:"timeout_s,omitempty" jsonschema:"with wait_ready, how long to wait at most, in seconds: 0 to 900, default 600"`
}

func (t *desktopTools) createDesktop(ctx context.Context, req *mcp.CallToolRequest, in createIn) (*mcp.CallToolResult, Out, error) {
	began := time.Now()
	limit, err := readyLimit(in.TimeoutS)
	if err != nil {
		return nil, nil, err
	}
	body := createBody{Name: in.Name, Image: in.Image, VCPUs: in.VCPUs, MemoryMiB: in.MemoryMiB, DataDiskGiB: in.DataDiskGiB}
	if in.WaitReady != nil && !*in.WaitReady {
		return t.callJSON(ctx, req, "POST", "/api/v1/desktops", body)
	}
	r, err := t.call(ctx, req, "POST", "/api/v1/desktops", body, 0)
	if err != nil {
		return nil, nil, err
	}
	var d struct {
		ID string `json:"id"`
	}
	if err := decode(r, &d); err != nil {
		return nil, nil, err
	}
	out, err := t.waitReady(ctx, req, d.ID, limit, began)
	if err != nil {
		return nil, nil, fmt.Errorf("desktop %s was created, but waiting for it to be ready failed: %w", d.ID, err)
	}
	return valueResult(out)
}

func (t *desktopTools) getDesktop(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, ""), nil)
}

func (t *desktopTools) power(op string) mcp.ToolHandlerFor[desktopIn, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
		return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/"+op), nil)
	}
}

func (t *desktopTools) deleteDesktop(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop        string `json:"desktop" jsonschema:"the desktop's id"`
	DeleteData     bool   `json:"delete_data,omitempty" jsonschema:"also destroy the data disk (default false: it is kept)"`
	KeepRecordings bool   `json:"keep_recordings,omitempty" jsonschema:"keep all its screen recordings (default false: only those marked kept stay)"`
}) (*mcp.CallToolResult, Out, error) {
	q := "?delete_data=" + strconv.FormatBool(in.DeleteData)
	if in.KeepRecordings {
		q += "&keep_recordings=true"
	}
	return t.callJSON(ctx, req, "DELETE", desktopPath(in.Desktop, q), nil)
}

func (t *desktopTools) desktopEvents(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many of the most recent events (default 50, at most 500)"`
}) (*mcp.CallToolResult, Out, error) {
	n := in.Limit
	if n <= 0 {
		n = 50
	}
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/events?limit="+strconv.Itoa(min(n, 500))), nil)
}
