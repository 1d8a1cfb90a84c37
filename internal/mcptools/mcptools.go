// Package mcptools is bureau's MCP server: tools for agents (desktops,
// screenshot, computer actions, exec, files) that call bureau's own REST
// API with the caller's token, so they share its authentication,
// ownership checks, wake-on-use, validation, rate limits and audit log.
// The same tools serve /mcp (streamable HTTP, in process) and `bureau mcp`
// (stdio, calling a remote server).
package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/guest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller makes one REST call as the holder of token and returns the
// status, the body (at most limit bytes; truncated says there was more)
// and its content type.
type Caller interface {
	Call(ctx context.Context, token, method, path string, body []byte, limit int) (Response, error)
}

// Response is a REST answer.
type Response struct {
	Status      int
	Body        []byte
	ContentType string
	Truncated   bool
}

// TokenFunc finds the caller's API token for a tool call.
type TokenFunc func(req *mcp.CallToolRequest) string

// maxFile is the largest file read_file returns.
const maxFile = 4 << 20

// NewServer builds an MCP server whose tools call c with the token that
// token returns for each call.
func NewServer(c Caller, token TokenFunc, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bureau", Title: "bureau desktops", Version: version}, nil)
	t := &tools{c: c, token: token}
	mcp.AddTool(s, &mcp.Tool{Name: "list_desktops", Description: "List your desktops: id, name, state (running, paused, hibernated, stopped, …), size and image. Use the id with the other tools.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listDesktops)
	mcp.AddTool(s, &mcp.Tool{Name: "create_desktop", Description: "Create a desktop (a persistent Linux VM with Xfce). It boots in the background; poll get_desktop until state is running."}, t.createDesktop)
	mcp.AddTool(s, &mcp.Tool{Name: "get_desktop", Description: "Show one desktop: its state and desired state, the operation under way, size, image, network policy, keyboard layout and last error.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getDesktop)
	for _, op := range []string{"start", "stop", "hibernate"} {
		mcp.AddTool(s, &mcp.Tool{Name: op + "_desktop", Description: strings.ToUpper(op[:1]) + op[1:] + " a desktop. Its disks (and, for hibernate, its running programs) are kept."},
			t.power(op))
	}
	mcp.AddTool(s, &mcp.Tool{Name: "screenshot", Description: "Take a screenshot of a desktop's screen (PNG). A hibernated desktop is woken first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.screenshot)
	mcp.AddTool(s, &mcp.Tool{Name: "computer", Description: "Use a desktop's mouse and keyboard: a list of computer-use actions " +
		"in Anthropic's shape ({\"action\":\"left_click\",\"coordinate\":[x,y]}, key with xdotool names like \"ctrl+s\", type, scroll, …) " +
		"or OpenAI's ({\"type\":\"click\",\"x\":1,\"y\":2}). display gives the screen size your coordinates refer to; screenshot:true returns the settled screen after the actions."},
		t.computer)
	mcp.AddTool(s, &mcp.Tool{Name: "exec", Description: "Run a command in a desktop (as its user unless user is given) and return exit code, stdout and stderr. " +
		"With background: true it starts the command (a dev server, a watcher, a long build) and returns at once with a process id: read its output with process_log, stop it with kill_process, reach its port with fetch_port."}, t.exec)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file in a desktop (up to 4 MiB), or list a directory. Relative paths are in the user's home.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.readFile)
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Write a file in a desktop, creating parent directories. Relative paths are in the user's home."}, t.writeFile)
	t.addProcessTools(s)
	t.addServiceTools(s)
	t.addURLTools(s)
	t.addLifecycleTools(s)
	t.addDesktopIOTools(s)
	t.addFileTools(s)
	t.addStepTools(s)
	return s
}

type tools struct {
	c     Caller
	token TokenFunc
}

// Out is a tool's structured result: the API's JSON answer.
type Out = any

type desktopIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
}

// call makes a REST call and turns an API error into a tool error the
// model can read.
func (t *tools) call(ctx context.Context, req *mcp.CallToolRequest, method, path string, body any, limit int) (Response, error) {
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte: // sent as it is (a file's content)
		b = v
	default:
		var err error
		if b, err = json.Marshal(body); err != nil {
			return Response{}, err
		}
	}
	r, err := t.c.Call(withOrigin(ctx, req), t.token(req), method, path, b, limit)
	if err != nil {
		return r, err
	}
	if r.Status >= 400 {
		var e struct {
			Error struct {
				Code, Message string
			}
		}
		if json.Unmarshal(r.Body, &e) == nil && e.Error.Message != "" {
			return r, fmt.Errorf("%s (%d %s)", e.Error.Message, r.Status, e.Error.Code)
		}
		return r, fmt.Errorf("bureau answered %d", r.Status)
	}
	return r, nil
}

// jsonResult returns the API's JSON as the tool's text and structured
// result.
func jsonResult(r Response) (*mcp.CallToolResult, Out, error) {
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return nil, nil, fmt.Errorf("bureau's answer: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r.Body)}}}, v, nil
}

func desktopPath(id, rest string) string {
	return "/api/v1/desktops/" + url.PathEscape(id) + rest
}

func (t *tools) listDesktops(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", "/api/v1/desktops", nil, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

type createIn struct {
	Name        string `json:"name" jsonschema:"1-63 characters of a-z, 0-9 and -"`
	Image       string `json:"image,omitempty" jsonschema:"image name (default: the built desktop image)"`
	VCPUs       int    `json:"vcpus,omitempty"`
	MemoryMiB   int    `json:"memory_mib,omitempty"`
	DataDiskGiB int    `json:"data_disk_gib,omitempty" jsonschema:"size of the persistent /home disk"`
}

func (t *tools) createDesktop(ctx context.Context, req *mcp.CallToolRequest, in createIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "POST", "/api/v1/desktops", in, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

func (t *tools) getDesktop(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, ""), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

func (t *tools) power(op string) mcp.ToolHandlerFor[desktopIn, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
		r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/"+op), nil, 0)
		if err != nil {
			return nil, nil, err
		}
		return jsonResult(r)
	}
}

type screenshotIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Width   int    `json:"width,omitempty" jsonschema:"scale the image to this width"`
	Height  int    `json:"height,omitempty" jsonschema:"scale the image to this height"`
	Settle  bool   `json:"settle,omitempty" jsonschema:"wait until the screen has stopped changing (nothing changed for 300 ms, at most 3 s), e.g. after an action"`
}

func (t *tools) screenshot(ctx context.Context, req *mcp.CallToolRequest, in screenshotIn) (*mcp.CallToolResult, Out, error) {
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
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: r.Body, MIMEType: r.ContentType}}}, nil, nil
}

type computerIn struct {
	Desktop    string            `json:"desktop" jsonschema:"the desktop's id"`
	Actions    []computer.Action `json:"actions" jsonschema:"actions to run in order"`
	Display    *computer.Size    `json:"display,omitempty" jsonschema:"the screen size your coordinates refer to"`
	Screenshot bool              `json:"screenshot,omitempty" jsonschema:"return a screenshot after the actions"`
}

func (t *tools) computer(ctx context.Context, req *mcp.CallToolRequest, in computerIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/computer"),
		computer.Request{Actions: in.Actions, Display: in.Display, Screenshot: in.Screenshot}, 0)
	if err != nil {
		return nil, nil, err
	}
	var res computer.Result
	if err := json.Unmarshal(r.Body, &res); err != nil {
		return nil, nil, fmt.Errorf("bureau's answer: %w", err)
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

type execIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	guest.ExecRequest
	Checkpoint string `json:"checkpoint,omitempty" jsonschema:"true: snapshot the desktop's disks just before the command (memory: and its RAM), so revert_to_step can undo it"`
}

func (t *tools) exec(ctx context.Context, req *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, Out, error) {
	path := desktopPath(in.Desktop, "/exec")
	if in.Checkpoint != "" {
		path += "?checkpoint=" + url.QueryEscape(in.Checkpoint)
	}
	r, err := t.call(ctx, req, "POST", path, in.ExecRequest, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

type readIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Path    string `json:"path" jsonschema:"absolute, or relative to the user's home"`
}

func (t *tools) readFile(ctx context.Context, req *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/files?path="+url.QueryEscape(in.Path)), nil, maxFile)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(r.ContentType, "application/json") {
		return jsonResult(r) // a directory listing
	}
	if r.Truncated {
		return nil, nil, fmt.Errorf("%s is larger than %d MiB: download it with GET %s", in.Path, maxFile>>20, desktopPath(in.Desktop, "/files"))
	}
	if !utf8.Valid(r.Body) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file://" + in.Path, MIMEType: "application/octet-stream", Blob: r.Body}}}}, nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r.Body)}}}, nil, nil
}

type writeIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Path    string `json:"path" jsonschema:"absolute, or relative to the user's home"`
	Content string `json:"content" jsonschema:"the file's text"`
	Mode    string `json:"mode,omitempty" jsonschema:"octal permission bits, default 0644"`
}

func (t *tools) writeFile(ctx context.Context, req *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, Out, error) {
	q := url.Values{"path": {in.Path}}
	if in.Mode != "" {
		q.Set("mode", in.Mode)
	}
	r, err := t.call(ctx, req, "PUT", desktopPath(in.Desktop, "/files?"+q.Encode()), []byte(in.Content), 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}
