//go:build e2e

package e2e

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// checkColdMoves moves far, running on this host, cold to host two and
// back: with a snapshot (which libvirt will not move live) it is
// hibernated, its files and hibernation image are copied, its snapshot is
// defined there, and it is woken there, its programs as they were; then,
// hibernated on host two, a drain of host two moves it back here, still
// hibernated, and its next wake gives it this host's address. The
// snapshot taken before both moves still reverts. The snapshot is gone at
// the end, so far can move live again. run executes in far; marker is on
// its disks and pid runs in it.
func checkColdMoves(t *testing.T, s *server, far apiv1.Desktop, h2 *host2, run func(string) string, marker, pid string) {
	t.Helper()
	base := "/api/v1/desktops/" + far.ID
	if code := s.call(adminToken, "POST", base+"/snapshots", map[string]any{"name": "before-moves"}, nil); code != http.StatusCreated {
		t.Fatalf("snapshot: %d", code)
	}
	s.waitState(adminToken, far.ID, desktop.StateRunning, 5*time.Minute)
	run("echo after-snapshot > /home/agent/after; sync")

	// Running with a snapshot: hibernated, moved cold, woken on two.
	d := coldMove(t, s, far.ID, "two", desktop.StateRunning)
	if !strings.Contains(lastMigrated(t, s, far.ID), "moved cold (with 1 snapshots, so hibernated first) from host local to host two") {
		t.Errorf("the move's event: %q", lastMigrated(t, s, far.ID))
	}
	if got := run("cat /home/agent/marker /home/agent/after; kill -0 " + pid + " && echo alive"); got != marker+"\nafter-snapshot\nalive" {
		t.Errorf("after the cold move to two: %q", got)
	}
	waitAddress(t, run, d.IP, "10.121.")
	if out, err := exec.Command("virsh", "-c", h2.uri, "snapshot-list", "--name", domainOf(far.ID)).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "before-moves" {
		t.Errorf("its snapshot on host two: %v %q", err, out)
	}
	if out, err := exec.Command("virsh", "dominfo", domainOf(far.ID)).CombinedOutput(); err == nil {
		t.Errorf("its VM stays here: %s", out)
	}

	// Hibernated on two, drained back here: it stays hibernated, and gets
	// this host's address when it wakes.
	if code := s.call(adminToken, "POST", base+"/hibernate", nil, nil); code != http.StatusAccepted {
		t.Fatalf("hibernate: %d", code)
	}
	s.waitState(adminToken, far.ID, desktop.StateHibernated, 5*time.Minute)
	var h apiv1.Host
	if code := s.call(adminToken, "POST", "/api/v1/hosts/two/drain", nil, &h); code != http.StatusAccepted || !h.Draining || h.Drain == nil {
		t.Fatalf("drain: %d %+v", code, h)
	}
	begun := time.Now()
	for h.Drain == nil || !h.Drain.Done {
		if time.Since(begun) > 10*time.Minute {
			t.Fatalf("the drain did not end: %+v", h.Drain)
		}
		time.Sleep(time.Second)
		h = apiv1.Host{}
		s.call(adminToken, "GET", "/api/v1/hosts/two", nil, &h)
	}
	t.Logf("drained host two in %s: %+v", time.Since(begun).Round(100*time.Millisecond), *h.Drain)
	if h.Drain.Moved != 1 || len(h.Drain.Left) != 0 || h.Desktops != 0 || !h.Draining {
		t.Errorf("after the drain: %+v, %d desktops, draining %v", *h.Drain, h.Desktops, h.Draining)
	}
	// Nothing is placed on a draining host.
	if e := s.expectError(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "onto-drained", "host": "two", "memory_mib": 1024},
		http.StatusInsufficientStorage, "insufficient_capacity"); !strings.Contains(e.Error.Message, "draining") {
		t.Errorf("a create on a draining host: %q", e.Error.Message)
	}
	d = apiv1.Desktop{}
	s.call(adminToken, "GET", base, nil, &d)
	if d.State != string(desktop.StateHibernated) || d.Host != "local" || d.LastError != "" {
		t.Fatalf("after the drain: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
	if !strings.Contains(lastMigrated(t, s, far.ID), "moved cold (hibernated) from host two to host local") {
		t.Errorf("the drain's move event: %q", lastMigrated(t, s, far.ID))
	}
	if out, err := exec.Command("virsh", "dominfo", domainOf(far.ID)).CombinedOutput(); err != nil || !strings.Contains(string(out), "Managed save:   yes") {
		t.Errorf("its VM here: %v %s", err, out)
	}
	if exists(filepath.Join(h2.dir, "desktops", far.ID)) {
		t.Errorf("its folder stays on host two")
	}
	if code := s.call(adminToken, "DELETE", "/api/v1/hosts/two/drain", nil, &h); code != http.StatusOK || h.Draining {
		t.Errorf("undrain: %d %v", code, h.Draining)
	}
	if code := s.call(adminToken, "POST", base+"/resume", nil, nil); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("resume: %d", code)
	}
	d = *s.waitState(adminToken, far.ID, desktop.StateRunning, 5*time.Minute)
	if got := run("cat /home/agent/marker; kill -0 " + pid + " && echo alive"); got != marker+"\nalive" {
		t.Errorf("after the drain and a wake: %q", got)
	}
	waitAddress(t, run, d.IP, "10.120.")

	// The snapshot came through both moves: it reverts here.
	if code := s.call(adminToken, "POST", base+"/snapshots/before-moves/revert", nil, nil); code != http.StatusAccepted {
		t.Fatalf("revert: %d", code)
	}
	s.waitState(adminToken, far.ID, desktop.StateRunning, 5*time.Minute)
	if got := run("cat /home/agent/marker; test -e /home/agent/after && echo after-stays || echo after-gone"); got != marker+"\nafter-gone" {
		t.Errorf("after the revert: %q", got)
	}
	if code := s.call(adminToken, "DELETE", base+"/snapshots/before-moves", nil, nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Errorf("delete the snapshot: %d", code)
	}
}

