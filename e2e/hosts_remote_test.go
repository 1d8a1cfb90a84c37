//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// TestHostsRemoteDesktop: a desktop runs on a second host. An admin adds
// host2 (its own libvirtd, folders and SSH, as a remote host would have)
// and creates a desktop there: its base image is copied to host2 through
// libvirt's storage pools, its disks and seed are made there, and it
// boots there, not here. Then, through the same API as any desktop: its
// screen (the live framebuffer over SSH, its QEMU user checked on host2),
// commands through bureau-agent (a libvirt stream), and its console; a
// snapshot with memory there, and its data disk grown live. A host that
// stops answering (its libvirtd frozen), or whose libvirtd is killed and
// started again, leaves its desktop as it was (nothing concluded from
// silence), running again once it is back. Deleted, its files are gone
// from host2, and host2 can go. With placement on, creates naming no host
// land where it weighs (checkPlacement); the desktop moves live to this
// host and back, cold there and back, and back by a drain
// (checkMigration, checkColdMoves).
// PostgreSQL only (several hosts need it).
func TestHostsRemoteDesktop(t *testing.T) {
	s := newServer(t)
	if s.dbURL == "" {
		t.Skip("several hosts need PostgreSQL (BUREAU_E2E_DATABASE_URL)")
	}
	s.stop()
	s.env = append(s.env, "BUREAU_HOST_CHECK_SECONDS=2", "BUREAU_RECONCILE_SECONDS=5", "BUREAU_HOST_ADDRESS=127.0.0.1")
	s.start()
	local := s.waitHost("local", "up", 30*time.Second)
	h2 := startHost2For(t, s.dataDir)
	addHost2(t, s, h2, local)

	begun := time.Now()
	var d apiv1.Desktop
	if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "far", "host": "two", "memory_mib": 2048, "data_disk_gib": 4}, &d); code != http.StatusAccepted {
		t.Fatalf("create on host two: %d %+v", code, d)
	}
	t.Cleanup(func() { s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil) })
	if d.Host != "two" || !strings.HasPrefix(d.IP, "10.121.") {
		t.Errorf("created %+v: on host two, with an address on its subnet", d)
	}
	running := s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	t.Logf("create on host two → running: %s", time.Since(begun).Round(time.Second))
	// Its VM runs on host2, its files are in host2's folders, and this
	// host has neither.
	if out, err := exec.Command("virsh", "-c", h2.uri, "domstate", domainOf(d.ID)).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "running" {
		t.Errorf("its VM on host2: %v %s", err, out)
	}
	if out, err := exec.Command("virsh", "-c", "qemu:///system", "domstate", domainOf(d.ID)).CombinedOutput(); err == nil {
		t.Errorf("its VM is on this host too: %s", out)
	}
	for _, f := range []string{"os.qcow2", "data.qcow2", "seed.iso"} {
		if !exists(filepath.Join(h2.dir, "desktops", d.ID, f)) {
			t.Errorf("%s is not in host2's folder", f)
		}
	}
	if exists(filepath.Join(s.dataDir, "desktops", d.ID)) {
		t.Errorf("the remote desktop has a folder on this host")
	}
	if !exists(filepath.Join(h2.dir, "images", "debian-12-desktop.qcow2")) {
		t.Errorf("the base image was not copied to host2")
	}

	// Commands, through bureau-agent over a libvirt stream.
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"cmd": "hostname; findmnt -n -o SOURCE /home", "timeout_s": 20}, &res)
		if code == http.StatusOK && res.ExitCode == 0 && strings.HasPrefix(res.Stdout, "far\n/dev/vdb") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exec on the remote desktop: %d %+v", code, res)
		}
		time.Sleep(3 * time.Second)
	}
	t.Logf("create on host two → bureau-agent answers: %s", time.Since(begun).Round(time.Second))

	// Its screen and console.
	s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"cmd": "until pgrep -u agent -x xfdesktop >/dev/null; do sleep 2; done", "timeout_s": 600}, nil)
	shot := s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
	checkDesktopVisible(t, shot)
	os.WriteFile(filepath.Join(os.TempDir(), "bureau-e2e-remote-desktop.png"), shot, 0o644)
	t.Logf("create on host two → desktop visible: %s", time.Since(begun).Round(time.Second))
	g := s.openConsole(adminToken, running, false)
	if w, hgt, name := rfbServerInit(t, s.url, d.ID, g.Token); w < 640 || hgt < 480 || !strings.Contains(name, domainOf(d.ID)) {
		t.Errorf("console of the remote desktop: %dx%d %q", w, hgt, name)
	}

	checkPlacement(t, s, h2)
	checkMigration(t, s, *running, h2)

	// A running desktop on a remote host takes a snapshot with its memory
	// there (through libvirt), deletes it, and grows its data disk. A host
	// with desktops stays.
	var sn apiv1.Snapshot
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/snapshots", map[string]any{"name": "on-two"}, &sn); code != http.StatusCreated || !sn.Memory {
		t.Errorf("snapshot on host two: %d %+v", code, sn)
	}
	if out, err := exec.Command("virsh", "-c", h2.uri, "snapshot-list", "--name", domainOf(d.ID)).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "on-two" {
		t.Errorf("the snapshot on host two: %v %q", err, out)
	}
	if code := s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"/snapshots/on-two", nil, nil); code != http.StatusNoContent {
		t.Errorf("delete the snapshot on host two: %d", code)
	}
	// Its data disk grows live there, and the guest's /home with it.
	var grown apiv1.Desktop
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/data-disk", map[string]any{"size_gib": d.DataDiskGiB + 1}, &grown); code != http.StatusOK || grown.DataDiskGiB != d.DataDiskGiB+1 {
		t.Errorf("grow the data disk on host two: %d %+v", code, grown)
	}
	grew := "test $(df -BG --output=size /home | tail -1 | tr -dc 0-9) -ge " + strconv.Itoa(d.DataDiskGiB+1) // df rounds up
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
		out := struct {
			ExitCode int `json:"exit_code"`
		}{-1}
		if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"cmd": grew, "timeout_s": 20}, &out); code == http.StatusOK && out.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("/home did not grow on host two: %s", grew)
			break
		}
	}
	// Its figures are in /metrics as a local desktop's are.
	var metrics []byte
	if code := s.call(adminToken, "GET", "/metrics", nil, &metrics); code != http.StatusOK ||
		!strings.Contains(string(metrics), `bureau_desktop_cpu_seconds_total{desktop="`+d.ID+`"`) ||
		!strings.Contains(string(metrics), `bureau_desktop_disk_written_bytes_total{desktop="`+d.ID+`",disk="vdb"`) {
		t.Errorf("/metrics lacks the remote desktop's figures: %d", code)
	}
	s.expectError(adminToken, "DELETE", "/api/v1/hosts/two", nil, http.StatusConflict, "in_use")

	// A host that stops answering (its libvirtd frozen): host two is seen
	// unreachable and so is its desktop; reconciles pass it by; back, the
	// desktop is running as before and answers.
	pid, err := os.ReadFile(filepath.Join(h2.dir, "libvirtd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	signal := func(sig string) {
		if out, err := exec.Command("kill", "-"+sig, strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
			t.Fatalf("kill -%s: %v %s", sig, err, out)
		}
	}
	signal("STOP")
	s.waitHost("two", "unreachable", 2*time.Minute)
	time.Sleep(12 * time.Second) // two reconciles
	var during apiv1.Desktop
	s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID, nil, &during)
	signal("CONT")
	if during.State != "unreachable" || !strings.Contains(during.LastError, "host two does not answer") || during.DesiredState != string(desktop.StateRunning) {
		t.Errorf("desktop of an unreachable host: %s %q, desired %s", during.State, during.LastError, during.DesiredState)
	}
	s.waitHost("two", "up", time.Minute)
	// Nothing was concluded from the silence: it is running as it was.
	if back := s.waitState(adminToken, d.ID, desktop.StateRunning, time.Minute); back.LastError != "" {
		t.Errorf("desktop after its host came back: %s %q", back.State, back.LastError)
	}
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"cmd": "hostname", "timeout_s": 20}, &res); code != http.StatusOK || res.Stdout != "far\n" {
		t.Errorf("exec after host two came back: %d %+v", code, res)
	}

	// Its libvirtd stopped (killed) and started again, as on a host whose
	// daemon restarts: the desktop is unreachable meanwhile, never crashed
	// or stopped; its QEMU ran on, and the new libvirtd and bureau's new
	// connection (its agent channel too) find it running.
	signal("TERM")
	s.waitHost("two", "unreachable", time.Minute)
	if down := s.waitState(adminToken, d.ID, "unreachable", time.Minute); down.State != "unreachable" || down.DesiredState != string(desktop.StateRunning) {
		t.Errorf("desktop while host two's libvirtd is down: %s %q, desired %s", down.State, down.LastError, down.DesiredState)
	}
	h2.run("revive")
	s.waitHost("two", "up", time.Minute)
	if back := s.waitState(adminToken, d.ID, desktop.StateRunning, time.Minute); back.LastError != "" {
		t.Errorf("desktop after host two's libvirtd restarted: %s %q", back.State, back.LastError)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
		res.Stdout = ""
		if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"cmd": "hostname", "timeout_s": 20}, &res); code == http.StatusOK && res.Stdout == "far\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("exec after host two's libvirtd restarted: %+v", res)
			break
		}
	}

	// The stopped desktop's operations on host two, two boots: make test's
	// short multi-host run leaves them to make e2e-hosts (TestHost2Files
	// runs the same qemu-img work on host two's files in make test).
	t.Run("stopped_on_host_two", func(t *testing.T) {
		if os.Getenv("BUREAU_E2E_HOSTS_SHORT") == "1" {
			t.Skip("BUREAU_E2E_HOSTS_SHORT=1: snapshot, revert, grow and reimage of the stopped desktop on host two (two boots) run in make e2e-hosts")
		}
		checkStoppedRemote(t, s.with(t), d, h2)
	})

	// Deleted with its data: nothing of it stays on host2.
	var del apiv1.DeleteResult
	if code := s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, &del); code != http.StatusOK || !del.DataDeleted {
		t.Errorf("delete: %d %+v", code, del)
	}
	if exists(filepath.Join(h2.dir, "desktops", d.ID)) {
		t.Errorf("the deleted desktop's folder stays on host2")
	}
	if out, err := exec.Command("virsh", "-c", h2.uri, "dominfo", domainOf(d.ID)).CombinedOutput(); err == nil {
		t.Errorf("the deleted desktop's VM stays on host2: %s", out)
	}
	if code := s.call(adminToken, "DELETE", "/api/v1/hosts/two", nil, nil); code != http.StatusNoContent {
		t.Errorf("remove host two once its desktop is gone: %d", code)
	}
}
