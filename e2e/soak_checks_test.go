//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// check waits until every desktop has settled and checks the invariants.
func (k *soak) check(after string) {
	k.t.Helper()
	k.steps++
	for _, id := range k.ds {
		k.checks++
		d := k.settle(id)
		k.noteRunning(id, d, after)
		if d == nil {
			continue
		}
		k.checkVM(d, after)
		k.checkFiles(d)
		k.checkSnapshots(d)
		if d.State == string(desktop.StateRunning) {
			k.checkGuest(d)
		}
	}
}

// settle waits for a desktop with no operation, a settled state and that
// state matching its VM's (bureau needs a moment to see a change made
// behind its back: an event, or the next reconcile), and for a crashed
// desktop with restart_on_crash to be started again. At the deadline it
// returns what it has: checkVM reports a mismatch, or it reports a desktop
// stuck in a transient state or crashed despite restart_on_crash.
func (k *soak) settle(id string) *apiv1.Desktop {
	var d *apiv1.Desktop
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		d = k.get(id)
		awaited := d.State == string(desktop.StateCrashed) && d.RestartOnCrash && !k.unrestarted[id]
		if desktop.State(d.State).Settled() && d.Operation == "" && k.matches(d) && !awaited {
			if d.State != string(desktop.StateCrashed) {
				delete(k.unrestarted, id)
			}
			return d
		}
	}
	if !desktop.State(d.State).Settled() || d.Operation != "" {
		k.violate("%s stuck %s (operation %q, step %q)", d.Name, d.State, d.Operation, d.OperationStep)
		return nil
	}
	if d.State == string(desktop.StateCrashed) && d.RestartOnCrash && !k.unrestarted[id] {
		k.unrestarted[id] = true
		k.violate("%s has restart_on_crash set but has stayed crashed for 5 minutes: %s", d.Name, d.LastError)
	}
	return d
}

// noteRunning counts the checks in a row a desktop was not running when
// the schedule had not left it paused, hibernated or stopped; past
// notRunningSteps that is a violation (once per streak).
func (k *soak) noteRunning(id string, d *apiv1.Desktop, after string) {
	if d != nil && (d.State == string(desktop.StateRunning) || k.deliberate(d)) {
		k.streak[id] = 0
		return
	}
	k.streak[id]++
	k.maxStreak = max(k.maxStreak, k.streak[id])
	if k.streak[id] == notRunningSteps+1 {
		what := "stuck in a transient state"
		if d != nil {
			what = fmt.Sprintf("%s (%q)", d.State, d.LastError)
		}
		k.violate("%s has not been running for %d checks in a row (now %s, after %s), and the schedule did not leave it so",
			k.names[id], k.streak[id], what, after)
	}
}

