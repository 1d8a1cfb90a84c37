package mcptools

import (
	"context"
	"fmt"
	"net/url"

	"github.com/bureau/bureau/internal/guest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addServiceTools registers the tools for services and secrets' names.
func (t *programTools) addServiceTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "create_service", Description: "Start a service in a desktop: a command (a web app, a worker) that bureau keeps running — restarted when it fails (restart: on-failure, the default; always; no), started again at every boot, kept through hibernation. " +
		"Give it a port to get a URL. Name secrets (set by a human with `bureau secret set NAME`) to have their values as environment variables, without the values ever entering this conversation; output that echoes them is redacted. " +
		"A service with the same name is replaced."}, t.createService)
	mcp.AddTool(s, &mcp.Tool{Name: "list_services", Description: "List a desktop's services: state (running, backoff, waiting for a secret, exited, stopped), pid, restarts, exit code, uptime, port and URL.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listServices)
	mcp.AddTool(s, &mcp.Tool{Name: "service_log", Description: "Read a service's output (stdout and stderr together, across restarts): the last tail_bytes bytes (default 64 KiB).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.serviceLog)
	mcp.AddTool(s, &mcp.Tool{Name: "control_service", Description: "Start, stop, restart or delete a service. A stopped service stays stopped (also across boots) until started."}, t.controlService)
	mcp.AddTool(s, &mcp.Tool{Name: "list_secrets", Description: "List the names of the secrets a desktop can use (its own and its owner's), never their values.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listSecrets)
}

type serviceIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	guest.ServiceRequest
}

func (t *programTools) createService(ctx context.Context, req *mcp.CallToolRequest, in serviceIn) (*mcp.CallToolResult, Out, error) {
	if !guest.ValidServiceName(in.Name) {
		return nil, nil, fmt.Errorf("name: 1-32 lower-case letters, digits and '-'")
	}
	return t.callJSON(ctx, req, "PUT", desktopPath(in.Desktop, "/services/"+in.Name), in.ServiceRequest)
}

func (t *programTools) listServices(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/services"), nil)
}

type serviceNameIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Name    string `json:"name" jsonschema:"the service's name"`
}

func (t *programTools) serviceLog(ctx context.Context, req *mcp.CallToolRequest, in struct {
	serviceNameIn
	TailBytes int `json:"tail_bytes,omitempty" jsonschema:"how much of the end of the log (default 65536, at most 1048576)"`
}) (*mcp.CallToolResult, Out, error) {
	return t.logTail(ctx, req, desktopPath(in.Desktop, "/services/"+url.PathEscape(in.Name)+"/logs"), in.TailBytes)
}

func (t *programTools) controlService(ctx context.Context, req *mcp.CallToolRequest, in struct {
	serviceNameIn
	Action string `json:"action" jsonschema:"start, stop, restart or delete"`
}) (*mcp.CallToolResult, Out, error) {
	path := desktopPath(in.Desktop, "/services/"+url.PathEscape(in.Name))
	method := "POST"
	switch in.Action {
	case "start", "stop", "restart":
		path += "/" + in.Action
	case "delete":
		method = "DELETE"
	default:
		return nil, nil, fmt.Errorf("action %q: want start, stop, restart or delete", in.Action)
	}
	r, err := t.call(ctx, req, method, path, nil, 0)
	if err != nil {
		return nil, nil, err
	}
	if method == "DELETE" {
		return textResult("service " + in.Name + " deleted"), nil, nil
	}
	return jsonResult(r)
}

func (t *programTools) listSecrets(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/secrets"), nil)
}
