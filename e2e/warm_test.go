//go:build e2e

package e2e

import (
	mrand "math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
)

// buildTemplate builds the warm template for 2 vCPUs / 2 GiB and waits.
func (s *server) buildTemplate(vcpus, mem int) time.Duration {
	s.t.Helper()
	begun := time.Now()
	var t manager.Template
	if code := s.call(adminToken, "POST", "/api/v1/templates", map[string]any{"vcpus": vcpus, "memory_mib": mem}, &t); code != http.StatusAccepted && code != http.StatusOK {
		s.t.Fatalf("build template: %d %+v", code, t)
	}
	deadline := time.Now().Add(20 * time.Minute)
	for t.State == "building" {
		if time.Now().After(deadline) {
			s.t.Fatalf("template %s still building", t.Key)
		}
		time.Sleep(5 * time.Second)
		var list struct{ Templates []manager.Template }
		s.call(adminToken, "GET", "/api/v1/templates", nil, &list)
		for _, x := range list.Templates {
			if x.Key == t.Key {
				t = x
			}
		}
	}
	if t.State != "ready" {
		s.t.Fatalf("template %s: %s %s", t.Key, t.State, t.Error)
	}
	return time.Since(begun)
}

// TestWarmCreate builds a template, then creates two desktops from it: each
// runs its desktop session within seconds, under its own name, machine id,
// SSH keys and data disk size.
func TestWarmCreate(t *testing.T) {
	s := newServer(t)
	t.Logf("template build (cold boot + save): %s", s.buildTemplate(2, 2048).Round(time.Second))

	// The template keeps one desktop restored ahead (a spare): warm-1 takes
	// it; warm-2, asked for right after, finds none ready yet and restores
	// the template itself.
	spare := s.waitSpare(time.Minute)
	var ids []string
	machineIDs, hostKeys := map[string]bool{}, map[string]bool{}
	names, begun := []string{"warm-1", "warm-2"}, make([]time.Time, 2)
	for i, name := range names {
		begun[i] = time.Now()
		var d apiv1.Desktop
		key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq test" + name + "@host"
		if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": name, "vcpus": 2, "memory_mib": 2048,
			"data_disk_gib": 6, "ssh_authorized_keys": []string{key}, "keyboard_layout": []string{"us", "de"}[i]}, &d); code != http.StatusAccepted {
			t.Fatalf("create %s: %d", name, code)
		}
		ids = append(ids, d.ID)
		t.Cleanup(func() { s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil) })
	}
	if ids[0] != spare {
		t.Errorf("warm-1 is desktop %s, not the spare %s", ids[0], spare)
	}
	for i, name := range names {
		key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq test" + name + "@host"
		begun := begun[i]
		d := apiv1.Desktop{ID: ids[i]}
		running := s.waitState(adminToken, d.ID, desktop.StateRunning, 3*time.Minute)
		// Timed from the request for warm-1 only: warm-2 is looked at once
		// warm-1 has been checked (its created event has its own time).
		took := func(what string) {
			if i == 0 {
				t.Logf("%s: warm create → %s: %s", name, what, time.Since(begun).Round(100*time.Millisecond))
			}
		}
		took("running")
		// Ready as soon as its identity is applied: the session came with
		// the template's RAM.
		var ready apiv1.Desktop
		if code := s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"?wait=ready&timeout_s=60", nil, &ready); code != http.StatusOK || !ready.Ready || ready.Up != "session" {
			t.Errorf("%s: wait=ready: %d ready=%v up=%q waiting_for=%q", name, code, ready.Ready, ready.Up, ready.WaitingFor)
		}
		took("ready")
		s.waitAgent(running, time.Minute)
		took("guest agent")
		shot := s.settledScreenshot(adminToken, d.ID, 2*time.Minute)
		took("desktop visible and settled")
		if i == 0 {
			checkDesktopVisible(t, shot)
		}
		if out, _ := s.guest(running, "hostname"); out != name {
			t.Errorf("%s: hostname %q", name, out)
		}
		mid, _ := s.guest(running, "cat /etc/machine-id")
		if machineIDs[mid] || len(mid) != 32 {
			t.Errorf("%s: machine id %q not its own", name, mid)
		}
		machineIDs[mid] = true
		// Its own SSH host keys, and sshd already serves them.
		hostKey, _ := s.guest(running, "cut -d' ' -f2 /etc/ssh/ssh_host_ed25519_key.pub")
		served, _ := s.guest(running, "ssh-keyscan -t ed25519 127.0.0.1 2>/dev/null | cut -d' ' -f3")
		if hostKeys[hostKey] || len(hostKey) < 60 || served != hostKey {
			t.Errorf("%s: SSH host key %q (seen before: %v), sshd serves %q", name, hostKey, hostKeys[hostKey], served)
		}
		hostKeys[hostKey] = true
		if out, _ := s.guest(running, "cat /home/agent/.ssh/authorized_keys"); !strings.Contains(out, key) {
			t.Errorf("%s: authorized_keys %q", name, out)
		}
		s.waitGuest(running, "/home grown to the data disk", "test $(df -BG --output=size /home | tail -1 | tr -dc 0-9) -ge 5", time.Minute)
		if out, code := s.guest(running, "pgrep -u agent -x xfce4-panel >/dev/null && findmnt -n -o SOURCE /home"); code != 0 || !strings.HasPrefix(out, "/dev/vdb") {
			t.Errorf("%s: session or /home: %q", name, out)
		}
		var evs struct{ Events []apiv1.Event }
		s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
		var created, readyEv apiv1.Event
		for _, e := range evs.Events {
			switch e.Type {
			case "created":
				created = e
			case "ready":
				readyEv = e
			}
		}
		if !strings.Contains(created.Message, "warm template") || !strings.Contains(created.Message, []string{"a spare restored ahead", "RAM restored"}[i]) {
			t.Errorf("%s: created event %q", name, created.Message)
		} else {
			t.Logf("%s: %s", name, created.Message)
		}
		if readyEv.CreatedAt.Before(created.CreatedAt) {
			t.Errorf("%s: ready (%s) before created (%s): a warm desktop is ready once its identity is applied", name, readyEv.CreatedAt, created.CreatedAt)
		} else {
			t.Logf("%s: %s", name, readyEv.Message)
		}
	}
	// Files written in one warm desktop are not in the other.
	var first apiv1.Desktop
	s.call(adminToken, "GET", "/api/v1/desktops/"+ids[0], nil, &first)
	s.guest(&first, "echo mine > /home/agent/only-here")
	var second apiv1.Desktop
	s.call(adminToken, "GET", "/api/v1/desktops/"+ids[1], nil, &second)
	if _, code := s.guest(&second, "test -e /home/agent/only-here"); code == 0 {
		t.Error("warm desktops share their /home")
	}
	checkWarmIsolation(t, s, &first, &second)
	checkLayoutChange(t, s, &first)
	checkLayoutTyping(t, s, &first, "us")
	checkLayoutTyping(t, s, &second, "de") // set at create
	checkIdleTiers(t, s, &second)
	checkMemoryPressure(t, s, &first, &second)
	checkWarmCreateCut(t, s, machineIDs)
	// Through the restarts above (spares adopted or made again, dropped
	// under pressure): one spare, paused, and no other spare folder.
	t.Logf("spare after the restarts: %s", s.waitSpare(2*time.Minute))
}

