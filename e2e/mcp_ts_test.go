//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func init() { runningChecks = append(runningChecks, runningCheck{"mcp_typescript", testMCPTypeScript}) }

// testMCPTypeScript drives the desktop through MCP with the official
// TypeScript client from npm (e2e/browser/mcp-client.mjs): tools listed
// with real descriptions, files, a data snapshot, the clipboard, events,
// a console link and URLs.
func testMCPTypeScript(t *testing.T, s *server, token string, d *desktop.Desktop) {
	cmd := exec.Command("node", "mcp-client.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "TOKEN="+token, "DESKTOP="+d.ID)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript MCP client: %v\n%s", err, stderr.String())
	}
	var r struct {
		Tools  int      `json:"tools"`
		Checks []string `json:"checks"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Tools < 35 || len(r.Checks) < 15 {
		t.Errorf("the TypeScript MCP client: %v %s", err, stdout.String())
	}
	t.Logf("TypeScript MCP client: %d tools, %d calls", r.Tools, len(r.Checks))
}
