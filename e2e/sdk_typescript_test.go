//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func init() { runningChecks = append(runningChecks, runningCheck{"sdk_typescript", testSDKTypeScript}) }

// testSDKTypeScript builds the TypeScript SDK (sdk/typescript) and runs its
// tests with node against this server and desktop, then its example that
// replays a recorded agent transcript through the adapters, and checks the
// file the replayed session wrote.
func testSDKTypeScript(t *testing.T, s *server, token string, d *desktop.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := filepath.Join("..", "sdk", "typescript")
	env := append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+token, "BUREAU_DESKTOP="+d.ID)
	run := func(name string, args ...string) (string, time.Duration) {
		begun := time.Now()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String(), time.Since(begun)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "typescript")); err != nil {
		run("npm", "ci", "--no-audit", "--no-fund")
	}
	run("npm", "run", "build")
	out, took := run("npm", "test")
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindStringSubmatch(out)
	if pass == nil || !strings.Contains(out, "# fail 0") || strings.Contains(out, "# SKIP") {
		t.Fatalf("the TypeScript SDK's tests did not all run and pass:\n%s", out)
	}
	t.Logf("TypeScript SDK: %s tests passed in %s", pass[1], took.Round(100*time.Millisecond))

	s.guest(d, "rm -f /home/agent/replay-marker.txt")
	png := filepath.Join(t.TempDir(), "final.png")
	out, took = run("node", "examples/replay-transcript.mjs", d.ID, "--save", png)
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the replay saved no screenshot: %v\n%s", err, out)
	}
	if got, _ := s.guest(d, "cat /home/agent/replay-marker.txt"); got != "replayed" {
		t.Errorf("the replayed session did not write its file (%q):\n%s", got, out)
	}
	s.guest(d, "rm -f /home/agent/replay-marker.txt; pkill -x xterm; true")
	t.Logf("replayed transcript in %s:\n%s", took.Round(100*time.Millisecond), out)
}
