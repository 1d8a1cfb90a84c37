package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addFileTools registers list_files: read_file lists a directory too, but
// a model looking for "ls" finds this one.
func (t *tools) addFileTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_files", Description: "List a directory in a desktop: {path (resolved, absolute), entries: [{name, type (file, dir, link, other), size, mode, mtime}], truncated}. " +
		"Relative paths are in the user's home; an empty path lists the home directory. Fails when the path is a file (read it with read_file).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listFiles)
}

func (t *tools) listFiles(ctx context.Context, req *mcp.CallToolRequest, in struct {
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
