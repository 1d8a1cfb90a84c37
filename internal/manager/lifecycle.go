package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// lifecycle starts, stops, reboots and deletes desktops (lifecycle.go),
// and pauses, resumes, hibernates and wakes them (power.go). It holds the
// operation core and what those need beside it, each by the role it plays
// here.
type lifecycle struct {
	ops   *runner
	store lifeStore
	vms   lifeVMs
	room  wakeRoom
	hosts fileHosts
	net   addressDropper
	moves addressRenewal
	idle  idleUse
	defs  vmConfigs
	log   *slog.Logger
	// From Config: how long a guest may take to shut down before it is
	// forced off (StopTimeout), and whether a running desktop hibernates
	// without dropping its page cache first (SaveAsIs).
	stopTimeout time.Duration
	saveAsIs    bool
}

// lifeStore reads a desktop as Wake waits for it, and forgets a deleted
// desktop's snapshots.
type lifeStore interface {
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	DeleteSnapshots(ctx context.Context, desktopID string) error
}

// lifeVMs defines, powers and removes desktops' VMs.
type lifeVMs interface {
	State(ctx context.Context, name string) (desktop.VMState, error)
	Define(ctx context.Context, c desktop.VMConfig) error
	Undefine(ctx context.Context, name string) error
	Start(ctx context.Context, name string) error
	Shutdown(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
	Reboot(ctx context.Context, name string) error
	Suspend(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Hibernate(ctx context.Context, name string) error
	DiscardHibernation(ctx context.Context, name string) error
	SyncGuestClock(ctx context.Context, name string) error
}

// wakeRoom refuses to wake a desktop where its host has no memory for it,
// or to hibernate one whose RAM would not fit on its disk (quotas,
// quota.go).
type wakeRoom interface {
	roomOn(ctx context.Context, d *desktop.Desktop, memMiB int) error
	roomToSaveOn(d *desktop.Desktop) error
}

// fileHosts reaches a desktop's files on whichever host they are
// (desktopHosts.filesOf).
type fileHosts interface {
	filesOf(ctx context.Context, d *desktop.Desktop) (desktopFiles, error)
}

// addressDropper forgets a deleted desktop's address and rules
// (identities.dropAddressAndRules, network.go).
type addressDropper interface {
	dropAddressAndRules(ctx context.Context, d *desktop.Desktop)
}

// idleUse restarts a resumed desktop's quiet period, and drops a guest's
// page cache before it hibernates (idler).
type idleUse interface {
	touch(id string)
	trimGuest(ctx context.Context, d *desktop.Desktop)
}

// Start boots a stopped desktop in the background (lifecycle.Start).
func (m *Manager) Start(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	return m.life.Start(ctx, id, actor)
}

// Stop shuts a desktop down in the background (lifecycle.Stop).
func (m *Manager) Stop(ctx context.Context, id, actor string, opts StopOptions) (*desktop.Desktop, error) {
	return m.life.Stop(ctx, id, actor, opts)
}

// Reboot restarts a running desktop's guest (lifecycle.Reboot).
func (m *Manager) Reboot(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	return m.life.Reboot(ctx, id, actor)
}

// Delete removes a desktop, its data disk only when deleteData is set
// (lifecycle.Delete).
func (m *Manager) Delete(ctx context.Context, id, actor string, deleteData bool) (*DeleteResult, error) {
	return m.life.Delete(ctx, id, actor, deleteData)
}

// Start boots a stopped desktop in the background.
func (l *lifecycle) Start(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	if cur, err := l.ops.live(ctx, id); err == nil && cur.State != desktop.StateRunning {
		if err := l.room.roomOn(ctx, cur, cur.MemoryMiB); err != nil {
			return nil, err
		}
	}
	d, err := l.ops.begin(ctx, id, desktop.OpStart, desktop.StateRunning, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	l.ops.background(id, func(ctx context.Context) { l.start(ctx, &cp) })
	return d, nil
}

func (l *lifecycle) start(ctx context.Context, d *desktop.Desktop) {
	begun := time.Now()
	op := d.Operation // start, or resume of a hibernated desktop
	if op == "" {
		op = "start"
	}
	// A desktop in error may still have a running VM: starting it is a no-op.
	st, err := l.vms.State(ctx, d.DomainName())
	if err == nil && st == desktop.VMMissing {
		err = errors.New("its VM definition is missing (recreate the desktop; its data disk is kept)")
	}
	if err == nil && st == desktop.VMSaved {
		l.restore(ctx, d, op)
		return
	}
	if err == nil && st == desktop.VMPaused {
		err = l.vms.Resume(ctx, d.DomainName())
	} else if err == nil && st != desktop.VMRunning {
		// A cold boot takes the current definition: a desktop made before
		// bureau isolated desktops gets its own network and user here.
		l.ops.step(ctx, d, "define")
		if err = l.vms.Define(ctx, l.defs.VMConfig(d, "")); err == nil {
			l.ops.step(ctx, d, "start")
			err = l.vms.Start(ctx, d.DomainName())
		}
	}
	l.ops.observe("start", begun, err)
	if err != nil {
		l.ops.fail(ctx, d, op, err)
		return
	}
	l.ops.end(ctx, d, desktop.Op(op), true, "", "")
	l.ops.event(ctx, d.ID, "started", "bureau", "started in %s", time.Since(begun).Round(time.Millisecond))
}

// StopOptions tune Stop.
type StopOptions struct {
	Force   bool          // power off at once instead of an ACPI shutdown
	Timeout time.Duration // how long the guest may take before it is forced
}

// Stop shuts a desktop down in the background: ACPI first, forced after the
// timeout (or at once with Force).
func (l *lifecycle) Stop(ctx context.Context, id, actor string, opts StopOptions) (*desktop.Desktop, error) {
	op := desktop.OpStop
	if opts.Force {
		// Forced, a stop may begin from any state and cuts short whatever
		// operation holds the desktop.
		op = desktop.OpForceStop
	}
	d, err := l.ops.begin(ctx, id, op, desktop.StateStopped, actor)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = l.stopTimeout
	}
	cp := *d
	l.ops.background(id, func(ctx context.Context) { l.stop(ctx, &cp, opts) })
	return d, nil
}

func (l *lifecycle) stop(ctx context.Context, d *desktop.Desktop, opts StopOptions) {
	begun := time.Now()
	how, err := l.powerOff(ctx, d.DomainName(), opts)
	l.ops.observe("stop", begun, err)
	if err != nil {
		l.ops.fail(ctx, d, "stop", err)
		return
	}
	l.ops.end(ctx, d, desktop.OpOf(d.Operation), true, "", "")
	l.ops.event(ctx, d.ID, "stopped", "bureau", "stopped (%s) in %s", how, time.Since(begun).Round(time.Millisecond))
}

// powerOff brings a VM to shut-off and says how.
func (l *lifecycle) powerOff(ctx context.Context, name string, opts StopOptions) (string, error) {
	st, err := l.vms.State(ctx, name)
	if err != nil {
		return "", err
	}
	switch st {
	case desktop.VMShutoff, desktop.VMMissing:
		return "already off", nil
	case desktop.VMSaved:
		// Stopping a hibernated desktop is asked for explicitly: its saved
		// RAM goes, its disks stay.
		if err := l.vms.DiscardHibernation(ctx, name); err != nil {
			return "", err
		}
		return "saved RAM of the hibernated desktop discarded", nil
	case desktop.VMPaused:
		// A frozen guest cannot answer ACPI.
		if err := l.vms.Destroy(ctx, name); err != nil {
			return "", err
		}
		return "powered off while paused", nil
	}
	if !opts.Force && st == desktop.VMRunning {
		if err := l.vms.Shutdown(ctx, name); err != nil {
			l.log.Warn("ACPI shutdown refused; forcing", "domain", name, "err", err)
		} else if l.waitFor(ctx, name, desktop.VMShutoff, opts.Timeout) {
			return "guest shut down", nil
		}
	}
	if err := l.vms.Destroy(ctx, name); err != nil {
		return "", err
	}
	if opts.Force {
		return "forced", nil
	}
	return fmt.Sprintf("forced after %s without ACPI shutdown", opts.Timeout), nil
}

// waitFor polls the VM's state until it is want or timeout passes.
func (l *lifecycle) waitFor(ctx context.Context, name string, want desktop.VMState, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, err := l.vms.State(ctx, name); err == nil && (st == want || want == desktop.VMShutoff && st == desktop.VMMissing) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
	return false
}

// Reboot restarts a running desktop's guest.
func (l *lifecycle) Reboot(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	d, err := l.ops.begin(ctx, id, desktop.OpReboot, desktop.StateRunning, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	l.ops.background(id, func(ctx context.Context) {
		if err := l.vms.Reboot(ctx, cp.DomainName()); err != nil {
			l.ops.fail(ctx, &cp, "reboot", err)
			return
		}
		l.ops.end(ctx, &cp, desktop.OpReboot, true, "", "")
		l.ops.event(ctx, cp.ID, "rebooted", "bureau", "reboot sent to the guest")
	})
	return d, nil
}

// DeleteResult says what a delete did with the data disk.
type DeleteResult struct {
	Desktop      *desktop.Desktop
	DataDeleted  bool
	DataDiskKept string
}

// Delete removes a desktop's VM, OS disk and seed. Its data disk is kept
// unless deleteData is set, and the result says where it was kept. It runs
// to the end even if the caller goes away.
func (l *lifecycle) Delete(ctx context.Context, id, actor string, deleteData bool) (*DeleteResult, error) {
	d, err := l.ops.begin(ctx, id, desktop.OpDelete, desktop.StateDeleted, actor)
	if err != nil {
		return nil, err
	}
	if deleteData {
		d.Operation = "delete+data"
		l.ops.save(ctx, d)
	}
	defer l.ops.unlock(id)
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return l.finishDelete(opCtx, d, deleteData)
}

func (l *lifecycle) finishDelete(ctx context.Context, d *desktop.Desktop, deleteData bool) (*DeleteResult, error) {
	name := d.DomainName()
	l.ops.step(ctx, d, "destroy")
	if err := l.vms.Destroy(ctx, name); err != nil && !isMissing(ctx, l.vms, name) {
		l.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	l.ops.failpoint("delete:after-destroy")
	l.ops.step(ctx, d, "undefine")
	if err := l.vms.Undefine(ctx, name); err != nil {
		l.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	l.ops.failpoint("delete:after-undefine")
	l.ops.step(ctx, d, "files")
	res := &DeleteResult{Desktop: d, DataDeleted: deleteData}
	files, err := l.hosts.filesOf(ctx, d)
	if err != nil {
		l.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	keep := ""
	if !deleteData {
		keep = d.DataDiskPath
	}
	// Everything bureau wrote in the folder goes (disks, seed, logs,
	// sockets, save images, scratch files of a cut-short operation) but
	// a kept data disk.
	kept, err := files.Files.RemoveAllBut(ctx, d.Dir, keep)
	if err != nil {
		l.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	if kept {
		res.DataDiskKept = d.DataDiskPath
	} else {
		d.DataDiskPath = ""
	}
	return l.deleted(ctx, d, res)
}

// deleted records a delete whose VM and files are gone.
func (l *lifecycle) deleted(ctx context.Context, d *desktop.Desktop, res *DeleteResult) (*DeleteResult, error) {
	if err := l.store.DeleteSnapshots(ctx, d.ID); err != nil {
		l.log.Error("forgetting snapshots of a deleted desktop", "desktop", d.ID, "err", err)
	}
	l.net.dropAddressAndRules(ctx, d)
	now := time.Now().UTC()
	d.DeletedAt = &now
	if err := l.ops.end(ctx, d, desktop.OpDelete, true, "", d.LastError); err != nil {
		return nil, err
	}
	if res.DataDiskKept != "" && d.Remote() {
		l.ops.event(ctx, d.ID, "deleted", "bureau", "deleted; data disk kept at %s on host %s", res.DataDiskKept, d.Host)
	} else if res.DataDiskKept != "" {
		l.ops.event(ctx, d.ID, "deleted", "bureau", "deleted; data disk kept at %s", res.DataDiskKept)
	} else {
		l.ops.event(ctx, d.ID, "deleted", "bureau", "deleted with its data disk")
	}
	return res, nil
}

func isMissing(ctx context.Context, vms lifeVMs, name string) bool {
	st, err := vms.State(ctx, name)
	return err == nil && st == desktop.VMMissing
}
