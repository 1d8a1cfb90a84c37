//go:build e2e

package e2e

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// checkStoppedRemote works on far's files on host two while its VM is off,
// as bureau does on its own host with qemu-img, here through host two's
// libvirtd: a snapshot of /home while stopped, a revert to it (what was
// written after it is gone), a snapshot of both disks, the data disk
// grown, and a reimage (the OS disk fresh, the snapshot that held the old
// one deleted, /home kept). far runs on host two with /home/agent/marker
// and /var/tmp/os-marker; it runs at the end.
func checkStoppedRemote(t *testing.T, s *server, far apiv1.Desktop, h2 *host2) {
	t.Helper()
	base := "/api/v1/desktops/" + far.ID
	folder := filepath.Join(h2.dir, "desktops", far.ID)
	post := func(path string, body any, want int) {
		t.Helper()
		if code := s.call(adminToken, "POST", base+path, body, nil); code != want {
			t.Fatalf("POST %s: %d, want %d", path, code, want)
		}
	}
	// until runs cmd in far until it prints want (the desktop may still be
	// booting), and fails the test after ten minutes.
	until := func(what, cmd, want string) {
		t.Helper()
		var res struct {
			Stdout string `json:"stdout"`
		}
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(3 * time.Second) {
			res.Stdout = ""
			if code := s.call(adminToken, "POST", base+"/exec", map[string]any{"cmd": cmd, "timeout_s": 30}, &res); code == http.StatusOK && strings.TrimSpace(res.Stdout) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %q, want %q", what, res.Stdout, want)
			}
		}
	}
	snapsOf := func(file string) string {
		t.Helper()
		out, err := exec.Command("qemu-img", "snapshot", "-U", "-l", filepath.Join(folder, file)).CombinedOutput()
		if err != nil {
			t.Fatalf("qemu-img snapshot -l %s: %v %s", file, err, out)
		}
		return string(out)
	}
	stop := func() {
		t.Helper()
		post("/stop", nil, http.StatusAccepted)
		s.waitState(adminToken, far.ID, desktop.StateStopped, 5*time.Minute)
	}
	begun := time.Now()
	var now apiv1.Desktop
	s.call(adminToken, "GET", base, nil, &now)

	// A snapshot of /home while stopped; written after it: /home/agent/later.
	stop()
	post("/snapshots", map[string]any{"name": "cold-home", "scope": "data"}, http.StatusCreated)
	if !strings.Contains(snapsOf("data.qcow2"), "cold-home") || strings.Contains(snapsOf("os.qcow2"), "cold-home") {
		t.Errorf("the data-only snapshot on host two: data %s os %s", snapsOf("data.qcow2"), snapsOf("os.qcow2"))
	}
	post("/start", nil, http.StatusAccepted)
	s.waitState(adminToken, far.ID, desktop.StateRunning, 5*time.Minute)
	until("write after the snapshot", "echo later > /home/agent/later && sync && cat /home/agent/later", "later")
	stop()

	// Reverted while stopped; then a snapshot of both disks, and the data
	// disk grown by 1 GiB.
	post("/snapshots/cold-home/revert", nil, http.StatusAccepted)
	if d := s.waitState(adminToken, far.ID, desktop.StateStopped, 5*time.Minute); d.LastError != "" {
		t.Fatalf("revert while stopped: %q", d.LastError)
	}
	post("/snapshots", map[string]any{"name": "cold-all"}, http.StatusCreated)
	if !strings.Contains(snapsOf("os.qcow2"), "cold-all") || !strings.Contains(snapsOf("data.qcow2"), "cold-all") {
		t.Errorf("the snapshot of both disks on host two: os %s data %s", snapsOf("os.qcow2"), snapsOf("data.qcow2"))
	}
	var grown apiv1.Desktop
	if code := s.call(adminToken, "POST", base+"/data-disk", map[string]any{"size_gib": now.DataDiskGiB + 1}, &grown); code != http.StatusOK {
		t.Fatalf("grow the data disk while stopped: %d", code)
	}
	size := grown.DataDiskGiB
	if info := filesImageInfo(t, filepath.Join(folder, "data.qcow2")); info.VirtualSize != int64(size)<<30 {
		t.Errorf("data disk on host two: %d bytes, want %d GiB", info.VirtualSize, size)
	}

	// Reimaged while stopped: the snapshot of both disks goes with the old
	// OS disk, the one of /home stays.
	post("/reimage", map[string]any{}, http.StatusAccepted)
	if d := s.waitState(adminToken, far.ID, desktop.StateStopped, 5*time.Minute); d.LastError != "" {
		t.Fatalf("reimage: %q", d.LastError)
	}
	var snaps struct{ Snapshots []apiv1.Snapshot }
	s.call(adminToken, "GET", base+"/snapshots", nil, &snaps)
	if len(snaps.Snapshots) != 1 || snaps.Snapshots[0].Name != "cold-home" {
		t.Errorf("snapshots after the reimage: %+v", snaps.Snapshots)
	}
	if strings.Contains(snapsOf("os.qcow2"), "cold-") || strings.Contains(snapsOf("data.qcow2"), "cold-all") {
		t.Errorf("after the reimage, host two's disks: os %s data %s", snapsOf("os.qcow2"), snapsOf("data.qcow2"))
	}
	t.Logf("stopped on host two: snapshot, a boot, revert, snapshot, grow, reimage in %s", time.Since(begun).Round(time.Second))

	// Started: a fresh system (cloud-init ran again, the OS marker gone),
	// /home as at the snapshot, on the bigger disk.
	post("/start", nil, http.StatusAccepted)
	s.waitState(adminToken, far.ID, desktop.StateRunning, 5*time.Minute)
	until("cloud-init after the reimage", "cloud-init status | grep -q 'status: done' && echo done", "done")
	var res struct {
		Stdout string `json:"stdout"`
	}
	check := "test -f /home/agent/marker && echo home-kept; test -e /home/agent/later && echo later-stays; " +
		"test -e /var/tmp/os-marker && echo os-stays; test $(df -BG --output=size /home | tail -1 | tr -dc 0-9) -ge " + strconv.Itoa(size) + " && echo grown"
	if code := s.call(adminToken, "POST", base+"/exec", map[string]any{"cmd": check, "timeout_s": 30}, &res); code != http.StatusOK || res.Stdout != "home-kept\ngrown\n" {
		t.Errorf("after the revert and the reimage: %d %q, want /home as at the snapshot, on the grown disk, and the OS disk fresh", code, res.Stdout)
	}
	t.Logf("stopped on host two: all checks in %s", time.Since(begun).Round(time.Second))
}
