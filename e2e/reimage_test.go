//go:build e2e

package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// testResizeCloneReimage grows the data disk live, clones the desktop from
// a snapshot (the clone has the files but its own identity) and reimages
// it (the OS is fresh, /home is kept). It boots two more times.
func testResizeCloneReimage(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID

	// Live resize: the guest sees the bigger /home at once.
	var grown apiv1.Desktop
	if code := s.call(token, "POST", base+"/data-disk", map[string]any{"size_gib": d.DataDiskGiB + 2}, &grown); code != http.StatusOK || grown.DataDiskGiB != d.DataDiskGiB+2 {
		t.Fatalf("grow data disk: %d %+v", code, grown)
	}
	s.expectError(token, "POST", base+"/data-disk", map[string]any{"size_gib": 1}, 422, "invalid")
	want := strconv.Itoa(d.DataDiskGiB + 1) // ext4 overhead: at least one GiB more than before
	s.waitGuest(d, "/home grown", "test $(df -BG --output=size /home | tail -1 | tr -dc 0-9) -ge "+want, time.Minute)

	// Clone from a snapshot.
	s.guest(d, "echo from-parent > /home/agent/clone-marker && sync")
	parentMachineID, _ := s.guest(d, "cat /etc/machine-id")
	parentHostKey, _ := s.guest(d, "cat /etc/ssh/ssh_host_ed25519_key.pub")
	parentInstance, _ := s.guest(d, "cat /var/lib/cloud/data/instance-id")
	if code := s.call(token, "POST", base+"/snapshots", map[string]any{"name": "for-clone", "memory": false}, nil); code != http.StatusCreated {
		t.Fatalf("snapshot for clone: %d", code)
	}
	var clone apiv1.Desktop
	cloneAt := time.Now()
	// An admin clones it (alice's free tier has no room for a second desktop).
	if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "agent-1-clone", "vcpus": 1, "memory_mib": 1024,
		"from": map[string]string{"desktop": d.ID, "snapshot": "for-clone"}}, &clone); code != http.StatusAccepted {
		t.Fatalf("clone: %d %+v", code, clone)
	}
	t.Cleanup(func() { s.call(adminToken, "DELETE", "/api/v1/desktops/"+clone.ID+"?delete_data=true", nil, nil) })
	var quotaErr apiErr
	if code := s.call(token, "POST", "/api/v1/desktops", map[string]any{"name": "second", "from": map[string]string{"desktop": d.ID, "snapshot": "for-clone"}}, &quotaErr); code != http.StatusForbidden || quotaErr.Error.Code != "quota_exceeded" {
		t.Errorf("alice's second desktop on the free tier: %d %+v", code, quotaErr)
	}
	running := s.waitState(adminToken, clone.ID, desktop.StateRunning, 5*time.Minute)

	// Reimage: a fresh OS disk, the same /home. Started while the clone
	// boots (the clone's disks are its own once it runs): the two boots
	// overlap, as two users' would.
	s.guest(d, "echo os-change > /var/tmp/os-marker && echo kept > /home/agent/reimage-marker && sync")
	reimageAt := time.Now()
	var r apiv1.Desktop
	if code := s.call(token, "POST", base+"/reimage", map[string]any{}, &r); code != http.StatusAccepted || r.State != string(desktop.StateReimaging) {
		t.Fatalf("reimage: %d %+v", code, r)
	}

	s.waitGuest(running, "clone's cloud-init", "cloud-init status | grep -q 'status: done'", 10*time.Minute)
	t.Logf("clone → cloud-init done: %s", time.Since(cloneAt).Round(time.Second))
	if out, _ := s.guest(running, "cat /home/agent/clone-marker"); out != "from-parent" {
		t.Errorf("clone's /home marker = %q", out)
	}
	if out, _ := s.guest(running, "hostname"); out != "agent-1-clone" {
		t.Errorf("clone's hostname = %q", out)
	}
	if out, _ := s.guest(running, "cat /etc/machine-id"); out == parentMachineID || len(out) != 32 {
		t.Errorf("clone's machine id %q (parent %q)", out, parentMachineID)
	}
	if _, code := s.guest(running, "test -e /var/tmp/os-marker"); code == 0 {
		t.Error("the clone has the parent's OS change made after the snapshot")
	}
	if out, _ := s.guest(running, "cat /etc/ssh/ssh_host_ed25519_key.pub"); out == parentHostKey || !strings.HasPrefix(out, "ssh-ed25519 ") {
		t.Errorf("clone's SSH host key %q (parent %q)", out, parentHostKey)
	}
	checkFirstBoot(t, s, running, parentInstance)
	s.call(adminToken, "DELETE", "/api/v1/desktops/"+clone.ID+"?delete_data=true", nil, nil)

	s.waitState(token, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitGuest(d, "cloud-init after reimage", "cloud-init status | grep -q 'status: done' && test -f /home/agent/reimage-marker", 10*time.Minute)
	t.Logf("reimage → cloud-init done with /home: %s", time.Since(reimageAt).Round(time.Second))
	// A fresh OS disk has no bureau-agent: first-boot installs it from the
	// seed.
	s.agentUp(token, d, 3*time.Minute)
	checkFirstBoot(t, s, d, parentInstance)
	if out, _ := s.guest(d, "systemctl is-enabled bureau-agent"); out != "enabled" {
		t.Errorf("bureau-agent after reimage: %q", out)
	}
	if out, _ := s.guest(d, "cat /home/agent/reimage-marker"); out != "kept" {
		t.Errorf("/home after reimage: %q", out)
	}
	if _, code := s.guest(d, "test -e /var/tmp/os-marker"); code == 0 {
		t.Error("the OS change survived the reimage")
	}
	if out, _ := s.guest(d, "stat -c %U /home/agent && id -nG agent"); !strings.HasPrefix(out, "agent") || !strings.Contains(out, "sudo") {
		t.Errorf("agent after reimage: %q", out)
	}
	var list struct{ Snapshots []apiv1.Snapshot }
	s.call(token, "GET", base+"/snapshots", nil, &list)
	for _, sn := range list.Snapshots {
		if sn.Scope != desktop.ScopeData {
			t.Errorf("snapshot %q (scope %s) of the old OS disk survived the reimage", sn.Name, sn.Scope)
		}
	}
	s.waitReadyAPI(token, d.ID, 5*time.Minute) // its session up again for the checks after this
}