// deliberate: the desktop is paused, hibernated or stopped, and its last
// operation could end so.
func (k *soak) deliberate(d *apiv1.Desktop) bool {
	switch desktop.State(d.State) {
	case desktop.StatePaused, desktop.StateHibernated, desktop.StateStopped:
		return slices.Contains(k.accept[d.ID], desktop.State(d.State))
	}
	return false
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

func (k *soak) matches(d *apiv1.Desktop) bool {
	return slices.Contains(vmStates[desktop.State(d.State)], k.s.vmState(d))
}

// checkVM: the recorded state is the VM's, and no desktop is in error (a
// violation once per error).
func (k *soak) checkVM(d *apiv1.Desktop, after string) {
	if vm := k.s.vmState(d); !slices.Contains(vmStates[desktop.State(d.State)], vm) {
		k.violate("after %s: %s is recorded %s (%q) but its VM is %s", after, d.Name, d.State, d.LastError, vm)
	}
	if d.State != string(desktop.StateError) {
		delete(k.failed, d.ID)
		return
	}
	if k.failed[d.ID] != d.LastError {
		k.violate("after %s: %s is in error: %s", after, d.Name, d.LastError)
	}
	k.failed[d.ID] = d.LastError
}

// checkFiles: the disks are there and nothing an operation writes for a
// moment (save images, unfinished disks, kept keys) is left behind.
func (k *soak) checkFiles(d *apiv1.Desktop) {
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
func (k *soak) checkSnapshots(d *apiv1.Desktop) {
	var listed, memory []string
	for _, sn := range k.snapshots(d.ID) {
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
	virsh, _ := exec.Command("virsh", "-c", "qemu:///system", "snapshot-list", "--name", domainOf(d.ID)).Output()
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

// checkGuest: a running desktop answers, is still itself, its data disk's
// marker is intact, every record it acknowledged is there; then it gets
// this step's record.
func (k *soak) checkGuest(d *apiv1.Desktop) {
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
	// marker and the records are read once /home is mounted.
	if !k.homeMounted(d, 3*time.Minute) {
		k.violate("%s: its data disk is not mounted on /home 3 minutes after its agent answered", d.Name)
		return
	}
	out, code := k.s.guest(d, "sha256sum /home/agent/soak.marker | cut -c1-64")
	if code != 0 || out != k.marker[d.ID] {
		k.lost++
		k.violate("%s: data disk marker %q, want %q", d.Name, out, k.marker[d.ID])
	}
	k.verifyRecords(d)
	if k.final {
		return
	}
	r := k.newRecord(k.steps)
	if err := k.appendRecord(domainOf(d.ID), r); err != nil {
		k.violate("%s: record %q not appended and fsynced: %v", d.Name, r, err)
		return
	}
	k.records[d.ID] = append(k.records[d.ID], r)
	k.recWritten++
}

// homeMounted waits until the desktop's data disk is mounted on /home.
func (k *soak) homeMounted(d *apiv1.Desktop, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(2 * time.Second) {
		if out, code := k.s.guest(d, "findmnt -n -o SOURCE /home"); code == 0 && strings.HasPrefix(out, "/dev/vdb") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (k *soak) agentAnswers(d *apiv1.Desktop, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := k.s.hv.GuestPing(ctx, domainOf(d.ID))
		cancel()
		if err == nil {
			return true
		}
	}
	return false
}

// soakRecord is one line of a guest's record file.
type soakRecord struct {
	seq   int64
	step  int
	token string
}

func (r soakRecord) String() string { return fmt.Sprintf("%d %d %s", r.seq, r.step, r.token) }

func (k *soak) newRecord(step int) soakRecord {
	return soakRecord{seq: k.seq.Add(1), step: step, token: fmt.Sprintf("%016x", mrand.Uint64())}
}

// appendRecord appends r to the record file on the guest's data disk and
// fsyncs the file and its directory (coreutils' sync FILE…, Debian 12);
// nil means the guest acknowledged both. It runs beside the test too
// (startWriter): it reports to no one.
func (k *soak) appendRecord(domain string, r soakRecord) error {
	out, code, err := k.guestRun(domain, "findmnt -n -o SOURCE /home | grep -q '^/dev/vdb' || { echo data disk not mounted on /home; exit 3; }; "+
		"echo '"+r.String()+"' >> "+recordFile+" && sync "+recordFile+" "+filepath.Dir(recordFile), recordWait)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, out)
	}
	return err
}

// verifyRecords reads the record file of a running desktop whose /home is
// mounted: every acknowledged record must be in it.
func (k *soak) verifyRecords(d *apiv1.Desktop) {
	want := k.records[d.ID]
	out, code, err := k.guestRun(domainOf(d.ID), "cat "+recordFile, recordWait)
	if err != nil {
		k.violate("%s: reading %s: %v", d.Name, recordFile, err)
		return
	}
	if code != 0 && len(want) == 0 {
		return // none written yet
	}
	have := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		have[strings.TrimSpace(line)] = true
	}
	var missing []string
	for _, r := range want {
		if !have[r.String()] {
			missing = append(missing, r.String())
		}
	}
	k.recChecked += len(want)
	if k.final {
		k.recFinal += len(want)
	}
	if len(missing) > 0 {
		k.lost++
		k.recMissing += len(missing)
		read := ""
		if code != 0 {
			read = fmt.Sprintf(" (reading it: exit %d: %s)", code, out)
		}
		k.violate("%s: %d of %d acknowledged records missing from %s%s (seq step token): %s",
			d.Name, len(missing), len(want), recordFile, read, strings.Join(missing[:min(len(missing), 20)], ", "))
	}
}

// guestRun runs a shell command in the guest within timeout; err is a
// failed or cut-short exec (never fatal: the guest may be dying).
func (k *soak) guestRun(domain, script string, timeout time.Duration) (string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := k.s.hv.GuestExec(ctx, domain, desktop.Exec{Argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		return "", 0, err
	}
	if res.Truncated {
		return "", 0, errors.New("output truncated")
	}
	return strings.TrimSpace(string(res.Stdout) + string(res.Stderr)), res.ExitCode, nil
}

// report logs what the soak did and found, as tables.
func (k *soak) report(seed int64) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "operation\tsent\treached target\tunchanged (fault)\trefused (409)\tmissed\t")
	for _, kind := range []string{"start", "stop", "pause", "resume", "hibernate", "snapshot", "snapshot-delete"} {
		c := k.ops[kind]
		if c == nil {
			c = &soakCount{}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", kind, c.sent, c.reached, c.unchanged, c.refused, c.missed)
	}
	tw.Flush()
	fmt.Fprintf(&b, "faults: %d bureau killed, %d QEMU killed, %d libvirtd restarts, %d clients hung up; %d operations failed under a libvirtd restart\n",
		k.faultsBy["kill-bureau"], k.faultsBy["kill-qemu"], k.faultsBy["libvirtd"], k.faultsBy["hang-up"], k.counts["op-failed"])
	var restarts []string
	for _, r := range k.restarts {
		restarts = append(restarts, r.Round(100*time.Millisecond).String())
	}
	fmt.Fprintf(&b, "restart on crash, QEMU killed → running: [%s] (bound %s)\n", strings.Join(restarts, " "), restartWait)
	fmt.Fprintf(&b, "records: %d acknowledged, %d writes not acknowledged (cut by a kill), %d presence checks (%d at the end), %d missing\n",
		k.recWritten, k.recUnacked, k.recChecked, k.recFinal, k.recMissing)
	fmt.Fprintf(&b, "longest not-running streak the schedule did not ask for: %d checks (limit %d)\n", k.maxStreak, notRunningSteps)
	k.t.Logf("soak: seed %d, %d steps, %d faults, %d invariant checks (%d inside running guests), %d violations, %d data lost, took %s\n%s",
		seed, k.steps, k.faults, k.checks, k.counts["guest-checks"], k.violations, k.lost, time.Since(k.begun).Round(time.Second), b.String())
}