// waitSpare waits until the template keeps a spare and returns its id:
// the one desktop folder marked as a spare, its VM paused.
func (s *server) waitSpare(timeout time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var list struct{ Templates []manager.Template }
		s.call(adminToken, "GET", "/api/v1/templates", nil, &list)
		if len(list.Templates) > 0 && list.Templates[0].Spares == 1 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no spare ready: %+v", list.Templates)
		}
		time.Sleep(time.Second)
	}
	marks, _ := filepath.Glob(filepath.Join(s.dataDir, "desktops", "*", "spare.json"))
	if len(marks) != 1 {
		s.t.Fatalf("spare folders: %v", marks)
	}
	id := filepath.Base(filepath.Dir(marks[0]))
	if st := s.vmState(&apiv1.Desktop{ID: id}); st != desktop.VMPaused {
		s.t.Errorf("spare %s: VM %s, want paused", id, st)
	}
	return id
}

// checkWarmCreateCut kills bureau (as kill -9 would) right after a warm
// desktop's RAM is restored, before it has its own identity: the restarted
// bureau applies the identity and reports the create as finished, and a
// delete then leaves nothing behind.
func checkWarmCreateCut(t *testing.T, s *server, machineIDs map[string]bool) {
	const name = "warm-cut"
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq test" + name + "@host"
	var d apiv1.Desktop
	s.crashAt("create:after-restore", func() {
		if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": name, "vcpus": 2, "memory_mib": 2048,
			"data_disk_gib": 2, "ssh_authorized_keys": []string{key}}, &d); code != http.StatusAccepted {
			t.Fatalf("create %s: %d", name, code)
		}
	})
	got := s.waitSettled(d.ID)
	if got.State != string(desktop.StateRunning) {
		t.Fatalf("%s after the restart: %s (%s)", name, got.State, got.LastError)
	}
	if out, _ := s.guest(got, "hostname"); out != name {
		t.Errorf("%s: hostname %q after the restart: the template's identity was kept", name, out)
	}
	if mid, _ := s.guest(got, "cat /etc/machine-id"); machineIDs[mid] || len(mid) != 32 {
		t.Errorf("%s: machine id %q not its own", name, mid)
	}
	if out, _ := s.guest(got, "cat /home/agent/.ssh/authorized_keys"); !strings.Contains(out, key) {
		t.Errorf("%s: authorized_keys %q", name, out)
	}
	var evs struct{ Events []apiv1.Event }
	s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
	created := false
	for _, e := range evs.Events {
		created = created || e.Type == "created" && strings.Contains(e.Message, "finished after a bureau restart")
	}
	if !created {
		t.Errorf("%s: no created event after the restart: %+v", name, evs.Events)
	}
	if code := s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil); code != http.StatusOK {
		t.Fatalf("delete %s: %d", name, code)
	}
	s.checkGone(got, false)
}

