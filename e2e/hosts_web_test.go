//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// checkHostsPage drives the web console's Hosts page in a real browser
// (browser/hosts.mjs): every host the API lists is shown with its state,
// and host, which must run no desktops, is drained from the page and then
// undrained. The API must agree at the end: host is not draining.
func checkHostsPage(t *testing.T, s *server, host string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the Hosts page check needs node (make setup installs it): %v", err)
	}
	var list struct{ Hosts []apiv1.Host }
	if code := s.call(adminToken, "GET", "/api/v1/hosts", nil, &list); code != http.StatusOK {
		t.Fatalf("hosts: %d", code)
	}
	shot := filepath.Join(os.TempDir(), "bureau-e2e-hosts.png")
	cmd := exec.Command("node", "hosts.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+adminToken, "HOST="+host, "SCREENSHOT="+shot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hosts page in the browser: %v\n%s", err, stderr.String())
	}
	var r struct {
		Listed    []string          `json:"listed"`
		States    map[string]string `json:"states"`
		Nav       bool              `json:"nav"`
		Drained   bool              `json:"drained"`
		Drain     string            `json:"drain"`
		Undrained bool              `json:"undrained"`
		Errors    []string          `json:"errors"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		t.Fatalf("hosts.mjs printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	for _, h := range list.Hosts {
		if !slices.Contains(r.Listed, h.Name) {
			t.Errorf("the Hosts page (see %s) does not list host %s as %s: it shows %v", shot, h.Name, h.State, r.States)
		}
	}
	if !r.Nav || !r.Drained || !r.Undrained || len(r.Errors) > 0 {
		t.Errorf("the Hosts page (see %s): %+v", shot, r)
	}
	var h apiv1.Host
	if code := s.call(adminToken, "GET", "/api/v1/hosts/"+host, nil, &h); code != http.StatusOK || h.Draining {
		t.Errorf("host %s after the Hosts page undrained it: %d draining=%v drain=%+v", host, code, h.Draining, h.Drain)
	}
}
