//go:build e2e

package e2e

import (
	"net/http"
	"os"
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
	var list struct{ Hosts []apiv1.Host }
	if code := s.call(adminToken, "GET", "/api/v1/hosts", nil, &list); code != http.StatusOK {
		t.Fatalf("hosts: %d", code)
	}
	shot := filepath.Join(os.TempDir(), "bureau-e2e-hosts.png")
	var r struct {
		Listed    []string          `json:"listed"`
		States    map[string]string `json:"states"`
		Nav       bool              `json:"nav"`
		Drained   bool              `json:"drained"`
		Drain     string            `json:"drain"`
		Undrained bool              `json:"undrained"`
		Errors    []string          `json:"errors"`
	}
	consoleScript(t, s, "hosts.mjs", "the Hosts page in the browser (see "+shot+")", &r, "HOST="+host, "SCREENSHOT="+shot)
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
