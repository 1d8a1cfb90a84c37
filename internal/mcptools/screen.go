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
	"strings"

	"github.com/bureau/bureau/internal/computer"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// screenTools are the tools for a desktop's screen: screenshots,
// computer use, the clipboard, the screen size and console links.
type screenTools struct{ *api }

// addScreenTools registers screenshot and computer.
func (t *screenTools) addScreenTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "screenshot", Description: "Take a screenshot of a desktop's screen (PNG). A hibernated desktop is woken first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.screenshot)
	mcp.AddTool(s, &mcp.Tool{Name: "computer", Description: "Use a desktop's mouse and keyboard: a list of computer-use actions " +
		"in Anthropic's shape ({\"action\":\"left_click\",\"coordinate\":[x,y]}, key with xdotool names like \"ctrl+s\", type, scroll, …) " +
		"or OpenAI's ({\"type\":\"click\",\"x\":1,\"y\":2}). display gives the screen size your coordinates refer to; screenshot:true returns the settled screen after the actions. " +
		"A click or move may name an element instead of a coordinate ({\"action\":\"left_click\",\"element\":\"<id from ui_find>\"} or {\"element\":{\"role\":\"button\",\"name\":\"Save\"}}). " +
		"Each input action's result says whether the screen changed after it (screen_changed; false for a click that hit nothing); " +
		"expect:\"change\" stops at the first action that changed nothing, as an error naming it.",
		InputSchema: inputSchema[computerIn](map[string][]any{"expect": {"change"}})},
		t.computer)
}

// addClipboardTools registers the tools for the clipboard and the
// screen size.
func (t *screenTools) addClipboardTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "get_clipboard", Description: "Read a desktop's clipboard: its text, or the image when it holds one (then returned as an image).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getClipboard)
	mcp.AddTool(s, &mcp.Tool{Name: "set_clipboard", Description: "Put text on a desktop's clipboard (paste it there with ctrl+v or shift+Insert)."}, t.setClipboard)
	mcp.AddTool(s, &mcp.Tool{Name: "get_resolution", Description: "The screen size of a running desktop in pixels: {\"width\", \"height\"}. Does not wake a paused or hibernated desktop.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getResolution)
	mcp.AddTool(s, &mcp.Tool{Name: "set_resolution", Description: "Change a running desktop's screen size (e.g. 1280×800); screenshots and coordinates follow. Returns the size set."}, t.setResolution)
}

// addConsoleTool registers console_link.
func (t *screenTools) addConsoleTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "console_link", Description: "Make a link a human can open in a browser to watch (view_only) or use a desktop's screen: noVNC through bureau, " +
		"valid for ttl_minutes (default 10, at most 60), revocable. Hand it to the person; it grants access to whoever holds it."}, t.consoleLink)
}

type screenshotIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Width   int    `json:"width,omitempty" jsonschema:"scale the image to this width"`
	Height  int    `json:"height,omitempty" jsonschema:"scale the image to this height"`
	Settle  bool   `json:"settle,omitempty" jsonschema:"wait until the screen has stopped changing (nothing changed for 300 ms, at most 3 s), e.g. after an action"`
}

func (t *screenTools) screenshot(ctx context.Context, req *mcp.CallToolRequest, in screenshotIn) (*mcp.CallToolResult, Out, error) {
	q := url.Values{}
	if in.Width > 0 {
		q.Set("width", fmt.Sprint(in.Width))
	}
	if in.Height > 0 {
		q.Set("height", fmt.Sprint(in.Height))
	}
	if in.Settle {
		q.Set("settle", "true")
	}
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/screenshot?"+q.Encode()), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	return imageResult(r.Body, r.ContentType), nil, nil
}

type computerIn struct {
	Desktop    string            `json:"desktop" jsonschema:"the desktop's id"`
	Actions    []computer.Action `json:"actions" jsonschema:"actions to run in order"`
	Display    *computer.Size    `json:"display,omitempty" jsonschema:"the screen size your coordinates refer to"`
	Screenshot bool              `json:"screenshot,omitempty" jsonschema:"return a screenshot after the actions"`
	Expect     string            `json:"expect,omitempty" jsonschema:"change: every input action must change the screen within verify_ms, else the call stops there with an error naming the action (those after it do not run)"`
	VerifyMS   *int              `json:"verify_ms,omitempty" jsonschema:"how long after each input action the screen is watched for a change, in ms (default 500, at most 10000; 0: no check)"`
}

func (t *screenTools) computer(ctx context.Context, req *mcp.CallToolRequest, in computerIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/computer"),
		computer.Request{Actions: in.Actions, Display: in.Display, Screenshot: in.Screenshot, Expect: in.Expect, VerifyMS: in.VerifyMS}, 0)
	if err != nil {
		return nil, nil, err
	}
	var res computer.Result
	if err := decode(r, &res); err != nil {
		return nil, nil, err
	}
	// Images go as image content; the rest as text.
	var content []mcp.Content
	for i := range res.Results {
		if img := res.Results[i].Image; img != nil {
			content = append(content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MediaType})
			res.Results[i].Image = nil
		}
	}
	if res.Screenshot != nil {
		content = append(content, &mcp.ImageContent{Data: res.Screenshot.Data, MIMEType: res.Screenshot.MediaType})
		res.Screenshot = nil
	}
	text, _ := json.Marshal(res)
	content = append([]mcp.Content{&mcp.TextContent{Text: string(text)}}, content...)
	return &mcp.CallToolResult{Content: content}, nil, nil
}

func (t *screenTools) getClipboard(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
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
		return imageResult(img.Body, typ), nil, nil
	}
	return jsonResult(r)
}

func (t *screenTools) setClipboard(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Text    string `json:"text" jsonschema:"the text to put on the clipboard"`
}) (*mcp.CallToolResult, Out, error) {
	if _, err := t.call(ctx, req, "PUT", desktopPath(in.Desktop, "/clipboard"), map[string]string{"text": in.Text}, 0); err != nil {
		return nil, nil, err
	}
	return textResult(fmt.Sprintf("the clipboard holds %d characters", len([]rune(in.Text)))), nil, nil
}

func (t *screenTools) setResolution(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Width   int    `json:"width" jsonschema:"pixels"`
	Height  int    `json:"height" jsonschema:"pixels"`
}) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/resolution"), map[string]int{"width": in.Width, "height": in.Height})
}

func (t *screenTools) getResolution(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
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
	return valueResult(map[string]int{"width": cfg.Width, "height": cfg.Height})
}

func (t *screenTools) consoleLink(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop    string `json:"desktop" jsonschema:"the desktop's id"`
	ViewOnly   bool   `json:"view_only,omitempty" jsonschema:"watch only, no mouse or keyboard"`
	TTLMinutes int    `json:"ttl_minutes,omitempty" jsonschema:"how long the link works (default 10, at most 60)"`
	Name       string `json:"name,omitempty" jsonschema:"who the link is for (Dana): shown to the others watching and in the history"`
}) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{"view_only": in.ViewOnly, "ttl_seconds": in.TTLMinutes * 60}
	if in.Name != "" {
		body["name"] = in.Name
	}
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/console"), body, 0)
	if err != nil {
		return nil, nil, err
	}
	var out map[string]any
	if err := decode(r, &out); err != nil {
		return nil, nil, err
	}
	if u, ok := out["url"].(string); ok && strings.HasPrefix(u, "/") {
		out["url"] = t.origin(req) + u
	}
	delete(out, "token") // the link carries it; one copy is enough
	return valueResult(out)
}
