//go:build e2e

package e2e

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// TestDesktopLifecycle boots one desktop from the built image and walks it
// through the whole lifecycle a user sees: create, bad input, the guest's
// view (hostname, /home on the data disk, X session, tools), a bureau
// restart that must not touch the VM, stop, start with data intact, and
// delete that keeps the data disk.
func TestDesktopLifecycle(t *testing.T) {
	s := newServerWith(t, func(s *server) {
		s.env = append(append(s.env, "BUREAU_TRUSTED_PROXIES="+proxiedTrust), webhookEnv...)
	})

	// Two owners: alice works, bob must not see alice's desktop.
	var alice, bob struct {
		Token string `json:"token"`
	}
	if code := s.call(adminToken, "POST", "/api/v1/tokens", map[string]any{"owner": "alice"}, &alice); code != http.StatusCreated {
		t.Fatalf("create alice token: %d", code)
	}
	s.call(adminToken, "POST", "/api/v1/tokens", map[string]any{"owner": "bob"}, &bob)

	// Bad input is refused before anything is made.
	s.expectError("", "GET", "/api/v1/desktops", nil, 401, "unauthorized")
	s.expectError("wrong", "GET", "/api/v1/desktops", nil, 401, "unauthorized")
	if e := s.expectError(alice.Token, "POST", "/api/v1/desktops", map[string]any{"name": "Bad Name"}, 422, "invalid"); e.Error.Field != "name" {
		t.Errorf("bad name: field %q", e.Error.Field)
	}
	for field, body := range map[string]map[string]any{
		"vcpus":         {"name": "x", "vcpus": 17},
		"memory_mib":    {"name": "x", "memory_mib": 100},
		"data_disk_gib": {"name": "x", "data_disk_gib": 5000},
		"image":         {"name": "x", "image": "no-such-image"},
	} {
		if e := s.expectError(alice.Token, "POST", "/api/v1/desktops", body, 422, "invalid"); e.Error.Field != field {
			t.Errorf("%v: field %q, want %s", body, e.Error.Field, field)
		}
	}
	s.expectError(alice.Token, "POST", "/api/v1/desktops", `{"name":"x","colour":"red"}`, 400, "bad_request")
	s.expectError(alice.Token, "POST", "/api/v1/desktops", `{"name":`, 400, "bad_request")
	s.expectError(alice.Token, "GET", "/api/v1/desktops/nope", nil, 404, "not_found")

	// Create.
	createdAt := time.Now()
	var d apiv1.Desktop
	code := s.call(alice.Token, "POST", "/api/v1/desktops",
		map[string]any{"name": "agent-1", "vcpus": 2, "memory_mib": 2048, "data_disk_gib": 4}, &d)
	if code != http.StatusAccepted || d.State != string(desktop.StateCreating) || d.Owner != "alice" {
		t.Fatalf("create: %d %+v", code, d)
	}
	t.Cleanup(func() {
		// Leave nothing behind even when a check fails half-way.
		s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
	})
	s.expectError(alice.Token, "POST", "/api/v1/desktops", map[string]any{"name": "agent-1"}, 409, "name_taken")
	s.expectError(bob.Token, "GET", "/api/v1/desktops/"+d.ID, nil, 404, "not_found")
	s.expectError(bob.Token, "POST", "/api/v1/desktops/"+d.ID+"/stop", nil, 404, "not_found")
	var bobList struct{ Desktops []apiv1.Desktop }
	s.call(bob.Token, "GET", "/api/v1/desktops", nil, &bobList)
	if len(bobList.Desktops) != 0 {
		t.Errorf("bob sees %d desktops", len(bobList.Desktops))
	}

	running := s.waitState(alice.Token, d.ID, desktop.StateRunning, 5*time.Minute)
	if running.Accelerator == "" || running.Image != "debian-12-desktop" {
		t.Errorf("running desktop: %+v", running)
	}
	s.expectError(alice.Token, "POST", "/api/v1/desktops/"+d.ID+"/start", nil, 409, "invalid_state")
	notReadyYet(t, s, alice.Token, d.ID)
	agentAfter := s.waitAgent(running, 10*time.Minute)
	t.Logf("create→guest agent: %s (accelerator %s)", time.Since(createdAt).Round(time.Second), running.Accelerator)
	_ = agentAfter

	// Inside the guest: identity, data disk as /home, the desktop session.
	s.waitGuest(running, "cloud-init done", "cloud-init status | grep -q 'status: done'", 10*time.Minute)
	if out, _ := s.guest(running, "hostname"); out != "agent-1" {
		t.Errorf("hostname = %q", out)
	}
	if out, _ := s.guest(running, "findmnt -n -o SOURCE,FSTYPE,LABEL /home"); !strings.HasPrefix(out, "/dev/vdb") || !strings.Contains(out, "ext4") {
		t.Errorf("/home is %q, want the ext4 data disk /dev/vdb", out)
	}
	if out, _ := s.guest(running, "stat -c %U /home/agent && id -nG agent"); !strings.HasPrefix(out, "agent") || !strings.Contains(out, "sudo") {
		t.Errorf("agent home/groups: %q", out)
	}
	if instance := checkFirstBoot(t, s, running, ""); instance != running.ID {
		t.Errorf("instance id %q, want the desktop's id", instance)
	}
	if out, code := s.guest(running, "command -v firefox-esr xterm xdotool && systemctl is-active qemu-guest-agent"); code != 0 {
		t.Errorf("tools or guest agent missing: %q", out)
	}
	visible := s.waitGuest(running, "Xfce session", "pgrep -u agent -x xfce4-session && pgrep -u agent -x xfce4-panel && pgrep -u agent -x xfdesktop", 10*time.Minute)
	t.Logf("create→xfce panel and desktop up: %s", time.Since(createdAt).Round(time.Second))
	_ = visible
	waitReady(t, s, alice.Token, d.ID, createdAt)
	shot := s.settledScreenshot(alice.Token, d.ID, 2*time.Minute)
	checkDesktopVisible(t, shot)
	os.WriteFile(filepath.Join(os.TempDir(), "bureau-e2e-desktop.png"), shot, 0o644)
	t.Logf("create→desktop visible and settled: %s", time.Since(createdAt).Round(time.Second))

	// The feature checks (runningChecks, e2e/checks_test.go, in its order)
	// run against this one running desktop: a boot is too slow to spend
	// one per feature.
	for _, c := range runningChecks {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, s.with(t), alice.Token, running)
		})
	}

	s.guest(running, "echo kept-across-restarts > /home/agent/marker.txt && chown agent: /home/agent/marker.txt && sync")

	// A bureau restart must leave the running VM alone.
	s.stop()
	viaStream(t, s, running) // while bureau does not hold the agent's channel
	s.start()
	if got := s.waitState(alice.Token, d.ID, desktop.StateRunning, 10*time.Second); got.LastError != "" {
		t.Errorf("after restart: %+v", got)
	}
	if st := s.vmState(running); st != desktop.VMRunning {
		t.Fatalf("VM is %s after a bureau restart", st)
	}
	// The restarted bureau dials bureau-agent again.
	s.agentUp(alice.Token, running, time.Minute)

	// Stop (graceful), then start: the data disk's content is still there.
	// Stopping revokes the desktop's console tokens.
	consoleBeforeStop := s.openConsole(alice.Token, running, false)
	stopAt := time.Now()
	var stopping apiv1.Desktop
	if code := s.call(alice.Token, "POST", "/api/v1/desktops/"+d.ID+"/stop", nil, &stopping); code != 202 || stopping.State != string(desktop.StateStopping) {
		t.Fatalf("stop: %d %+v", code, stopping)
	}
	s.waitState(alice.Token, d.ID, desktop.StateStopped, 3*time.Minute)
	t.Logf("stop: %s", time.Since(stopAt).Round(100*time.Millisecond))
	if code := s.call("", "GET", "/api/v1/desktops/"+d.ID+"/console/session?token="+consoleBeforeStop.Token, nil, nil); code != 401 {
		t.Errorf("console token still usable after stop: %d", code)
	}
	if st := s.vmState(running); st != desktop.VMShutoff {
		t.Fatalf("VM is %s after stop", st)
	}
	s.expectError(alice.Token, "POST", "/api/v1/desktops/"+d.ID+"/stop", nil, 409, "invalid_state")
	s.expectError(alice.Token, "GET", "/api/v1/desktops/"+d.ID+"/screenshot", nil, 409, "invalid_state")
	// Start, reboot and a QEMU crash: the hypervisor's side (two more
	// boots).
	t.Run(lifecycleSubtests[0], func(t *testing.T) {
		s := s.with(t)
		// The data disk grown while stopped: the boot grows /home.
		var grown apiv1.Desktop
		s.call(alice.Token, "GET", "/api/v1/desktops/"+d.ID, nil, &grown)
		if code := s.call(alice.Token, "POST", "/api/v1/desktops/"+d.ID+"/data-disk", map[string]any{"size_gib": grown.DataDiskGiB + 2}, &grown); code != 200 {
			t.Fatalf("grow the data disk while stopped: %d", code)
		}
		startAt := time.Now()
		s.call(alice.Token, "POST", "/api/v1/desktops/"+d.ID+"/start", nil, nil)
		restarted := s.waitState(alice.Token, d.ID, desktop.StateRunning, 3*time.Minute)
		t.Logf("start→guest agent: %s", (time.Since(startAt) + s.waitAgent(restarted, 10*time.Minute)).Round(time.Second))
		s.waitGuest(restarted, "/home mounted", "test -f /home/agent/marker.txt", 5*time.Minute)
		if out, _ := s.guest(restarted, "cat /home/agent/marker.txt"); out != "kept-across-restarts" {
			t.Errorf("marker after stop/start = %q", out)
		}
		s.waitReadyAPI(alice.Token, d.ID, 5*time.Minute)
		t.Logf("start→ready: %s", time.Since(startAt).Round(time.Second))
		// A later boot of an instance cloud-init set up: cloud-init skips it
		// (images/desktop/files/usr/local/lib/bureau/cloud-init-gate), says
		// done, and /home was grown all the same, before the session.
		if out, code := s.guest(restarted, "test -e /run/bureau/cloud-init-skip && cloud-init status && systemctl show -p ActiveState --value cloud-final.service"); code != 0 || !strings.Contains(out, "status: done") || !strings.HasSuffix(out, "inactive") {
			t.Errorf("cloud-init at a later boot: %d %q, want skipped (status done, cloud-final not run)", code, out)
		}
		if out, code := s.guest(restarted, "test $(df -BG --output=size /home | tail -1 | tr -dc 0-9) -ge "+strconv.Itoa(grown.DataDiskGiB-1)+" && systemctl is-active bureau-grow-home.service"); code != 0 {
			t.Errorf("/home after a grow while stopped: %d %q, want at least %d GiB", code, out, grown.DataDiskGiB-1)
		}
		// The service left by the services check is started at boot.
		s.servicesBackAfterBoot(alice.Token, restarted)

		// Reboot: the guest comes back with a new boot id and the data intact.
		bootID, _ := s.guest(restarted, "cat /proc/sys/kernel/random/boot_id")
		if code := s.call(alice.Token, "POST", "/api/v1/desktops/"+d.ID+"/reboot", nil, nil); code != 202 {
			t.Fatalf("reboot: %d", code)
		}
		s.waitState(alice.Token, d.ID, desktop.StateRunning, time.Minute)
		rebootAt := time.Now()
		s.waitGuest(restarted, "new boot id", "test \"$(cat /proc/sys/kernel/random/boot_id)\" != "+bootID, 5*time.Minute)
		s.waitGuest(restarted, "/home after reboot", "grep -q kept-across-restarts /home/agent/marker.txt", 5*time.Minute)
		t.Logf("reboot→guest agent with /home: %s", time.Since(rebootAt).Round(time.Second))

		// Events tell the story.
		s.eventsInclude(alice.Token, d.ID, "started", "rebooted")

		// QEMU dying under a running desktop: it is "crashed" with the reason,
		// its data disk intact, and it can still be deleted.
		if out, err := exec.Command("pkill", "-KILL", "-f", "guest="+domainOf(running.ID)+",").CombinedOutput(); err != nil {
			t.Fatalf("kill QEMU: %v %s", err, out)
		}
		crashed := s.waitState(alice.Token, d.ID, desktop.StateCrashed, 30*time.Second)
		if !strings.Contains(crashed.LastError, "died") {
			t.Errorf("crashed desktop's reason: %q", crashed.LastError)
		}
	})
	s.eventsInclude(alice.Token, d.ID, "create_requested", "created", "stopped")
	s.deleteKeepsData(alice.Token, d.ID, running)
}

