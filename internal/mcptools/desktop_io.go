package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // get_resolution reads a JPEG's size
	_ "image/png"  // and a PNG's, should the server answer one
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addDesktopIOTools registers the tools for files, the clipboard, the
// screen size, a desktop's events and console links.
func (t *tools) addDesktopIOTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "delete_file", Description: "Delete a file in a desktop (a directory only with recursive). Relative paths are in the user's home.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.deleteFile)
	mcp.AddTool(s, &mcp.Tool{Name: "get_clipboard", Description: "Read a desktop's clipboard: its text, or the image when it holds one (then returned as an image).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getClipboard)
	mcp.AddTool(s, &mcp.Tool{Name: "set_clipboard", Description: "Put text on a desktop's clipboard (paste it there with ctrl+v or shift+Insert)."}, t.setClipboard)
	mcp.AddTool(s, &mcp.Tool{Name: "get_resolution", Description: "The screen size of a running desktop in pixels: {\"width\", \"height\"}. Does not wake a paused or hibernated desktop.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getResolution)
	mcp.AddTool(s, &mcp.Tool{Name: "set_resolution", Description: "Change a running desktop's screen size (e.g. 1280×800); screenshots and coordinates follow. Returns the size set."}, t.setResolution)
	mcp.AddTool(s, &mcp.Tool{Name: "desktop_events", Description: "A desktop's recent history: {\"events\": [...]}, the last limit events (default 50, at most 500) in time order, the newest last: " +
		"state changes, operations and their results, crashes and who asked. Read-only; for a live feed use the REST event stream.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.desktopEvents)
	mcp.AddTool(s, &mcp.Tool{Name: "console_link", Description: "Make a link a human can open in a browser to watch (view_only) or use a desktop's screen: noVNC through bureau, " +
		"valid for ttl_minutes (default 10, at most 60), revocable. Hand it to the person; it grants access to whoever holds it."}, t.consoleLink)
}

func (t *tools) deleteFile(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop   string `json:"desktop" jsonschema:"the desktop's id"`
	Path      string `json:"path" jsonschema:"absolute, or relative to the user's home"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"delete a directory and everything in it"`
}) (*mcp.CallToolResult, Out, error) {
	q := url.Values{"path": {in.Path}, "recursive": {strconv.FormatBool(in.Recursive)}}
	if _, err := t.call(ctx, req, "DELETE", desktopPath(in.Desktop, "/files?"+q.Encode()), nil, 0); err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + in.Path}}}, nil, nil
}

func (t *tools) getClipboard(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/clipboard"), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	var cb struct {
		Text  string   `json:"text"`
		Types []string `json:"types"`
	}
	json.Unmarshal(r.Body, &cb)
	for _, typ := range []string{"image/png", "image/jpeg"} {
		if cb.Text != "" || !slices.Contains(cb.Types, typ) {
			continue
		}
		img, err := t.callRaw(ctx, req, "GET", desktopPath(in.Desktop, "/clipboard?type="+url.QueryEscape(typ)), 8<<20)
		if err != nil {
			return nil, nil, err
		}
		if img.Status >= 400 {
			return nil, nil, fmt.Errorf("the clipboard's image: bureau answered %d", img.Status)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: img.Body, MIMEType: typ}}}, nil, nil
	}
	return jsonResult(r)
}

func (t *tools) setClipboard(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Text    string `json:"text" jsonschema:"the text to put on the clipboard"`
}) (*mcp.CallToolResult, Out, error) {
	if _, err := t.call(ctx, req, "PUT", desktopPath(in.Desktop, "/clipboard"), map[string]string{"text": in.Text}, 0); err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("the clipboard holds %d characters", len([]rune(in.Text)))}}}, nil, nil
}

func (t *tools) setResolution(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Width   int    `json:"width" jsonschema:"pixels"`
	Height  int    `json:"height" jsonschema:"pixels"`
}) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/resolution"), map[string]int{"width": in.Width, "height": in.Height}, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

func (t *tools) getResolution(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	// A passive screenshot neither wakes the desktop nor counts as its
	// use; the smallest JPEG carries the size in its header.
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/screenshot?passive=true&format=jpeg&quality=1"), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(r.Body))
	if err != nil {
		return nil, nil, fmt.Errorf("the screenshot's size: %w", err)
	}
	out := map[string]int{"width": cfg.Width, "height": cfg.Height}
	b, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, out, nil
}

func (t *tools) desktopEvents(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many of the most recent events (default 50, at most 500)"`
}) (*mcp.CallToolResult, Out, error) {
	n := in.Limit
	if n <= 0 {
		n = 50
	}
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/events?limit="+strconv.Itoa(min(n, 500))), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

func (t *tools) consoleLink(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop    string `json:"desktop" jsonschema:"the desktop's id"`
	ViewOnly   bool   `json:"view_only,omitempty" jsonschema:"watch only, no mouse or keyboard"`
	TTLMinutes int    `json:"ttl_minutes,omitempty" jsonschema:"how long the link works (default 10, at most 60)"`
}) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{"view_only": in.ViewOnly, "ttl_seconds": in.TTLMinutes * 60}
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/console"), body, 0)
	if err != nil {
		return nil, nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return nil, nil, fmt.Errorf("bureau's answer: %w", err)
	}
	if u, ok := out["url"].(string); ok && strings.HasPrefix(u, "/") {
		out["url"] = t.origin(req) + u
	}
	delete(out, "token") // the link carries it; one copy is enough
	b, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, out, nil
}

// origin is where the MCP client reaches bureau ("" when unknown): the
// host it used (in process) or the remote base URL.
func (t *tools) origin(req *mcp.CallToolRequest) string {
	if req != nil && req.Extra != nil && req.Extra.Header != nil && req.Extra.Header.Get(HostHeader) != "" {
		return req.Extra.Header.Get(ProtoHeader) + "://" + req.Extra.Header.Get(HostHeader)
	}
	if r, ok := t.c.(Remote); ok {
		return strings.TrimRight(r.Base, "/")
	}
	return ""
}
