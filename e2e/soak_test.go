//go:build e2e

package e2e

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestSoak runs real desktops through a seeded random schedule of
// operations mixed with faults — bureau killed (SIGKILL) mid-operation and
// restarted, a desktop's QEMU killed, libvirtd restarted, a client that
// hangs up mid-request — and after every step checks invariants against
// libvirt, the disks and the guest: the recorded state is the VM's once
// settled, nothing stays in a transient state, every desktop keeps its own
// hostname, machine id and SSH host key, every data disk's marker file is
// intact, snapshots are listed by bureau exactly when the disks hold them,
// and no scratch file is left. BUREAU_SOAK_FAULTS sets how many faults (4,
// one of each kind: the short run of make test; make soak runs more), BUREAU_SOAK_SEED
// replays a schedule.
func TestSoak(t *testing.T) {
	faults := envInt("BUREAU_SOAK_FAULTS", 4)
	seed := int64(envInt("BUREAU_SOAK_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("soak: %d faults, seed %d (BUREAU_SOAK_SEED=%d replays this schedule)", faults, seed, seed)
	s := newServer(t)
	s.stop()
	s.env = []string{"BUREAU_RECONCILE_SECONDS=5"}
	s.start()
	k := &soak{s: s, t: t, rng: mrand.New(mrand.NewPCG(uint64(seed), 14)), begun: time.Now(),
		marker: map[string]string{}, failed: map[string]string{}, ids: map[string]string{}, counts: map[string]int{}}
	k.setUp()
	kinds := []func(){k.killBureau, k.killQEMU, k.restartLibvirtd, k.hangUp}
	for k.faults < faults {
		k.operate()
		kinds[k.faults%len(kinds)]()
		k.faults++
	}
	k.tearDown()
	t.Logf("soak: seed %d, %d steps, %d faults (%d bureau killed, %d QEMU killed, %d libvirtd restarts, %d clients hung up), "+
		"%d invariant checks (%d inside running guests), %d violations, %d data lost, %d operations failed by a fault, took %s",
		seed, k.steps, k.faults, k.counts["kill-bureau"], k.counts["kill-qemu"], k.counts["libvirtd"], k.counts["hang-up"],
		k.checks, k.counts["guest-checks"], k.violations, k.lost, k.counts["op-failed"], time.Since(k.begun).Round(time.Second))
}

type soak struct {
	s      *server
	t      *testing.T
	rng    *mrand.Rand
	begun  time.Time
	ds     []string          // desktop ids
	names  map[string]string // id → name (set up)
	marker map[string]string // id → sha256 of its data disk's marker file
	failed map[string]string // id → last error seen
	ids    map[string]string // "machine-id "+id / "hostkey "+id → value
	snaps  int

	steps, faults, checks, violations, lost int
	counts                                  map[string]int
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

func (k *soak) violate(format string, args ...any) {
	k.t.Helper()
	k.violations++
	k.t.Errorf("soak step %d: "+format, append([]any{k.steps}, args...)...)
}

func (k *soak) setUp() {
	k.names = map[string]string{}
	for _, name := range []string{"soak-a", "soak-b"} {
		var d desktop.Desktop
		body := map[string]any{"name": name, "vcpus": 1, "memory_mib": 1024, "data_disk_gib": 2}
		if name == "soak-b" {
			body["keyboard_layout"] = "de" // set by the seed, before X starts
		}
		if code := k.s.call(adminToken, "POST", "/api/v1/desktops", body, &d); code != http.StatusAccepted {
			k.t.Fatalf("create %s: %d", name, code)
		}
		k.ds = append(k.ds, d.ID)
		k.names[d.ID] = name
	}
	for _, id := range k.ds {
		if k.names[id] == "soak-b" {
			// One desktop comes back by itself after its QEMU dies.
			if code := k.s.call(adminToken, "PATCH", "/api/v1/desktops/"+id, map[string]any{"restart_on_crash": true}, nil); code != http.StatusOK {
				k.t.Fatalf("restart on crash: %d", code)
			}
		}
		d := k.s.waitState(adminToken, id, desktop.StateRunning, 6*time.Minute)
		k.s.waitAgent(d, 5*time.Minute)
		out, code := k.s.guest(d, "head -c 4M /dev/urandom > /home/agent/soak.marker && sync && sha256sum /home/agent/soak.marker | cut -c1-64")
		if code != 0 || len(out) != 64 {
			k.t.Fatalf("%s: marker: %d %q", d.Name, code, out)
		}
		k.marker[id] = out
	}
	for _, id := range k.ds {
		want := map[string]string{"soak-a": "us", "soak-b": "de"}[k.names[id]]
		k.s.waitGuest(k.get(id), "keyboard layout "+want, "su agent -c 'DISPLAY=:0 setxkbmap -query' | grep -qx 'layout: *"+want+"'", 3*time.Minute)
	}
	k.check("set-up")
}

func (k *soak) get(id string) *desktop.Desktop {
	var d desktop.Desktop
	k.s.call(adminToken, "GET", "/api/v1/desktops/"+id, nil, &d)
	return &d
}

func (k *soak) pick() *desktop.Desktop { return k.get(k.ds[k.rng.IntN(len(k.ds))]) }

// request is an operation that fits the desktop's state, as method and path.
func (k *soak) request(d *desktop.Desktop) (string, string, string) {
	base := "/api/v1/desktops/" + d.ID
	switch d.State {
	case desktop.StateRunning:
		switch r := k.rng.IntN(10); {
		case r < 3:
			return "POST", base + "/pause", ""
		case r < 6:
			return "POST", base + "/hibernate", ""
		case r < 9:
			k.snaps++
			return "POST", base + "/snapshots", fmt.Sprintf(`{"name":"s%d"}`, k.snaps)
		default:
			return "POST", base + "/stop", ""
		}
	case desktop.StatePaused:
		if k.rng.IntN(2) == 0 {
			return "POST", base + "/hibernate", ""
		}
		return "POST", base + "/resume", ""
	case desktop.StateHibernated:
		return "POST", base + "/resume", ""
	}
	return "POST", base + "/start", ""
}

// operate runs one operation to its end, and keeps at most two snapshots
// per desktop.
func (k *soak) operate() {
	d := k.pick()
	method, path, body := k.request(d)
	code := k.s.call(adminToken, method, path, body, nil)
	k.t.Logf("soak step %d: %s %s %s → %d", k.steps, d.Name, method, strings.TrimPrefix(path, "/api/v1/desktops/"+d.ID), code)
	if code >= 500 {
		k.violate("%s %s: %d", method, path, code)
	}
	k.check("operation")
	var list struct{ Snapshots []desktop.Snapshot }
	k.s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/snapshots", nil, &list)
	if len(list.Snapshots) > 2 {
		k.s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"/snapshots/"+list.Snapshots[0].Name, nil, nil)
		k.check("snapshot delete")
	}
}

// killBureau starts an operation and kills bureau (SIGKILL) 0–3 s into it.
func (k *soak) killBureau() {
	k.counts["kill-bureau"]++
	d := k.pick()
	method, path, body := k.request(d)
	after := time.Duration(k.rng.IntN(3000)) * time.Millisecond
	k.t.Logf("soak step %d: fault: bureau killed %s into %s %s of %s", k.steps, after, method, filepath.Base(path), d.Name)
	go k.s.send(method, path, body)
	time.Sleep(after)
	k.s.cmd.Process.Kill()
	<-k.s.exited
	k.s.cmd = nil
	k.s.start()
	k.check("bureau killed")
}

// killQEMU kills a desktop's QEMU process (SIGKILL): bureau records a crash
// and, for the desktop that asked for it, starts it again.
func (k *soak) killQEMU() {
	k.counts["kill-qemu"]++
	var victim *desktop.Desktop
	for _, id := range k.ds {
		if st := k.s.vmState(k.get(id)); st == desktop.VMRunning || st == desktop.VMPaused {
			if d := k.get(id); victim == nil || k.rng.IntN(2) == 0 {
				victim = d
			}
		}
	}
	if victim == nil {
		k.t.Logf("soak step %d: fault: no QEMU runs; starting one first", k.steps)
		d := k.pick()
		k.s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/start", nil, nil)
		k.check("start before QEMU kill")
		victim = k.get(d.ID)
	}
	raw, err := os.ReadFile("/run/libvirt/qemu/" + victim.DomainName() + ".pid")
	if err != nil {
		k.violate("%s is %s with no QEMU pid file: %v", victim.Name, victim.State, err)
		return
	}
	k.t.Logf("soak step %d: fault: QEMU of %s (%s) killed", k.steps, victim.Name, victim.State)
	pid := strings.TrimSpace(string(raw))
	exec.Command("kill", "-9", pid).Run()
	// The process is gone a moment before libvirt has noticed: until
	// libvirt drops (or replaces) the pid file it still reports the VM as
	// it was, and a check in that moment would compare bureau with a stale
	// VM state. Once the pid file is gone, libvirt's state is the crash.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		now, err := os.ReadFile("/run/libvirt/qemu/" + victim.DomainName() + ".pid")
		if _, gone := os.Stat("/proc/" + pid); gone != nil && (err != nil || strings.TrimSpace(string(now)) != pid) {
			break
		}
	}
	k.check("QEMU killed")
}

// restartLibvirtd restarts libvirtd, sometimes under an operation; QEMU
// processes keep running.
func (k *soak) restartLibvirtd() {
	k.counts["libvirtd"]++
	d := k.pick()
	method, path, body := k.request(d)
	under := k.rng.IntN(2) == 0
	k.t.Logf("soak step %d: fault: libvirtd restarted (under %s %s of %s: %t)", k.steps, method, filepath.Base(path), d.Name, under)
	if under {
		go k.s.send(method, path, body)
		time.Sleep(time.Duration(k.rng.IntN(1500)) * time.Millisecond)
	}
	exec.Command("pkill", "-TERM", "-x", "libvirtd").Run()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if exec.Command("pgrep", "-x", "libvirtd").Run() != nil {
			break
		}
	}
	if out, err := exec.Command("libvirtd", "-d").CombinedOutput(); err != nil {
		k.t.Fatalf("starting libvirtd: %v %s", err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if exec.Command("virsh", "-c", "qemu:///system", "list").Run() == nil {
			break
		}
	}
	k.check("libvirtd restarted")
}

// hangUp sends an operation and hangs up before bureau answers.
func (k *soak) hangUp() {
	k.counts["hang-up"]++
	d := k.pick()
	method, path, body := k.request(d)
	after := time.Duration(5+k.rng.IntN(300)) * time.Millisecond
	k.t.Logf("soak step %d: fault: client hung up %s into %s %s of %s", k.steps, after, method, filepath.Base(path), d.Name)
	ctx, cancel := context.WithTimeout(context.Background(), after)
	req, _ := http.NewRequestWithContext(ctx, method, k.s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	cancel()
	k.check("client hung up")
}

// check waits until every desktop has settled and checks the invariants.
func (k *soak) check(after string) {
	k.t.Helper()
	k.steps++
	for _, id := range k.ds {
		k.checks++
		d := k.settle(id)
		if d == nil {
			continue
		}
		k.checkVM(d, after)
		k.checkFiles(d)
		k.checkSnapshots(d)
		if d.State == desktop.StateRunning {
			k.checkGuest(d)
		}
	}
}

// settle waits for a desktop with no operation, a settled state and that
// state matching its VM's (bureau needs a moment to see a change made
// behind its back: an event, or the next reconcile). At the deadline it
// returns what it has: checkVM reports a mismatch, or it reports a desktop
// stuck in a transient state.
func (k *soak) settle(id string) *desktop.Desktop {
	var d *desktop.Desktop
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		d = k.get(id)
		if d.State.Settled() && d.Operation == "" && k.matches(d) {
			// Restart on crash starts the desktop again: wait for that too.
			if d.State == desktop.StateCrashed && d.RestartOnCrash {
				continue
			}
			return d
		}
	}
	if !d.State.Settled() || d.Operation != "" {
		k.violate("%s stuck %s (operation %q, step %q)", d.Name, d.State, d.Operation, d.Step)
		return nil
	}
	return d
}

// vmStates are the VM states a recorded state stands for.
var vmStates = map[desktop.State][]desktop.VMState{
	desktop.StateRunning:    {desktop.VMRunning},
	desktop.StatePaused:     {desktop.VMPaused},
	desktop.StateHibernated: {desktop.VMSaved},
	desktop.StateStopped:    {desktop.VMShutoff},
	desktop.StateCrashed:    {desktop.VMCrashed, desktop.VMShutoff},
	desktop.StateError:      {desktop.VMShutoff, desktop.VMCrashed},
}

func (k *soak) matches(d *desktop.Desktop) bool {
	return slices.Contains(vmStates[d.State], k.s.vmState(d))
}

// checkVM: the recorded state is the VM's.
func (k *soak) checkVM(d *desktop.Desktop, after string) {
	if vm := k.s.vmState(d); !slices.Contains(vmStates[d.State], vm) {
		k.violate("after %s: %s is recorded %s (%q) but its VM is %s", after, d.Name, d.State, d.LastError, vm)
	}
	if d.State == desktop.StateError && k.failed[d.ID] != d.LastError {
		// A fault that failed an operation is reported, not hidden; the
		// next operation starts the desktop again.
		k.counts["op-failed"]++
		k.t.Logf("soak step %d: %s in error after %s: %s", k.steps, d.Name, after, d.LastError)
	}
	k.failed[d.ID] = d.LastError
}

// checkFiles: the disks are there and nothing an operation writes for a
// moment (save images, unfinished disks, kept keys) is left behind.
func (k *soak) checkFiles(d *desktop.Desktop) {
	dir := filepath.Dir(d.DataDiskPath)
	for _, f := range []string{"os.qcow2", "data.qcow2", "seed.iso"} {
		if !exists(filepath.Join(dir, f)) {
			k.violate("%s has no %s", d.Name, f)
			if f == "data.qcow2" {
				k.lost++
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch e.Name() {
		case "os.qcow2", "data.qcow2", "seed.iso", "serial.log", "vnc.sock":
		default:
			k.violate("%s: scratch file %s left", d.Name, e.Name())
		}
	}
}

// checkSnapshots: bureau lists exactly the snapshots the disks hold, and
// libvirt knows the memory ones.
func (k *soak) checkSnapshots(d *desktop.Desktop) {
	var list struct{ Snapshots []desktop.Snapshot }
	k.s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/snapshots", nil, &list)
	var listed, memory []string
	for _, sn := range list.Snapshots {
		listed = append(listed, sn.Name)
		if sn.Memory {
			memory = append(memory, sn.Name)
		}
	}
	out, err := exec.Command("qemu-img", "snapshot", "-l", "-U", filepath.Join(filepath.Dir(d.DataDiskPath), "os.qcow2")).Output()
	if err != nil {
		k.violate("%s: qemu-img snapshot -l: %v", d.Name, err)
		return
	}
	var inDisk []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] != "ID" && f[0] != "Snapshot" {
			inDisk = append(inDisk, f[1])
		}
	}
	virsh, _ := exec.Command("virsh", "-c", "qemu:///system", "snapshot-list", "--name", d.DomainName()).Output()
	inLibvirt := strings.Fields(string(virsh))
	slices.Sort(listed)
	slices.Sort(inDisk)
	slices.Sort(memory)
	slices.Sort(inLibvirt)
	if !slices.Equal(listed, inDisk) {
		k.violate("%s: bureau lists snapshots %v, the OS disk holds %v", d.Name, listed, inDisk)
	}
	if !slices.Equal(memory, inLibvirt) {
		k.violate("%s: bureau lists memory snapshots %v, libvirt %v", d.Name, memory, inLibvirt)
	}
}

// checkGuest: a running desktop answers, is still itself, and its data
// disk's marker is intact.
func (k *soak) checkGuest(d *desktop.Desktop) {
	k.counts["guest-checks"]++
	if !k.agentAnswers(d, 5*time.Minute) {
		k.violate("%s is running but its guest agent has not answered for 5 minutes", d.Name)
		return
	}
	if out, _ := k.s.guest(d, "hostname"); out != d.Name {
		k.violate("%s: hostname %q", d.Name, out)
	}
	for _, what := range []string{"cat /etc/machine-id", "cut -d' ' -f2 /etc/ssh/ssh_host_ed25519_key.pub"} {
		out, _ := k.s.guest(d, what)
		if prev := k.ids[what+" "+d.ID]; prev != "" && prev != out {
			k.violate("%s: %s changed from %q to %q", d.Name, what, prev, out)
		}
		k.ids[what+" "+d.ID] = out
		for _, other := range k.ds {
			if other != d.ID && k.ids[what+" "+other] == out {
				k.violate("%s shares %q (%s) with another desktop", d.Name, out, what)
			}
		}
	}
	// After a crash the guest checks the data disk's file system before
	// mounting it (nofail: the boot, and its agent, do not wait), so the
	// marker is read once /home is mounted.
	if !k.homeMounted(d, 3*time.Minute) {
		k.violate("%s: its data disk is not mounted on /home 3 minutes after its agent answered", d.Name)
		return
	}
	out, code := k.s.guest(d, "sha256sum /home/agent/soak.marker | cut -c1-64")
	if code != 0 || out != k.marker[d.ID] {
		k.lost++
		k.violate("%s: data disk marker %q, want %q", d.Name, out, k.marker[d.ID])
	}
}

// homeMounted waits until the desktop's data disk is mounted on /home.
func (k *soak) homeMounted(d *desktop.Desktop, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(2 * time.Second) {
		if out, code := k.s.guest(d, "findmnt -n -o SOURCE /home"); code == 0 && strings.HasPrefix(out, "/dev/vdb") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// tearDown deletes one desktop with its data and keeps the other's: nothing
// else of either is left.
func (k *soak) tearDown() {
	for i, id := range k.ds {
		d := k.get(id)
		keep := i == 0
		code := k.s.call(adminToken, "DELETE", "/api/v1/desktops/"+id+"?delete_data="+strconv.FormatBool(!keep), nil, nil)
		if code != http.StatusOK {
			k.violate("delete %s: %d", d.Name, code)
			continue
		}
		k.s.checkGone(d, keep)
		if keep {
			os.Remove(d.DataDiskPath)
			os.Remove(filepath.Dir(d.DataDiskPath))
		}
	}
}

func (k *soak) agentAnswers(d *desktop.Desktop, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := k.s.hv.GuestPing(ctx, d.DomainName())
		cancel()
		if err == nil {
			return true
		}
	}
	return false
}