// lifecycleSubtests are the subtests TestDesktopLifecycle runs besides
// its running checks.
var lifecycleSubtests = []string{"start_reboot_crash"}

// eventsInclude checks that a desktop's events include each type in want.
func (s *server) eventsInclude(token, id string, want ...string) {
	s.t.Helper()
	var evs struct{ Events []apiv1.Event }
	// All of them (the newest 100 by default): the checks on the one
	// desktop make many.
	s.call(token, "GET", "/api/v1/desktops/"+id+"/events?limit=1000", nil, &evs)
	types := []string{}
	for _, e := range evs.Events {
		types = append(types, e.Type)
	}
	for _, w := range want {
		if !slices.Contains(types, w) {
			s.t.Errorf("events %v lack %s", types, w)
		}
	}
}

// deleteKeepsData deletes the desktop as its owner without delete_data:
// the data disk stays (its path shown to admins only), everything else
// goes, then the disk is removed by hand.
func (s *server) deleteKeepsData(token, id string, d *apiv1.Desktop) {
	t := s.t
	t.Helper()
	// Where the data disk lives on the host is for admins only.
	var asAdmin apiv1.Desktop
	s.call(adminToken, "GET", "/api/v1/desktops/"+id, nil, &asAdmin)
	disk := asAdmin.DataDiskPath
	if d.DataDiskPath != "" || disk == "" {
		t.Errorf("data disk path: %q for the owner, %q for an admin", d.DataDiskPath, disk)
	}
	if !exists(disk) {
		t.Error("data disk gone before the delete")
	}

	// Delete keeps the data disk and removes everything else.
	var res struct {
		DataDeleted  bool   `json:"data_deleted"`
		DataDiskKept string `json:"data_disk_kept"`
	}
	if code := s.call(token, "DELETE", "/api/v1/desktops/"+id, nil, &res); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if res.DataDeleted || res.DataDiskKept != "" || !exists(disk) {
		t.Errorf("delete result %+v (the owner is not shown the path); data disk %s exists=%v", res, disk, exists(disk))
	}
	if st := s.vmState(d); st != desktop.VMMissing {
		t.Errorf("VM is %s after delete", st)
	}
	for _, f := range []string{"os.qcow2", "seed.iso"} {
		if p := filepath.Join(filepath.Dir(disk), f); exists(p) {
			t.Errorf("%s left after delete", p)
		}
	}
	s.expectError(token, "GET", "/api/v1/desktops/"+id, nil, 404, "not_found")
	os.Remove(disk)
}

