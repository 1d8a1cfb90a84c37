//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// The faults of the soak. Each ends with a check of every desktop.

// killBureau starts an operation and kills bureau (SIGKILL) 0–3 s into it;
// the restarted bureau must finish the operation (it answered) or finish
// or undo it (it had not).
func (k *soak) killBureau() {
	k.faultsBy["kill-bureau"]++
	d := k.pick()
	op := k.request(d)
	after := time.Duration(k.rng.IntN(3000)) * time.Millisecond
	k.t.Logf("soak step %s: fault: bureau killed %s into %s", k.at(), after, op)
	ctx, cancel := context.WithTimeout(context.Background(), answerWait)
	defer cancel()
	req := k.newRequest(ctx, op)
	answered := make(chan soakAnswer, 1)
	go func() { answered <- soakDo(opClient, req) }()
	time.Sleep(after)
	k.s.cmd.Process.Kill()
	<-k.s.exited
	k.s.cmd = nil
	var a soakAnswer
	select {
	case a = <-answered: // its connection is gone with bureau
	case <-time.After(time.Minute):
		a = soakAnswer{err: errors.New("still none a minute after bureau was killed")}
	}
	k.s.start()
	k.finish(op, a, "bureau killed")
	k.check("bureau killed")
}

// killQEMU kills a desktop's QEMU process (SIGKILL) while records are
// being appended to its data disk: every record the guest acknowledged
// must be there when it runs again. A desktop with restart_on_crash must
// run again within restartWait; one without must be recorded crashed (the
// next operation starts it).
func (k *soak) killQEMU() {
	k.faultsBy["kill-qemu"]++
	var victim *apiv1.Desktop
	for _, id := range k.ds {
		if st := k.s.vmState(k.get(id)); st == desktop.VMRunning || st == desktop.VMPaused {
			if d := k.get(id); victim == nil || k.rng.IntN(2) == 0 {
				victim = d
			}
		}
	}
	if victim == nil {
		k.t.Logf("soak step %s: fault: no QEMU runs; starting one first", k.at())
		k.runOp(k.wake(k.pick()))
		k.check("start before QEMU kill")
		for _, id := range k.ds {
			if d := k.get(id); d.State == string(desktop.StateRunning) {
				victim = d
			}
		}
		if victim == nil {
			k.violate("no desktop runs after the start before the QEMU kill")
			return
		}
	}
	pidFile := "/run/libvirt/qemu/" + domainOf(victim.ID) + ".pid"
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		k.violate("%s is %s with no QEMU pid file: %v", victim.Name, victim.State, err)
		return
	}
	pid := strings.TrimSpace(string(raw))
	var w *soakWriter
	if victim.State == string(desktop.StateRunning) {
		// Records are appended and fsynced one after another until the
		// kill: the last acknowledged ones were flushed a moment before it.
		w = k.startWriter(victim)
		select {
		case <-w.first:
		case <-time.After(time.Minute):
			k.t.Logf("soak step %s: no record of %s acknowledged within a minute; killing its QEMU all the same", k.at(), victim.Name)
		}
		time.Sleep(time.Duration(k.rng.IntN(1000)) * time.Millisecond)
	}
	k.t.Logf("soak step %s: fault: QEMU of %s (%s) killed", k.at(), victim.Name, victim.State)
	killed := time.Now()
	exec.Command("kill", "-9", pid).Run()
	if w != nil {
		k.stopWriter(w, victim)
	}
	// The process is gone a moment before libvirt has noticed: until
	// libvirt drops (or replaces) the pid file it still reports the VM as
	// it was, and a check in that moment would compare bureau with a stale
	// VM state. Once the pid file is gone, libvirt's state is the crash.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		now, err := os.ReadFile(pidFile)
		if _, gone := os.Stat("/proc/" + pid); gone != nil && (err != nil || strings.TrimSpace(string(now)) != pid) {
			break
		}
	}
	if victim.RestartOnCrash {
		k.awaitRestart(victim, killed)
	} else {
		k.awaitCrashed(victim)
	}
	k.check("QEMU killed")
}