// coldMove moves desktop id to host to and waits until it settles there
// in state want.
func coldMove(t *testing.T, s *server, id, to string, want desktop.State) apiv1.Desktop {
	t.Helper()
	begun := time.Now()
	var d apiv1.Desktop
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+id+"/migrate", map[string]any{"host": to}, &d); code != http.StatusAccepted || d.State != string(desktop.StateMigrating) {
		t.Fatalf("migrate to %s: %d %s", to, code, d.State)
	}
	steps := map[string]bool{}
	for d.State == string(desktop.StateMigrating) && time.Since(begun) < 10*time.Minute {
		time.Sleep(500 * time.Millisecond)
		d = apiv1.Desktop{}
		s.call(adminToken, "GET", "/api/v1/desktops/"+id, nil, &d)
		if i := strings.Index(d.OperationStep, ": "); i > 0 {
			steps[strings.Fields(d.OperationStep[i+2:])[0]] = true
		}
	}
	t.Logf("moved cold to %s in %s (as the API saw it), steps seen %v", to, time.Since(begun).Round(100*time.Millisecond), steps)
	if d.State != string(want) || d.Host != to || d.LastError != "" {
		t.Fatalf("after the move to %s: %s on %s (%q)", to, d.State, d.Host, d.LastError)
	}
	if !steps["hibernating"] && !steps["disks"] && !steps["data.qcow2"] {
		t.Errorf("no progress seen while it moved: %v", steps)
	}
	return d
}

// lastMigrated is the message of desktop id's latest migrated event.
func lastMigrated(t *testing.T, s *server, id string) string {
	t.Helper()
	var evs struct{ Events []apiv1.Event }
	s.call(adminToken, "GET", "/api/v1/desktops/"+id+"/events", nil, &evs)
	said := ""
	for _, e := range evs.Events {
		if e.Type == "migrated" {
			said = e.Message // oldest first: the last one stays
		}
	}
	return said
}

// waitAddress waits until the guest has ip on subnet ("10.121.").
func waitAddress(t *testing.T, run func(string) string, ip, subnet string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		addr := run("ip -4 -o addr show scope global | awk '{print $4}'")
		if strings.HasPrefix(addr, subnet) && strings.HasPrefix(addr, ip+"/") {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("its address is %q, want %s on %s", addr, ip, subnet)
			return
		}
		time.Sleep(3 * time.Second)
	}
}