// settledScreenshot polls the API's screenshot until two frames a few
// seconds apart are identical and the desktop is drawn, its panel too
// (desktopDrawn): the desktop has finished drawing. (The session's
// processes exist a while before the first frame is painted, a blank
// screen is also "settled", and under TCG the wallpaper and icons can stay
// still for seconds before the panel paints.) At the timeout it returns
// the last frame, for checkDesktopVisible to say what is missing.
func (s *server) settledScreenshot(token, id string, timeout time.Duration) []byte {
	s.t.Helper()
	var prev []byte
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var shot []byte
		if code := s.call(token, "GET", "/api/v1/desktops/"+id+"/screenshot", nil, &shot); code != 200 {
			s.t.Fatalf("screenshot: %d %s", code, shot)
		}
		if prev != nil && bytes.Equal(prev, shot) && desktopDrawn(shot) {
			return shot
		}
		prev = shot
		time.Sleep(3 * time.Second)
	}
	return prev
}

// desktopDrawn reports whether a PNG shows what checkDesktopVisible
// asserts: a panel strip with items and a screen of many colours.
func desktopDrawn(shot []byte) bool {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return false
	}
	b := img.Bounds()
	return colours(img, image.Rect(0, 0, b.Dx(), 28)) >= minPanelColours && colours(img, b) >= minScreenColours
}

