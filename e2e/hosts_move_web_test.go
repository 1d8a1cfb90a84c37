//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// moveInBrowser starts moving desktop id to host to through the web
// console in a real browser (browser/move.mjs): the desktop's page offers
// "Move to host…", its dialog lists to as a host it can move to, and once
// "Move to <to>" is clicked the page shows the desktop migrating. It does
// not wait for the move to end: the caller follows it through the API.
func moveInBrowser(t *testing.T, s *server, id, to string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("moving a desktop in the browser needs node (make setup installs it): %v", err)
	}
	shot := filepath.Join(os.TempDir(), "bureau-e2e-move-"+to+".png")
	cmd := exec.Command("node", "move.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+adminToken, "DESKTOP="+id, "HOST="+to, "SCREENSHOT="+shot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("moving %s to %s in the browser (see %s): %v\n%s", id, to, shot, err, stderr.String())
	}
	var r struct {
		Offered []string          `json:"offered"`
		Refused map[string]string `json:"refused"`
		From    string            `json:"from"`
		Moving  bool              `json:"moving"`
		Step    string            `json:"step"`
		Cancel  bool              `json:"cancel"`
		Errors  []string          `json:"errors"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		t.Fatalf("move.mjs printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	if !slices.Contains(r.Offered, to) {
		t.Errorf("the move dialog (see %s) does not offer host %s: offered %v, refused %v", shot, to, r.Offered, r.Refused)
	}
	if !r.Moving || len(r.Errors) > 0 {
		t.Errorf("moving %s to %s in the browser (see %s): %+v", id, to, shot, r)
	}
	t.Logf("moved from %s in the browser: dialog offered %v (refused %v), page showed it migrating (step %q, cancel button %v); the dialog: %s",
		r.From, r.Offered, r.Refused, r.Step, r.Cancel, shot)
}
