package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Run reconciles the store with the hypervisor, then follows lifecycle
// events until Close, reconciling again every ReconcileEvery and whenever
// the hypervisor says events may have been missed. Running VMs are never
// stopped by a bureau restart.
func (m *Manager) Run() error {
	m.ops.ensureReserve()
	m.warm.abandonBuilds(m.ops.ctx)
	if err := m.ident.loadNetwork(m.ops.ctx); err != nil {
		return fmt.Errorf("desktop network: %w", err)
	}
	if err := m.recon.Reconcile(m.ops.ctx); err != nil {
		return err
	}
	m.backups.settle(m.ops.ctx)
	m.ops.goUntilClose(func() { m.backups.watchSchedules(scheduleTick) })
	m.ops.spawn(5*time.Minute, m.warm.adopt)
	m.ops.goUntilClose(func() { m.idle.watch(m.cfg.IdleCheck) })
	// Events and reconciles run apart: a reconcile slowed down by a busy
	// hypervisor never holds up an event (both take each desktop's row
	// lock, so they never write over each other).
	m.ops.goUntilClose(func() {
		for {
			select {
			case <-m.ops.ctx.Done():
				return
			case ev := <-m.events.Events():
				m.recon.onEvent(m.ops.ctx, ev)
			}
		}
	})
	m.ops.goUntilClose(func() {
		tick := time.NewTicker(m.cfg.ReconcileEvery)
		defer tick.Stop()
		for {
			select {
			case <-m.ops.ctx.Done():
				return
			case <-m.events.Resync():
				m.recon.reconcileLogged("events may have been missed")
			case <-tick.C:
				m.recon.reconcileLogged("")
			}
		}
	})
	return nil
}

// reconciler keeps desktops' records in line with their VMs: it applies
// the changes libvirt reports that no operation asked for (onEvent),
// compares every desktop with its VM (Reconcile), and finishes or undoes
// what a restart cut short (interrupted.go). It holds the operation core
// and what that needs beside it, each by the role it plays here.
type reconciler struct {
	ops     *runner
	store   reconcileStore
	vms     reconcileVMs
	local   scratchFiles
	life    powerRecovery
	creates createRecovery
	moves   moveRecovery
	log     *slog.Logger
}

// reconcileStore reads the desktops reconcile compares with their VMs.
type reconcileStore interface {
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	// ListSnapshots names the snapshot an interrupted restore kept.
	ListSnapshots(ctx context.Context, desktopID string) ([]*desktop.Snapshot, error)
}

// reconcileVMs lists VMs and reads one's state now.
type reconcileVMs interface {
	List(ctx context.Context) (map[string]desktop.VMState, error)
	State(ctx context.Context, name string) (desktop.VMState, error)
}

// scratchFiles finds and removes what an operation cut short left on
// bureau's own host.
type scratchFiles interface {
	Exists(ctx context.Context, path string) (bool, error)
	Remove(ctx context.Context, path string) error
}

