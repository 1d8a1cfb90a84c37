package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFile is the largest file read_file returns.
const maxFile = 4 << 20

// fileTools are the tools for the files in a desktop.
type fileTools struct{ *api }

// addFileTools registers read_file and write_file.
func (t *fileTools) addFileTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file in a desktop (up to 4 MiB), or list a directory. Relative paths are in the user's home.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.readFile)
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Write a file in a desktop, creating parent directories. Relative paths are in the user's home."}, t.writeFile)
}

// addDeleteFileTool registers delete_file.
func (t *fileTools) addDeleteFileTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "delete_file", Description: "Delete a file in a desktop (a directory only with recursive). Relative paths are in the user's home.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.deleteFile)
}

// addListFilesTool registers list_files: read_file lists a directory too,
// but a model looking for "ls" finds this one.
func (t *fileTools) addListFilesTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_files", Description: "List a directory in a desktop: {path (resolved, absolute), entries: [{name, type (file, dir, link, other), size, mode, mtime}], truncated}. " +
		"Relative paths are in the user's home; an empty path lists the home directory. Fails when the path is a file (read it with read_file).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listFiles)
}

type readIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Path    string `json:"path" jsonschema:"absolute, or relative to the user's home"`
}

func (t *fileTools) readFile(ctx context.Context, req *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, Out, error) {
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
	return textResult(string(r.Body)), nil, nil
}

type writeIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Path    string `json:"path" jsonschema:"absolute, or relative to the user's home"`
	Content string `json:"content" jsonschema:"the file's text"`
	Mode    string `json:"mode,omitempty" jsonschema:"octal permission bits, default 0644"`
}

func (t *fileTools) writeFile(ctx context.Context, req *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, Out, error) {
	q := url.Values{"path": {in.Path}}
	if in.Mode != "" {
		q.Set("mode", in.Mode)
	}
	return t.callJSON(ctx, req, "PUT", desktopPath(in.Desktop, "/files?"+q.Encode()), []byte(in.Content))
}

func (t *fileTools) deleteFile(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop   string `json:"desktop" jsonschema:"the desktop's id"`
	Path      string `json:"path" jsonschema:"absolute, or relative to the user's home"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"delete a directory and everything in it"`
}) (*mcp.CallToolResult, Out, error) {
	q := url.Values{"path": {in.Path}, "recursive": {strconv.FormatBool(in.Recursive)}}
	if _, err := t.call(ctx, req, "DELETE", desktopPath(in.Desktop, "/files?"+q.Encode()), nil, 0); err != nil {
		return nil, nil, err
	}
	return textResult("deleted " + in.Path), nil, nil
}

func (t *fileTools) listFiles(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Path    string `json:"path,omitempty" jsonschema:"the directory: absolute, or relative to the user's home (default: the home directory)"`
}) (*mcp.CallToolResult, Out, error) {
	p := in.Path
	if p == "" {
		p = "."
	}
	// A file would come back as its bytes: the limit stops a large one early.
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/files?path="+url.QueryEscape(p)), nil, maxFile)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(r.ContentType, "application/json") {
		return nil, nil, fmt.Errorf("%s is a file, not a directory: read it with read_file", p)
	}
	return jsonResult(r)
}