// guestLayout is the layout the desktop's X session uses now.
func guestLayout(s *server, d *apiv1.Desktop) string {
	out, _ := s.guest(d, "su agent -c 'DISPLAY=:0 setxkbmap -query' | awk '/^layout/ {print $2}'")
	return out
}

// checkLayoutChange: a running desktop's layout changes through the API, at
// once in its session and in the X configuration its next boot reads; a
// layout the guest lacks and a malformed one are refused.
func checkLayoutChange(t *testing.T, s *server, d *apiv1.Desktop) {
	var got apiv1.Desktop
	if code := s.call(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"keyboard_layout": "gb"}, &got); code != http.StatusOK || got.KeyboardLayout != "gb" {
		t.Fatalf("%s: set layout gb: %d %+v", d.Name, code, got)
	}
	if l := guestLayout(s, d); l != "gb" {
		t.Errorf("%s: session layout %q after setting gb", d.Name, l)
	}
	if out, _ := s.guest(d, "cat /etc/X11/xorg.conf.d/00-bureau-keyboard.conf"); !strings.Contains(out, `"XkbLayout" "gb"`) {
		t.Errorf("%s: X configuration after setting gb: %q", d.Name, out)
	}
	s.expectError(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"keyboard_layout": "qq"}, http.StatusUnprocessableEntity, "invalid")
	s.expectError(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"keyboard_layout": "de-DE"}, http.StatusUnprocessableEntity, "invalid")
	if code := s.call(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"keyboard_layout": "us"}, &got); code != http.StatusOK || got.KeyboardLayout != "us" {
		t.Fatalf("%s: set layout us: %d %+v", d.Name, code, got)
	}
}