// awaitRestart: a desktop with restart_on_crash is recorded running again
// (its VM too) within restartWait of its QEMU being killed. On the way it
// may be recorded crashed, or in error (an operation the crash cut short).
func (k *soak) awaitRestart(victim *apiv1.Desktop, killed time.Time) {
	var seen []string
	for {
		d := k.get(victim.ID)
		if st := string(d.State); len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		if d.State == string(desktop.StateRunning) && d.Operation == "" && k.matches(d) {
			took := time.Since(killed)
			k.restarts = append(k.restarts, took)
			k.accept[d.ID] = []desktop.State{desktop.StateRunning}
			k.t.Logf("soak step %s: restart on crash: %s running again %s after its QEMU was killed (recorded %s)",
				k.at(), d.Name, took.Round(100*time.Millisecond), strings.Join(seen, " → "))
			return
		}
		if time.Since(killed) > restartWait {
			k.unrestarted[d.ID] = true
			k.violate("%s has restart_on_crash set but is %s (%q) %s after its QEMU was killed (recorded %s)",
				d.Name, d.State, d.LastError, restartWait, strings.Join(seen, " → "))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// awaitCrashed: a desktop without restart_on_crash is recorded crashed,
// and stays so: bureau does not start it by itself.
func (k *soak) awaitCrashed(victim *apiv1.Desktop) {
	var d *apiv1.Desktop
	for deadline := time.Now().Add(crashedWait); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if d = k.get(victim.ID); d.State == string(desktop.StateCrashed) && d.Operation == "" && k.matches(d) {
			k.t.Logf("soak step %s: %s recorded crashed: %s", k.at(), d.Name, d.LastError)
			return
		}
	}
	k.violate("%s (no restart_on_crash) is %s (%q, VM %s) %s after its QEMU was killed, want crashed",
		d.Name, d.State, d.LastError, k.s.vmState(d), crashedWait)
}

// restartLibvirtd restarts libvirtd, sometimes under an operation; QEMU
// processes keep running.
func (k *soak) restartLibvirtd() {
	k.faultsBy["libvirtd"]++
	d := k.pick()
	op := k.request(d)
	under := k.rng.IntN(2) == 0
	k.t.Logf("soak step %s: fault: libvirtd restarted (under %s: %t)", k.at(), op, under)
	var answered chan soakAnswer
	if under {
		ctx, cancel := context.WithTimeout(context.Background(), answerWait)
		defer cancel()
		req := k.newRequest(ctx, op)
		answered = make(chan soakAnswer, 1)
		go func() { answered <- soakDo(opClient, req) }()
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
	if under {
		k.finish(op, <-answered, "libvirtd restarted") // bounded by the request's context
	}
	k.check("libvirtd restarted")
}

// hangUp sends an operation and hangs up 5–300 ms into it: bureau carries
// on with it (or never began it).
func (k *soak) hangUp() {
	k.faultsBy["hang-up"]++
	d := k.pick()
	op := k.request(d)
	after := time.Duration(5+k.rng.IntN(300)) * time.Millisecond
	k.t.Logf("soak step %s: fault: client hung up %s into %s", k.at(), after, op)
	ctx, cancel := context.WithTimeout(context.Background(), after)
	a := soakDo(opClient, k.newRequest(ctx, op))
	cancel()
	k.finish(op, a, "client hung up")
	k.check("client hung up")
}

// soakWriter appends records to a guest in the background.
type soakWriter struct {
	stop  chan struct{}
	first chan struct{} // closed at the first acknowledged record
	done  chan soakWritten
}

type soakWritten struct {
	acked   []soakRecord
	unacked int
	lastErr error
}

// startWriter appends and fsyncs records to d's data disk, one after
// another, until stopped. It reports nothing to the test itself (it runs
// beside it): stopWriter does.
func (k *soak) startWriter(d *apiv1.Desktop) *soakWriter {
	w := &soakWriter{stop: make(chan struct{}), first: make(chan struct{}), done: make(chan soakWritten, 1)}
	step, domain := k.steps, domainOf(d.ID)
	go func() {
		var res soakWritten
		defer func() { w.done <- res }()
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			r := k.newRecord(step)
			if err := k.appendRecord(domain, r); err != nil {
				res.unacked++
				res.lastErr = err
				select {
				case <-w.stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			res.acked = append(res.acked, r)
			if len(res.acked) == 1 {
				close(w.first)
			}
		}
	}()
	return w
}

// stopWriter stops a writer and keeps the records it got acknowledged.
func (k *soak) stopWriter(w *soakWriter, d *apiv1.Desktop) {
	close(w.stop)
	select {
	case res := <-w.done:
		k.records[d.ID] = append(k.records[d.ID], res.acked...)
		k.recWritten += len(res.acked)
		k.recUnacked += res.unacked
		k.t.Logf("soak step %s: %d records of %s acknowledged up to the kill, %d not (%v)", k.at(), len(res.acked), d.Name, res.unacked, res.lastErr)
	case <-time.After(recordWait + time.Minute):
		k.violate("the record writer of %s did not stop", d.Name)
	}
}
