package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/guest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxPortBody bounds what fetch_port returns.
const maxPortBody = 1 << 20

// programTools are the tools for programs in a desktop: exec, background
// processes and their ports, services and the secrets they use.
type programTools struct{ *api }

// addExecTool registers exec.
func (t *programTools) addExecTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "exec", Description: "Run a command in a desktop (as its user unless user is given) and return exit code, stdout and stderr. " +
		"With background: true it starts the command (a dev server, a watcher, a long build) and returns at once with a process id: read its output with process_log, stop it with kill_process, reach its port with fetch_port."}, t.exec)
}

// addProcessTools registers the tools for background processes and ports.
func (t *programTools) addProcessTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_processes", Description: "List a desktop's background processes (started by exec with background: true): id, name, pid, running or exit code, log size.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listProcesses)
	mcp.AddTool(s, &mcp.Tool{Name: "process_log", Description: "Read the output (stdout and stderr together) of a background process: the last tail_bytes bytes (default 64 KiB).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.processLog)
	mcp.AddTool(s, &mcp.Tool{Name: "kill_process", Description: "Stop a background process: signal TERM by default (KILL, INT, HUP… by name)."}, t.killProcess)
	mcp.AddTool(s, &mcp.Tool{Name: "fetch_port", Description: "Make an HTTP GET request to a port inside the desktop (127.0.0.1:PORT, e.g. a dev server you started in the background) and return the status and body (up to 1 MiB). No guest networking is involved.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.fetchPort)
}

type execIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	guest.ExecRequest
	Checkpoint string `json:"checkpoint,omitempty" jsonschema:"true: snapshot the desktop's disks just before the command (memory: and its RAM), so revert_to_step can undo it"`
}

func (t *programTools) exec(ctx context.Context, req *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, Out, error) {
	path := desktopPath(in.Desktop, "/exec")
	if in.Checkpoint != "" {
		path += "?checkpoint=" + url.QueryEscape(in.Checkpoint)
	}
	return t.callJSON(ctx, req, "POST", path, in.ExecRequest)
}

type processIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Process string `json:"process" jsonschema:"the process id (p-…) from exec or list_processes"`
}

func (t *programTools) listProcesses(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/processes"), nil)
}

type logIn struct {
	processIn
	TailBytes int `json:"tail_bytes,omitempty" jsonschema:"how much of the end of the log (default 65536, at most 1048576)"`
}

func (t *programTools) processLog(ctx context.Context, req *mcp.CallToolRequest, in logIn) (*mcp.CallToolResult, Out, error) {
	return t.logTail(ctx, req, desktopPath(in.Desktop, "/processes/"+url.PathEscape(in.Process)+"/log"), in.TailBytes)
}

// logTail reads the last tailBytes (default 64 KiB, at most 1 MiB) of a
// log as text.
func (t *programTools) logTail(ctx context.Context, req *mcp.CallToolRequest, path string, tailBytes int) (*mcp.CallToolResult, Out, error) {
	n := tailBytes
	if n <= 0 {
		n = 64 << 10
	}
	n = min(n, 1<<20)
	r, err := t.call(ctx, req, "GET", path+"?tail="+strconv.Itoa(n), nil, n+1)
	if err != nil {
		return nil, nil, err
	}
	text := string(r.Body)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return textResult(text), nil, nil
}

type killIn struct {
	processIn
	Signal string `json:"signal,omitempty" jsonschema:"TERM (default), KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT"`
}

func (t *programTools) killProcess(ctx context.Context, req *mcp.CallToolRequest, in killIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "DELETE", desktopPath(in.Desktop, "/processes/"+url.PathEscape(in.Process)+"?signal="+url.QueryEscape(in.Signal)), nil)
}

type portIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Port    int    `json:"port" jsonschema:"the TCP port inside the desktop"`
	Path    string `json:"path,omitempty" jsonschema:"the path and query, default /"`
}

func (t *programTools) fetchPort(ctx context.Context, req *mcp.CallToolRequest, in portIn) (*mcp.CallToolResult, Out, error) {
	p := in.Path
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	r, err := t.callRaw(ctx, req, "GET", desktopPath(in.Desktop, "/ports/"+strconv.Itoa(in.Port)+p), maxPortBody)
	if err != nil {
		return nil, nil, err
	}
	body := string(r.Body)
	if !utf8.ValidString(body) {
		body = fmt.Sprintf("(%d bytes of %s, not text)", len(r.Body), r.ContentType)
	}
	note := ""
	if r.Truncated {
		note = " (body cut at 1 MiB)"
	}
	return textResult(fmt.Sprintf("HTTP %d %s%s\n\n%s", r.Status, r.ContentType, note, body)), nil, nil
}
