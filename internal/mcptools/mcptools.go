// Package mcptools is bureau's MCP server: tools for agents (desktops,
// screenshot, computer actions, exec, files) that call bureau's own REST
// API with the caller's token, so they share its authentication,
// ownership checks, wake-on-use, validation, rate limits and audit log.
// The same tools serve /mcp (streamable HTTP, in process) and `bureau mcp`
// (stdio, calling a remote server).
package mcptools

import (
	"context"

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

// NewServer builds an MCP server whose tools call c with the token that
// token returns for each call.
func NewServer(c Caller, token TokenFunc, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bureau", Title: "bureau desktops", Version: version}, nil)
	a := &api{c: c, token: token}
	desktops, screen, files := &desktopTools{a}, &screenTools{a}, &fileTools{a}
	programs, urls, history := &programTools{a}, &urlTools{a}, &historyTools{a}
	windows, ui, people := &windowTools{a}, &uiTools{a}, &peopleTools{a}
	// The tools are registered in the order they were added to bureau,
	// so the groups take turns.
	desktops.addDesktopTools(s)
	screen.addScreenTools(s)
	programs.addExecTool(s)
	files.addFileTools(s)
	programs.addProcessTools(s)
	programs.addServiceTools(s)
	urls.addURLTools(s)
	desktops.addLifecycleTools(s)
	history.addSnapshotTools(s)
	files.addDeleteFileTool(s)
	screen.addClipboardTools(s)
	desktops.addEventsTool(s)
	screen.addConsoleTool(s)
	files.addListFilesTool(s)
	history.addStepTools(s)
	desktops.addReadyTool(s)
	windows.addWindowTools(s)
	ui.addUITools(s)
	people.addPeopleTools(s)
	return s
}
