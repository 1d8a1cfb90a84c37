//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// consoleScript runs a web console script of browser/ (hosts.mjs,
// move.mjs) against s signed in as admin, with env added to its
// environment, and decodes the JSON line it prints into out; what it says
// on stderr comes with a failure. what names it in messages.
func consoleScript(t *testing.T, s *server, script, what string, out any, env ...string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("%s needs node (make setup installs it): %v", what, err)
	}
	cmd := exec.Command("node", script)
	cmd.Dir = "browser"
	cmd.Env = append(append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+adminToken), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), out); err != nil {
		t.Fatalf("%s printed %q: %v\n%s", script, stdout.String(), err, stderr.String())
	}
}
