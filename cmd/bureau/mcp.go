package main

import (
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// mcpCmd serves bureau's MCP tools over stdio for desktop MCP clients
// (Claude Desktop, editors), calling a bureau server with the CLI's token.
func mcpCmd(cfg *config.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve bureau's MCP tools over stdio, calling the server at --url with your token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newClient(cfg)
			if err != nil {
				return err
			}
			remote := mcptools.Remote{Base: c.base, Client: &http.Client{Timeout: 10 * time.Minute}}
			s := mcptools.NewServer(remote, func(*mcp.CallToolRequest) string { return c.token }, version)
			return s.Run(cmd.Context(), &mcp.StdioTransport{})
		},
	}
}