// powerRecovery starts a crashed desktop that asked for it, and finishes
// a delete or a power operation a restart cut short (lifecycle).
type powerRecovery interface {
	Start(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	finishDelete(ctx context.Context, d *desktop.Desktop, deleteData bool) (*DeleteResult, error)
	resumePower(ctx context.Context, d *desktop.Desktop, vm desktop.VMState, target desktop.State)
}

// createRecovery finishes a create a restart cut short (creator).
type createRecovery interface {
	resumeCreate(ctx context.Context, d *desktop.Desktop, vm desktop.VMState)
}

// moveRecovery settles a move a restart cut short (Moves).
type moveRecovery interface {
	resumeMigrate(ctx context.Context, d *desktop.Desktop)
}

func (r *reconciler) reconcileLogged(why string) {
	if why != "" {
		r.log.Info("reconciling every desktop", "why", why)
	}
	ctx, cancel := context.WithTimeout(r.ops.ctx, time.Minute)
	defer cancel()
	begun := time.Now()
	if err := r.Reconcile(ctx); err != nil {
		r.log.Warn("reconcile", "err", err)
	}
	if took := time.Since(begun); took > 5*time.Second {
		r.log.Warn("reconcile was slow", "took", took.Round(time.Millisecond))
	}
}

// Reconcile compares every live desktop with its VM: it repairs changes
// whose events were missed, and finishes or undoes operations a previous
// bureau process left half done. It never guesses that a desktop is gone:
// a VM missing without a recorded intent is an error with a reason, and the
// desktop's files stay. Desktops an operation holds are left to it.
func (r *reconciler) Reconcile(ctx context.Context) error {
	desktops, err := r.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	vms, err := r.vms.List(ctx)
	// Desktops of a host that did not answer are left as they are: nothing
	// is concluded from silence (they show their host unreachable).
	var lost *desktop.UnreachableError
	if errors.As(err, &lost) {
		r.log.Warn("reconcile skips the desktops of hosts that do not answer", "hosts", lost.Hosts, "err", lost.Err)
	} else if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	for _, d := range desktops {
		if r.ops.isBusy(d.ID) || (lost != nil && slices.Contains(lost.Hosts, d.Host)) {
			continue
		}
		vm, ok := vms[d.DomainName()]
		if !ok {
			vm = desktop.VMMissing
		}
		r.reconcileOne(ctx, d.ID, vm)
	}
	return nil
}

// missingRecheck is how long reconcile waits before it believes a VM is
// gone (a variable for tests).
var missingRecheck = 3 * time.Second

// reconcileOne brings one desktop's record in line with its VM (listed as
// vm a moment ago).
func (r *reconciler) reconcileOne(ctx context.Context, id string, vm desktop.VMState) {
	if vm == desktop.VMMissing {
		// A libvirtd that has just restarted can answer before it has
		// loaded every domain (the soak saw one reported gone and back a
		// moment later): a missing VM is asked about again first.
		select {
		case <-ctx.Done():
			return
		case <-time.After(missingRecheck):
		}
		if st, err := r.vms.State(ctx, (&desktop.Desktop{ID: id}).DomainName()); err == nil {
			vm = st
		}
	}
	mu := r.ops.row(id)
	mu.Lock()
	if r.ops.isBusy(id) {
		mu.Unlock()
		return
	}
	d, err := r.store.GetDesktop(ctx, id)
	if err != nil || d.DeletedAt != nil {
		mu.Unlock()
		return
	}
	r.removeScratch(ctx, d)
	if d.Operation != "" {
		// No operation of this process holds the desktop: the one recorded
		// was cut short by a restart.
		mu.Unlock()
		r.interrupted(ctx, d, vm)
		return
	}
	if observedAs(vm) != d.State {
		// Read again under the lock: an operation may have moved the VM
		// since it was listed.
		if st, err := r.vms.State(ctx, d.DomainName()); err == nil {
			vm = st
		}
	}
	why := r.observe1(ctx, d, desktop.VMEvent{Domain: d.DomainName(), State: vm, Reason: "found by reconcile"})
	mu.Unlock()
	if why != "" {
		r.ops.event(ctx, d.ID, "reconciled", "bureau", "%s", why)
		r.afterObserve(ctx, d)
	}
}

// observedAs is the settled state a VM state means for a desktop.
func observedAs(vm desktop.VMState) desktop.State {
	switch vm {
	case desktop.VMRunning, desktop.VMShutdown:
		return desktop.StateRunning
	case desktop.VMPaused:
		return desktop.StatePaused
	case desktop.VMSaved:
		return desktop.StateHibernated
	case desktop.VMShutoff:
		return desktop.StateStopped
	case desktop.VMCrashed:
		return desktop.StateCrashed
	}
	return desktop.StateError
}

// IOErrorPause is a desktop's last error while QEMU holds it paused after
// a failed disk write. Nothing is lost: the write is retried on resume.
const IOErrorPause = "paused by a disk write error: the host's disk is probably full. Nothing is lost; free space on the host, then resume the desktop"

// observe1 records what the VM's state (as ev reports it) means for a
// desktop no operation holds, and says what changed ("" = nothing). The
// caller holds the row lock. A change made in the guest or behind bureau's
// back (the guest powered off) becomes the desired state too; a fault (a
// crash, a pause for a disk error) does not: the intent stays.
func (r *reconciler) observe1(ctx context.Context, d *desktop.Desktop, ev desktop.VMEvent) string {
	want, lastErr := observedAs(ev.State), ""
	fault := false
	switch ev.State {
	case desktop.VMPaused:
		if ev.IOError {
			lastErr, fault = IOErrorPause, true
		} else if d.State.Frozen() {
			// Paused by a caller, or napping or sleeping: as recorded.
			want, lastErr = d.State, d.LastError
		}
	case desktop.VMCrashed:
		lastErr, fault = "its QEMU process died ("+ev.Reason+")", true
	case desktop.VMMissing:
		lastErr, fault = "its VM disappeared from libvirt without bureau deleting it; files are kept in "+d.Dir, true
	}
	if d.State == want && (!fault || d.LastError == lastErr || want == desktop.StateCrashed || want == desktop.StateError) {
		return ""
	}
	if d.State == desktop.StateError && want == desktop.StateStopped {
		// A failed operation left the VM off: say so, and keep saying why
		// it failed.
		lastErr = d.LastError
	}
	d.State, d.LastError = want, lastErr
	if !fault {
		d.DesiredState = want
	}
	if err := r.ops.write(ctx, d); err != nil {
		r.log.Error("recording a VM change", "desktop", d.ID, "err", err)
		return ""
	}
	return fmt.Sprintf("VM is %s (%s)", ev.State, ev.Reason)
}

// afterObserve acts on a recorded change: a crashed desktop that asked for
// it is started again.
func (r *reconciler) afterObserve(ctx context.Context, d *desktop.Desktop) {
	if d.State == desktop.StateCrashed && d.RestartOnCrash {
		if _, err := r.life.Start(ctx, d.ID, "bureau (restart on crash)"); err != nil {
			r.log.Warn("restart after crash", "desktop", d.ID, "err", err)
		}
	}
}

// onEvent applies a lifecycle change no bureau operation is waiting for,
// such as the guest powering itself off or QEMU crashing. An event that
// comes while an operation holds the desktop is checked when it ends.
func (r *reconciler) onEvent(ctx context.Context, ev desktop.VMEvent) {
	id, ok := desktop.IDOfDomain(ev.Domain)
	if !ok || ev.State == desktop.VMMissing {
		return
	}
	mu := r.ops.row(id)
	mu.Lock()
	if r.ops.deferEvent(id, ev) {
		mu.Unlock()
		return
	}
	d, err := r.store.GetDesktop(ctx, id)
	if errors.Is(err, desktop.ErrNotFound) || err == nil && d.DeletedAt != nil {
		mu.Unlock()
		return
	}
	if err != nil {
		mu.Unlock()
		r.log.Error("event for unknown desktop", "domain", ev.Domain, "err", err)
		return
	}
	// Events arrive late: the VM's state now is the truth, the event its
	// reason when they agree.
	if st, err := r.vms.State(ctx, ev.Domain); err == nil && !agrees(ev.State, st) {
		ev = desktop.VMEvent{Domain: ev.Domain, State: st, Reason: "now " + string(st) + "; the " + string(ev.State) + " event came late"}
	}
	why := r.observe1(ctx, d, ev)
	mu.Unlock()
	if why != "" {
		r.ops.event(ctx, d.ID, "vm_"+string(ev.State), "libvirt", "%s", why)
		r.afterObserve(ctx, d)
	}
}

// agrees says whether an event's state matches the VM's state now.
func agrees(ev, now desktop.VMState) bool {
	return ev == now || ev == desktop.VMCrashed && now == desktop.VMShutoff || ev == desktop.VMRunning && now == desktop.VMShutdown
}

// removeScratch removes files an operation cut short leaves behind. Only
// operations on bureau's own host leave any (a reimage there, a warm
// create): they are looked for there, never on a remote host.
func (r *reconciler) removeScratch(ctx context.Context, d *desktop.Desktop) {
	// A reimage cut short leaves its unfinished OS disk; the desktop
	// still has its old one.
	half := filepath.Join(d.Dir, "os.qcow2.new")
	if ok, _ := r.local.Exists(ctx, half); ok && r.local.Remove(ctx, half) == nil {
		r.ops.event(ctx, d.ID, "reconciled", "bureau", "removed the unfinished OS disk of an interrupted reimage")
	}
	// A warm create cut short leaves the copy of the template's RAM.
	r.local.Remove(ctx, filepath.Join(d.Dir, "restore.save"))
}
