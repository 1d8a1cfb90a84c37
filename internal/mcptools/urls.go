package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// urlTools are the tools for a desktop's live URLs and share links.
type urlTools struct{ *api }

// addURLTools registers the tools for live URLs and share links.
func (t *urlTools) addURLTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_urls", Description: "List a desktop's live URLs: every service port and every port made public or shared, " +
		"each with its URL (http(s)://<port>-<desktop>.<domain>/ and the /preview/<desktop>/<port>/ form), whether it is public and how many share links are active. " +
		"A live URL is private (the owner's token or a link from the web console) unless shared or made public, and it wakes a sleeping desktop.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listURLs)
	mcp.AddTool(s, &mcp.Tool{Name: "share_url", Description: "Make a share link to a port's live URL, for a human to open without an account: valid for hours (default 24, at most 720), " +
		"read_only allows only GET and HEAD. The link is shown once; revoke it with revoke_share."}, t.shareURL)
	mcp.AddTool(s, &mcp.Tool{Name: "revoke_share", Description: "Revoke a share link (by its id from share_url or list_shares): browsers it opened lose access at once."}, t.revokeShare)
	mcp.AddTool(s, &mcp.Tool{Name: "list_shares", Description: "List a desktop's share links (ids, ports, expiry, revoked), never their secrets.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listShares)
	mcp.AddTool(s, &mcp.Tool{Name: "set_url_public", Description: "Make a port's live URL public (anyone who has the URL can open it, no sign-in) or private again. " +
		"Only do this when the owner asked for it: prefer share_url."}, t.setURLPublic)
}

func (t *urlTools) listURLs(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/urls"), nil)
}

func (t *urlTools) shareURL(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop  string  `json:"desktop" jsonschema:"the desktop's id"`
	Port     int     `json:"port" jsonschema:"the TCP port inside the desktop"`
	Hours    float64 `json:"hours,omitempty" jsonschema:"how long the link works (default 24, at most 720)"`
	ReadOnly bool    `json:"read_only,omitempty" jsonschema:"allow only GET and HEAD"`
}) (*mcp.CallToolResult, Out, error) {
	if in.Hours < 0 || in.Hours > 720 {
		return nil, nil, fmt.Errorf("hours: between 1/60 and 720")
	}
	body := map[string]any{"port": in.Port, "ttl_s": int(in.Hours * 3600), "read_only": in.ReadOnly}
	return t.callJSON(ctx, req, "POST", desktopPath(in.Desktop, "/shares"), body)
}

func (t *urlTools) revokeShare(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Share   string `json:"share" jsonschema:"the share link's id"`
}) (*mcp.CallToolResult, Out, error) {
	if _, err := t.call(ctx, req, "DELETE", desktopPath(in.Desktop, "/shares/"+url.PathEscape(in.Share)), nil, 0); err != nil {
		return nil, nil, err
	}
	return textResult("share link " + in.Share + " revoked"), nil, nil
}

func (t *urlTools) listShares(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "GET", desktopPath(in.Desktop, "/shares"), nil)
}

func (t *urlTools) setURLPublic(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Port    int    `json:"port" jsonschema:"the TCP port inside the desktop"`
	Public  bool   `json:"public" jsonschema:"true: anyone with the URL; false: private again"`
}) (*mcp.CallToolResult, Out, error) {
	return t.callJSON(ctx, req, "PUT", desktopPath(in.Desktop, "/urls/"+strconv.Itoa(in.Port)), map[string]bool{"public": in.Public})
}
