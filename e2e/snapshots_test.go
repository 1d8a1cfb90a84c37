//go:build e2e

package e2e

import (
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// acpiInterrupts prints how many ACPI (SCI) interrupts the guest has had.
const acpiInterrupts = `awk '/ acpi$/ {n=0; for (i=2; i<NF; i++) if ($i ~ /^[0-9]+$/) n+=$i; print n}' /proc/interrupts`

// genID is a desktop's VM generation id, as libvirt has it.
func genID(t *testing.T, d *apiv1.Desktop) string {
	t.Helper()
	out, err := exec.Command("virsh", "-c", "qemu:///system", "dumpxml", domainOf(d.ID)).Output()
	if err != nil {
		t.Fatalf("dumpxml: %v", err)
	}
	_, rest, _ := strings.Cut(string(out), "<genid>")
	id, _, _ := strings.Cut(rest, "</genid>")
	return id
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// testSnapshots takes a data-only snapshot and a memory snapshot of the
// running desktop, reverts to the memory one (programs and files come back
// as they were) and then to the data one (only /home rolls back; the
// desktop restarts).
func testSnapshots(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID + "/snapshots"
	ws := "/home/agent/workspace.txt"
	s.guest(d, "echo v1 > "+ws+" && echo os-v1 > /var/tmp/os.txt && sync")
	var sn apiv1.Snapshot
	if code := s.call(token, "POST", base, map[string]any{"name": "ws1", "scope": "data", "description": "workspace v1"}, &sn); code != http.StatusCreated || sn.Memory || sn.Scope != "data" {
		t.Fatalf("data snapshot: %d %+v", code, sn)
	}
	s.expectError(token, "POST", base, map[string]any{"name": "ws1"}, 409, "name_taken")
	s.expectError(token, "POST", base, map[string]any{"name": "x", "scope": "home"}, 422, "invalid")
	s.expectError(token, "POST", base, map[string]any{"name": "../x"}, 422, "invalid")

	// A process started before the memory snapshot survives its revert; one
	// started after it does not exist afterwards.
	before, _ := s.guest(d, "echo v2 > "+ws+" && sync && (nohup sleep 100000 >/dev/null 2>&1 & echo $!)")
	// The guest learns of a new generation id by an ACPI notification
	// (the vmgenid driver then reseeds its RNG): count ACPI interrupts.
	genBefore := genID(t, d)
	sciAtSnapshot, _ := s.guest(d, acpiInterrupts)
	takeAt := time.Now()
	if code := s.call(token, "POST", base, map[string]any{"name": "full"}, &sn); code != http.StatusCreated || !sn.Memory || sn.Parent != "ws1" {
		t.Fatalf("memory snapshot: %d %+v", code, sn)
	}
	t.Logf("memory snapshot of a running desktop: %s", time.Since(takeAt).Round(100*time.Millisecond))
	after, _ := s.guest(d, "echo v3 > "+ws+" && echo os-v3 > /var/tmp/os.txt && sync && (nohup sleep 200000 >/dev/null 2>&1 & echo $!)")

	var list struct{ Snapshots []apiv1.Snapshot }
	s.call(token, "GET", base, nil, &list)
	if len(list.Snapshots) != 2 || list.Snapshots[0].Name != "ws1" || list.Snapshots[1].Name != "full" {
		t.Errorf("snapshots listed: %+v", list.Snapshots)
	}

	revertAt := time.Now()
	var r apiv1.Desktop
	if code := s.call(token, "POST", base+"/full/revert", nil, &r); code != http.StatusAccepted || r.State != string(desktop.StateReverting) {
		t.Fatalf("revert: %d %+v", code, r)
	}
	s.expectError(token, "POST", base+"/full/revert", nil, 409, "busy")
	s.waitState(token, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(d, 2*time.Minute)
	t.Logf("revert to a memory snapshot → guest agent: %s", time.Since(revertAt).Round(100*time.Millisecond))
	s.agentUp(token, d, 2*time.Minute) // bureau-agent reconnects to the restored guest
	if after := genID(t, d); after == genBefore || after == "" {
		t.Errorf("generation id %q after the revert, was %q: want a new one", after, genBefore)
	}
	if out, _ := s.guest(d, "test -e /sys/bus/acpi/drivers/vmgenid/QEMUVGID:00 && echo bound"); out != "bound" {
		t.Errorf("the guest's vmgenid driver is not bound to the generation id device: %q", out)
	}
	if sci, _ := s.guest(d, acpiInterrupts); atoi(sci) <= atoi(sciAtSnapshot) {
		t.Errorf("no ACPI notification of the new generation id reached the guest (ACPI interrupts %s at the snapshot, %s after the revert)", sciAtSnapshot, sci)
	}
	if out, _ := s.guest(d, "cat "+ws); out != "v2" {
		t.Errorf("workspace after memory revert = %q, want v2", out)
	}
	// By command line, not pid: after a revert the guest hands out the
	// snapshot's next pids again, so "after"'s pid may be someone else's.
	if out, _ := s.guest(d, "ps -eo pid=,args= | grep -c ' sleep 100000$'"); out != "1" {
		t.Errorf("process %s from before the snapshot: %q running", before, out)
	}
	if out, _ := s.guest(d, "ps -eo pid=,args= | grep -c ' sleep 200000$'"); out != "0" {
		t.Errorf("process %s started after the snapshot survived the revert (%s running)", after, out)
	}

	// Data-only revert: /home goes back to v1, the OS disk keeps os-v1… as
	// restored by the memory revert; write a new OS marker to prove it stays.
	// It restarts the guest (a boot, ~90 s under TCG).
	t.Run("data_revert", func(t *testing.T) {
		revertData(t, s.with(t), token, d, base, ws)
	})

	if code := s.call(token, "DELETE", base+"/full", nil, nil); code != http.StatusNoContent {
		t.Errorf("delete snapshot: %d", code)
	}
	s.expectError(token, "DELETE", base+"/full", nil, 404, "not_found")
	s.call(token, "GET", base, nil, &list)
	if len(list.Snapshots) != 1 || list.Snapshots[0].Name != "ws1" {
		t.Errorf("after delete: %+v", list.Snapshots)
	}
	var evs struct{ Events []apiv1.Event }
	s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
	var types []string
	for _, e := range evs.Events {
		types = append(types, e.Type)
	}
	for _, want := range []string{"snapshot_created", "reverted", "snapshot_deleted"} {
		if !strings.Contains(strings.Join(types, " "), want) {
			t.Errorf("events lack %s", want)
		}
	}
	// The desktop is ready again after the restart for the checks after
	// this (its session up: files and exec answer 409 not_ready before).
	s.waitReadyAPI(token, d.ID, 5*time.Minute)
}

// revertData reverts the running desktop to its data-only snapshot ws1:
// /home goes back to v1 while the OS disk keeps what it has (the guest
// restarts).
func revertData(t *testing.T, s *server, token string, d *apiv1.Desktop, base, ws string) {
	t.Helper()
	var r apiv1.Desktop
	s.guest(d, "echo v4 > "+ws+" && echo os-v4 > /var/tmp/os.txt && sync")

	dataAt := time.Now()
	s.call(token, "POST", base+"/ws1/revert", nil, &r)
	s.waitState(token, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitGuest(d, "home mounted after data revert", "test -f "+ws, 5*time.Minute)
	t.Logf("revert of the data disk (restart included) → guest: %s", time.Since(dataAt).Round(time.Second))
	if out, _ := s.guest(d, "cat "+ws); out != "v1" {
		t.Errorf("workspace after data revert = %q, want v1", out)
	}
	if out, _ := s.guest(d, "cat /var/tmp/os.txt"); out != "os-v4" {
		t.Errorf("OS disk after a data-only revert = %q, want os-v4 (untouched)", out)
	}
}
