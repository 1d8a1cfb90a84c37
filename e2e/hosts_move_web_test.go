//go:build e2e

package e2e

import (
	"fmt"
	"os"
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
	shot := filepath.Join(os.TempDir(), "bureau-e2e-move-"+to+".png")
	var r struct {
		Offered []string          `json:"offered"`
		Refused map[string]string `json:"refused"`
		From    string            `json:"from"`
		Moving  bool              `json:"moving"`
		Step    string            `json:"step"`
		Cancel  bool              `json:"cancel"`
		Errors  []string          `json:"errors"`
	}
	consoleScript(t, s, "move.mjs", fmt.Sprintf("moving %s to %s in the browser (see %s)", id, to, shot), &r,
		"DESKTOP="+id, "HOST="+to, "SCREENSHOT="+shot)
	if !slices.Contains(r.Offered, to) {
		t.Errorf("the move dialog (see %s) does not offer host %s: offered %v, refused %v", shot, to, r.Offered, r.Refused)
	}
	if !r.Moving || len(r.Errors) > 0 {
		t.Errorf("moving %s to %s in the browser (see %s): %+v", id, to, shot, r)
	}
	t.Logf("moved from %s in the browser: dialog offered %v (refused %v), page showed it migrating (step %q, cancel button %v); the dialog: %s",
		r.From, r.Offered, r.Refused, r.Step, r.Cancel, shot)
}
