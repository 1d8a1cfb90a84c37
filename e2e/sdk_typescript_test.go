//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// testSDKTypeScript builds the TypeScript SDK (sdk/typescript) and runs its
// tests with node against this server and desktop, then its example that
// replays a recorded agent transcript through the adapters, and checks the
// file the replayed session wrote.
func testSDKTypeScript(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := filepath.Join("..", "sdk", "typescript")
	env := append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+token, "BUREAU_DESKTOP="+d.ID)
	run := func(name string, args ...string) (string, time.Duration) {
		return runTool(ctx, t, dir, env, name, args...)
	}
	for _, dep := range []string{"typescript", "yaml"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", dep)); err != nil {
			run("npm", "ci", "--no-audit", "--no-fund")
			break
		}
	}
	run("npm", "run", "build")
	out, took := run("npm", "test")
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindStringSubmatch(out)
	if pass == nil || !strings.Contains(out, "# fail 0") || strings.Contains(out, "# SKIP") {
		t.Fatalf("the TypeScript SDK's tests did not all run and pass:\n%s", out)
	}
	t.Logf("TypeScript SDK: %s tests passed in %s", pass[1], took.Round(100*time.Millisecond))

	checkReplay(t, s, d, func(png string) (string, time.Duration) {
		return run("node", "examples/replay-transcript.mjs", d.ID, "--save", png)
	})
}
