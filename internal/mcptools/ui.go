package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/computer"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// uiTools are the tools for a desktop's accessibility tree: what the
// applications say their windows hold, and actions on it.
type uiTools struct{ *api }

// treeLimit is ui_tree's default limit: enough for a window or two, small
// enough for a model's context (the API's own default is 500).
const treeLimit = 200

// addUITools registers ui_tree, ui_find and ui_action.
func (t *uiTools) addUITools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "ui_tree", Description: "Read a desktop's accessibility tree: what its apps say their windows hold (buttons, text fields, menus, links…), " +
		"one element a line, indented by depth: role \"name\" id=… @x,y widthxheight [states] actions=…. Only what shows on the screen unless visible_only is false; " +
		"narrow it with window (a title) or app, and role/name/states (matches and their ancestors); at most limit elements (default 200; the deepest go first) and depth levels. " +
		"An element that lists more children than shown is read further with root=its id. Use an id with ui_action, or as the computer tool's element to click it.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.tree)
	mcp.AddTool(s, &mcp.Tool{Name: "ui_find", Description: "Find elements in a desktop's accessibility tree by role (\"button\" matches push and toggle buttons; \"text\", \"check box\", \"menu item\", \"link\"…), " +
		"a part of their name, states (\"enabled,!checked\"), app or window: the matches one a line (role \"name\" id=… @x,y widthxheight [states] actions=…), searched deep. " +
		"None is an empty answer, not an error. Use an id with ui_action, or as the computer tool's element.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.find)
	mcp.AddTool(s, &mcp.Tool{Name: "ui_action", Description: "Act on an element of a desktop's accessibility tree through its application (not the mouse: it works on a covered window): " +
		"click (its main action: press, activate, jump…), focus, set_value (an editable text's whole content, or a slider's number, in value), or one of its own actions. " +
		"Answers whether it changed, or is gone (the action closed its window), and the element read again. An id that went stale (its window closed) is a gone error: read the tree again."}, t.act)
}

type uiFilterIn struct {
	Desktop     string         `json:"desktop" jsonschema:"the desktop's id"`
	Window      string         `json:"window,omitempty" jsonschema:"only windows whose title contains this, or all windows of apps whose name does"`
	App         string         `json:"app,omitempty" jsonschema:"only apps whose name contains this (Firefox, Thunar, mousepad)"`
	Role        string         `json:"role,omitempty" jsonschema:"roles, comma-separated (push button, text, check box, menu item, link); button matches push button and toggle button"`
	Name        string         `json:"name,omitempty" jsonschema:"a part of the name (case-insensitive)"`
	States      string         `json:"states,omitempty" jsonschema:"states required, comma-separated; !state for one absent (focused, enabled, !checked)"`
	VisibleOnly *bool          `json:"visible_only,omitempty" jsonschema:"default true: only what shows on the screen; false walks hidden tabs and menus too"`
	Depth       int            `json:"depth,omitempty" jsonschema:"levels below the apps, or below root (tree default 8, find 30; at most 30)"`
	Limit       int            `json:"limit,omitempty" jsonschema:"elements answered at most (tree default 200, find 100)"`
	Root        string         `json:"root,omitempty" jsonschema:"an element's id to start from, to read deeper into one part"`
	Display     *computer.Size `json:"display,omitempty" jsonschema:"the display size your computer-tool coordinates refer to: positions are then in it"`
}

// query is the filters as the API's query string.
func (in *uiFilterIn) query(limit int) string {
	q := url.Values{}
	for k, v := range map[string]string{"window": in.Window, "app": in.App, "role": in.Role, "name": in.Name, "states": in.States, "root": in.Root} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if in.VisibleOnly != nil {
		q.Set("visible_only", strconv.FormatBool(*in.VisibleOnly))
	}
	if in.Depth > 0 {
		q.Set("depth", strconv.Itoa(in.Depth))
	}
	if in.Limit > 0 {
		limit = in.Limit
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if in.Display != nil {
		q.Set("display", fmt.Sprintf("%dx%d", in.Display.Width, in.Display.Height))
	}
	return q.Encode()
}

func (t *uiTools) tree(ctx context.Context, req *mcp.CallToolRequest, in uiFilterIn) (*mcp.CallToolResult, Out, error) {
	return t.nodes(ctx, req, desktopPath(in.Desktop, "/ui?"+in.query(treeLimit)), true)
}

func (t *uiTools) find(ctx context.Context, req *mcp.CallToolRequest, in uiFilterIn) (*mcp.CallToolResult, Out, error) {
	return t.nodes(ctx, req, desktopPath(in.Desktop, "/ui/find?"+in.query(0)), false)
}

func (t *uiTools) nodes(ctx context.Context, req *mcp.CallToolRequest, path string, tree bool) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", path, nil, 0)
	if err != nil {
		return nil, nil, err
	}
	var list UINodeList
	if err := decode(r, &list); err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	WriteUINodes(&b, &list, tree)
	return textResult(b.String()), nil, nil
}

func (t *uiTools) act(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string         `json:"desktop" jsonschema:"the desktop's id"`
	Node    string         `json:"node" jsonschema:"the element's id, from ui_tree or ui_find"`
	Action  string         `json:"action" jsonschema:"click, focus, set_value, or one of the element's own actions"`
	Value   *string        `json:"value,omitempty" jsonschema:"set_value: the text (the whole content), or a number for a slider or spin button"`
	Display *computer.Size `json:"display,omitempty" jsonschema:"the display size your computer-tool coordinates refer to: the element's position is then in it"`
}) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{"action": in.Action}
	if in.Value != nil {
		body["value"] = *in.Value
	}
	path := desktopPath(in.Desktop, "/ui/"+url.PathEscape(in.Node))
	if q := displayQuery(in.Display); q != "" {
		path += "?" + q
	}
	r, err := t.call(ctx, req, "POST", path, body, 0)
	if err != nil {
		return nil, nil, err
	}
	var res struct {
		Node      *UINode `json:"node"`
		Changed   bool    `json:"changed"`
		Gone      bool    `json:"gone"`
		Performed string  `json:"performed"`
	}
	if err := decode(r, &res); err != nil {
		return nil, nil, err
	}
	what := "it did not change (take a screenshot to see what happened)"
	switch {
	case res.Gone:
		what = "it is gone (the action closed its window or removed it)"
	case res.Changed:
		what = "it changed"
	}
	text := fmt.Sprintf("performed %s: %s", res.Performed, what)
	if res.Node != nil {
		text += "\n" + UINodeLine(res.Node, in.Display != nil)
	}
	return textResult(text), nil, nil
}