// What a drawn Xfce desktop shows at least: panel items in the top strip,
// a wallpaper and icons on the screen (a text console has a few colours).
const (
	minPanelColours  = 8
	minScreenColours = 200
)

// checkDesktopVisible asserts the screenshot is the Xfce desktop at
// 1280×800: a panel strip at the top that is not uniform (panel items)
// and a screen with many colours (wallpaper), unlike a text console.
func checkDesktopVisible(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 800 {
		t.Errorf("screen is %dx%d, want 1280x800", b.Dx(), b.Dy())
	}
	panel := colours(img, image.Rect(0, 0, b.Dx(), 28))
	screen := colours(img, b)
	t.Logf("screenshot: %d colours in the top panel strip, %d on screen", panel, screen)
	if panel < minPanelColours {
		t.Errorf("top panel strip has %d colours: no Xfce panel drawn", panel)
	}
	if screen < minScreenColours {
		t.Errorf("screen has %d colours: looks like a console, not the desktop", screen)
	}
}

func colours(img image.Image, r image.Rectangle) int {
	seen := map[uint32]bool{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			seen[cr>>8<<16|cg>>8<<8|cb>>8] = true
		}
	}
	return len(seen)
}

// checkFirstBoot: bureau's image set the new instance up itself
// (images/desktop/files/usr/local/lib/bureau/first-boot), not cloud-init's
// modules, with SSH host keys of its own, a passwordless sudo, and the
// root file system grown to the 10 GiB OS disk (in the background). The
// instance recorded is a new one: not before's (a clone's source's, the
// OS disk's before a reimage). It returns that instance id. (Not the
// gate's journal lines: a clone's journal of the boot goes on under its
// source's machine id, which journalctl -b no longer reads once
// first-boot gave the clone its own.)
func checkFirstBoot(t *testing.T, s *server, d *apiv1.Desktop, before string) string {
	t.Helper()
	out, code := s.guest(d, "grep -c 'set up by bureau first-boot' /var/lib/cloud/data/result.json; cat /var/lib/cloud/data/instance-id; systemctl show -p ActiveState --value cloud-config.service")
	f := strings.Split(out, "\n")
	if code != 0 || len(f) != 3 || f[0] != "1" || f[1] == "" || f[1] == before || f[2] != "inactive" {
		t.Errorf("instance not set up by first-boot (or cloud-init ran), instance before %q: %q (exit %d)", before, out, code)
	}
	if out, code := s.guest(d, "ls /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ecdsa_key && sudo -n true"); code != 0 {
		t.Errorf("host keys or sudo: %q (exit %d)", out, code)
	}
	s.waitGuest(d, "root grown to the OS disk", "test $(df -BG --output=size / | tail -1 | tr -dc 0-9) -ge 9", 3*time.Minute)
	if len(f) > 1 {
		return f[1]
	}
	return ""
}