// checkLayoutTyping types 1,000 random characters into a terminal of a
// desktop whose session has layout (printable ASCII with every shifted
// symbol, then mixed Unicode): they arrive exactly.
func checkLayoutTyping(t *testing.T, s *server, d *apiv1.Desktop, layout string) {
	if l := guestLayout(s, d); l != layout {
		t.Fatalf("%s: session layout %q, want %s", d.Name, l, layout)
	}
	rng := mrand.New(mrand.NewPCG(uint64(len(layout)), 11))
	text := randomASCII(rng, "~!@#$%^&*()_+{}|:\"<>? ", 940) + " Grüße aus Köln, naïve café — 日本語 🙂 ß € Ünï\nend"
	got, res, took := s.typeIntoTerminal(adminToken, d, "100x30+50+50", "/tmp/layout.txt", text)
	if got != strings.TrimSpace(text) {
		t.Errorf("%s (%s layout): typed text differs:\n got %q\nwant %q", d.Name, layout, got, text)
	}
	t.Logf("%s layout: typed %d characters (%s, %s keyboard) in %s: %.0f chars/s", layout, len([]rune(text)),
		res.TypedVia, res.Keyboard, took.Round(time.Millisecond), float64(len([]rune(text)))/took.Seconds())
	s.guest(d, "pkill -x xterm")
}

// checkWarmIsolation: two desktops restored from one template have their
// own generation id, MAC and address, cannot reach each other, and their
// QEMU users cannot read each other's disks.
func checkWarmIsolation(t *testing.T, s *server, a, b *apiv1.Desktop) {
	if ga, gb := genID(t, a), genID(t, b); ga == "" || ga == gb {
		t.Errorf("generation ids %q and %q: want one each", ga, gb)
	}
	nic := "ip -o -4 addr show scope global | awk '{print $2; exit}'"
	addr := func(d *apiv1.Desktop) (mac, ip string) {
		mac, _ = s.guest(d, "cat /sys/class/net/$("+nic+")/address")
		ip, _ = s.guest(d, "ip -o -4 addr show scope global | awk '{split($4, a, \"/\"); print a[1]; exit}'")
		return mac, ip
	}
	var macA, ipA, macB, ipB string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(2 * time.Second) {
		macA, ipA = addr(a)
		macB, ipB = addr(b)
		if (ipA != ipB && ipA != "" && ipB != "") || time.Now().After(deadline) {
			break
		}
	}
	if macA != desktop.MAC(a.ID) || macB != desktop.MAC(b.ID) {
		t.Errorf("MACs %q and %q, want %s and %s", macA, macB, desktop.MAC(a.ID), desktop.MAC(b.ID))
	}
	if ipA == ipB || ipA == "" {
		t.Fatalf("addresses %q and %q: want one each", ipA, ipB)
	}
	t.Logf("warm desktops at %s (%s) and %s (%s)", ipA, macA, ipB, macB)
	// A listener in b; a reaches neither it nor b at all.
	// python3 takes seconds to start under emulation on a busy host.
	s.guest(b, "nohup setsid python3 -m http.server 8123 </dev/null >/tmp/listener.log 2>&1 &")
	probe := "curl -s -m 4 -o /dev/null -w %{http_code} http://127.0.0.1:8123/"
	if out, code := s.guest(b, "for i in $(seq 30); do c=$("+probe+"); [ \"$c\" = 200 ] && echo 200 && exit 0; sleep 1; done; echo \"$c\"; cat /tmp/listener.log; exit 1"); code != 0 {
		t.Fatalf("the listener in %s does not answer locally after 30 s: %q", b.Name, out)
	}
	if out, _ := s.guest(a, "curl -s -m 4 -o /dev/null -w %{http_code} http://"+ipB+":8123/ || true"); out == "200" {
		t.Errorf("%s reached a server in %s", a.Name, b.Name)
	}
	if _, code := s.guest(a, "ping -c 2 -W 2 "+ipB); code == 0 {
		t.Errorf("%s pings %s", a.Name, b.Name)
	}
	// b's QEMU user reads b's disk but not a's.
	ua, ub := qemuUserOf(t, a), qemuUserOf(t, b)
	if ua.uid == "0" || ua.uid == ub.uid {
		t.Fatalf("QEMU users %q and %q: want one unprivileged user each", ua.uid, ub.uid)
	}
	read := func(path string) error { return ub.run("head", "-c", "4", path) }
	if err := read(filepath.Join(s.dataDir, "desktops", b.ID, "data.qcow2")); err != nil {
		t.Errorf("%s's QEMU user cannot read its own data disk: %v", b.Name, err)
	}
	if err := read(filepath.Join(s.dataDir, "desktops", a.ID, "data.qcow2")); err == nil {
		t.Errorf("%s's QEMU user reads %s's data disk", b.Name, a.Name)
	}
}
