//go:build e2e

package e2e

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// checkPlacement runs with placement as by default (BUREAU_PLACEMENT=auto,
// on since bureau has a remote host) while host two (labelled zone=b)
// runs far, a desktop of 2 GiB, and bureau's own host none: a create naming no host lands on the emptier host (this one),
// one asking for zone=b on host two, one asking for a label no host
// carries is refused naming each host and why. The hosts list shows what
// each host's desktops hold.
func checkPlacement(t *testing.T, s *server, h2 *host2) {
	t.Helper()
	var list struct{ Hosts []apiv1.Host }
	s.call(adminToken, "GET", "/api/v1/hosts", nil, &list)
	loads := map[string]apiv1.Host{}
	for _, h := range list.Hosts {
		loads[h.Name] = h
	}
	if two := loads["two"]; two.Desktops != 1 || two.CommittedMemoryMiB != 2048 || loads["local"].Desktops != 0 {
		t.Errorf("hosts' loads: two %d desktops holding %d MiB, local %d desktops", two.Desktops, two.CommittedMemoryMiB, loads["local"].Desktops)
	}
	if loads["local"].FreeDiskMiB <= 0 || loads["two"].FreeDiskMiB <= 0 {
		t.Errorf("hosts' free disk not measured: local %d MiB, two %d MiB", loads["local"].FreeDiskMiB, loads["two"].FreeDiskMiB)
	}
	t.Logf("hosts before placing: local %d MiB free memory, %d MiB free disk; two %d MiB free memory, %d MiB free disk, %d MiB held by its desktop",
		loads["local"].FreeMemoryMiB, loads["local"].FreeDiskMiB, loads["two"].FreeMemoryMiB, loads["two"].FreeDiskMiB, loads["two"].CommittedMemoryMiB)

	placed := func(name string, body map[string]any, want string) {
		t.Helper()
		body["name"], body["memory_mib"], body["data_disk_gib"], body["cold"] = name, 1024, 2, true
		var d apiv1.Desktop
		if code := s.call(adminToken, "POST", "/api/v1/desktops", body, &d); code != http.StatusAccepted {
			t.Fatalf("placed create %s: %d", name, code)
		}
		defer func() {
			// Removed once its VM started: it is not needed beyond where it went.
			s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
			if code := s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil); code != http.StatusOK {
				t.Errorf("delete %s: %d", name, code)
			}
		}()
		if d.Host != want {
			t.Errorf("%s placed on %q, want %q", name, d.Host, want)
		}
		uri := "qemu:///system"
		if want == "two" {
			uri = h2.uri
		}
		s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
		if out, err := exec.Command("virsh", "-c", uri, "domstate", domainOf(d.ID)).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "running" {
			t.Errorf("%s's VM on %s: %v %s", name, want, err, out)
		}
		var evs struct{ Events []apiv1.Event }
		s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
		said := false
		for _, e := range evs.Events {
			said = said || (e.Type == "create_requested" && strings.Contains(e.Message, "on host "+want+", placed by weight"))
		}
		if !said {
			t.Errorf("%s: no event says where it was placed: %+v", name, evs.Events)
		}
	}
	placed("near", map[string]any{}, "local")
	placed("labelled", map[string]any{"placement": map[string]any{"labels": map[string]string{"zone": "b"}}}, "two")

	e := s.expectError(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "nowhere", "memory_mib": 1024,
		"placement": map[string]any{"labels": map[string]string{"zone": "c"}}}, http.StatusInsufficientStorage, "insufficient_capacity")
	if !strings.Contains(e.Error.Message, "local: labels: no zone") || !strings.Contains(e.Error.Message, "two: labels: zone=b, not c") {
		t.Errorf("refusal when no host carries the labels: %q", e.Error.Message)
	}
	e = s.expectError(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "both", "host": "two",
		"placement": map[string]any{"labels": map[string]string{"zone": "b"}}}, http.StatusUnprocessableEntity, "invalid")
	if e.Error.Field != "placement" {
		t.Errorf("host and labels: field %q %q", e.Error.Field, e.Error.Message)
	}
	s.expectError(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "bad",
		"placement": map[string]any{"labels": map[string]string{"no spaces": "x"}}}, http.StatusUnprocessableEntity, "invalid")
}
