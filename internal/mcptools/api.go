package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// api is the plumbing every group of tools shares: it reaches bureau's
// REST API as the caller of a tool.
type api struct {
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
func (a *api) call(ctx context.Context, req *mcp.CallToolRequest, method, path string, body any, limit int) (Response, error) {
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
	r, err := a.c.Call(withOrigin(ctx, req), a.token(req), method, path, b, limit)
	if err != nil {
		return r, err
	}
	if r.Status >= 400 {
		return r, apiError(r)
	}
	return r, nil
}

// apiError is an API error answer as a tool error: its message and code,
// and what to do next where the code says (a desktop not ready yet).
func apiError(r Response) error {
	var e struct {
		Error struct {
			Code, Message string
		}
	}
	if json.Unmarshal(r.Body, &e) != nil || e.Error.Message == "" {
		return fmt.Errorf("bureau answered %d", r.Status)
	}
	err := fmt.Errorf("%s (%d %s)", e.Error.Message, r.Status, e.Error.Code)
	switch e.Error.Code {
	case "not_ready":
		return fmt.Errorf("%w. Call wait_ready with this desktop's id, then try again", err)
	case "gone":
		return fmt.Errorf("%w. Read the tree again (ui_tree or ui_find) for the element as it is now", err)
	case "no_effect":
		return fmt.Errorf("%w. The actions after it did not run; take a screenshot to see why", err)
	case "human_in_control":
		return fmt.Errorf("%w. A person has taken over this desktop's mouse and keyboard, so your input did not run: "+
			"wait and try again later (control_status says who holds it and until when), or ask them with request_help; screenshots and other reads still work", err)
	case "denied":
		return fmt.Errorf("%w. A person denied this action (or nobody approved it in time), so it did not run: "+
			"do not retry it as it is; ask with request_help if you need to know why or what to do instead", err)
	case "already_decided":
		return fmt.Errorf("%w. get_request shows what became of it", err)
	}
	return err
}

// callJSON makes a call and returns the API's JSON answer as the tool's
// result.
func (a *api) callJSON(ctx context.Context, req *mcp.CallToolRequest, method, path string, body any) (*mcp.CallToolResult, Out, error) {
	r, err := a.call(ctx, req, method, path, body, 0)
	if err != nil {
		return nil, nil, err
	}
	return jsonResult(r)
}

// callRaw makes a call and returns whatever status it got: an app's
// 404 or 500 is its answer, not a failed tool call (bureau's own errors,
// e.g. 502 when nothing listens, come as JSON with a message).
func (a *api) callRaw(ctx context.Context, req *mcp.CallToolRequest, method, path string, limit int) (Response, error) {
	return a.c.Call(withOrigin(ctx, req), a.token(req), method, path, nil, limit)
}

// origin is where the MCP client reaches bureau ("" when unknown): the
// host it used (in process) or the remote base URL.
func (a *api) origin(req *mcp.CallToolRequest) string {
	if req != nil && req.Extra != nil && req.Extra.Header != nil && req.Extra.Header.Get(HostHeader) != "" {
		return req.Extra.Header.Get(ProtoHeader) + "://" + req.Extra.Header.Get(HostHeader)
	}
	if r, ok := a.c.(Remote); ok {
		return strings.TrimRight(r.Base, "/")
	}
	return ""
}

func desktopPath(id, rest string) string {
	return "/api/v1/desktops/" + url.PathEscape(id) + rest
}

func ptr[T any](v T) *T { return &v }

// decode reads the API's JSON answer into v.
func decode(r Response, v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("bureau's answer: %w", err)
	}
	return nil
}

// jsonResult returns the API's JSON as the tool's text and structured
// result.
func jsonResult(r Response) (*mcp.CallToolResult, Out, error) {
	var v any
	if err := decode(r, &v); err != nil {
		return nil, nil, err
	}
	return textResult(string(r.Body)), v, nil
}

// valueResult returns v as the tool's structured result and, in JSON,
// its text.
func valueResult(v any) (*mcp.CallToolResult, Out, error) {
	b, _ := json.Marshal(v)
	return textResult(string(b)), v, nil
}

// textResult is a tool result of one text.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// imageResult is a tool result of one image.
func imageResult(data []byte, mimeType string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: mimeType}}}
}
