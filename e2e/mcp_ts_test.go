//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// testMCPTypeScript drives the desktop through MCP with the official
// TypeScript client from npm (e2e/browser/mcp-client.mjs): tools listed
// with real descriptions and hints, files, a data snapshot, the
// clipboard, the screen size, events, a console link and URLs. The
// desktop is left as it was.
func testMCPTypeScript(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begun := time.Now()
	cmd := exec.CommandContext(ctx, "node", "mcp-client.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "TOKEN="+token, "DESKTOP="+d.ID)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript MCP client: %v\n%s", err, stderr.String())
	}
	var r struct {
		Tools      int      `json:"tools"`
		Checks     []string `json:"checks"`
		Resolution struct{ Width, Height int }
		ConsoleURL string `json:"console_url"`
		Events     int    `json:"events"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Tools < 40 || len(r.Checks) < 18 {
		t.Errorf("the TypeScript MCP client: %v %s", err, stdout.String())
	}
	if !strings.HasPrefix(r.ConsoleURL, s.url+"/console/"+d.ID+"?token=") || r.Resolution.Width == 0 || r.Events == 0 {
		t.Errorf("the TypeScript MCP client's answers: %s", stdout.String())
	}
	t.Logf("TypeScript MCP client: %d tools, %d calls in %s; screen %dx%d", r.Tools, len(r.Checks),
		time.Since(begun).Round(100*time.Millisecond), r.Resolution.Width, r.Resolution.Height)

	// What the client made it deleted, as REST sees it.
	var snaps struct{ Snapshots []apiv1.Snapshot }
	s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/snapshots", nil, &snaps)
	for _, sn := range snaps.Snapshots {
		if sn.Name == "mcp-ts" {
			t.Error("the snapshot the TypeScript client made is still there")
		}
	}
	if code := s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/files?path=mcp-ts", nil, nil); code != 404 {
		t.Errorf("the directory the TypeScript client made answers %d", code)
	}
	var after apiv1.Desktop
	if s.call(token, "GET", "/api/v1/desktops/"+d.ID, nil, &after); after.State != string(desktop.StateRunning) {
		t.Errorf("after the TypeScript client the desktop is %s", after.State)
	}
}
