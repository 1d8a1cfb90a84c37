package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Start boots a stopped desktop in the background.
func (m *Manager) Start(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	if cur, err := m.ops.live(ctx, id); err == nil && cur.State != desktop.StateRunning {
		if err := m.roomOn(ctx, cur, cur.MemoryMiB); err != nil {
			return nil, err
		}
	}
	d, err := m.ops.begin(ctx, id, desktop.OpStart, desktop.StateRunning, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	m.ops.background(id, func(ctx context.Context) { m.start(ctx, &cp) })
	return d, nil
}

func (m *Manager) start(ctx context.Context, d *desktop.Desktop) {
	begun := time.Now()
	op := d.Operation // start, or resume of a hibernated desktop
	if op == "" {
		op = "start"
	}
	// A desktop in error may still have a running VM: starting it is a no-op.
	st, err := m.hv.State(ctx, d.DomainName())
	if err == nil && st == desktop.VMMissing {
		err = errors.New("its VM definition is missing (recreate the desktop; its data disk is kept)")
	}
	if err == nil && st == desktop.VMSaved {
		m.restore(ctx, d, op)
		return
	}
	if err == nil && st == desktop.VMPaused {
		err = m.hv.Resume(ctx, d.DomainName())
	} else if err == nil && st != desktop.VMRunning {
		// A cold boot takes the current definition: a desktop made before
		// bureau isolated desktops gets its own network and user here.
		m.ops.step(ctx, d, "define")
		if err = m.hv.Define(ctx, m.VMConfig(d, "")); err == nil {
			m.ops.step(ctx, d, "start")
			err = m.hv.Start(ctx, d.DomainName())
		}
	}
	m.ops.observe("start", begun, err)
	if err != nil {
		m.ops.fail(ctx, d, op, err)
		return
	}
	m.ops.end(ctx, d, desktop.Op(op), true, "", "")
	m.ops.event(ctx, d.ID, "started", "bureau", "started in %s", time.Since(begun).Round(time.Millisecond))
}

// StopOptions tune Stop.
type StopOptions struct {
	Force   bool          // power off at once instead of an ACPI shutdown
	Timeout time.Duration // how long the guest may take before it is forced
}

// Stop shuts a desktop down in the background: ACPI first, forced after the
// timeout (or at once with Force).
func (m *Manager) Stop(ctx context.Context, id, actor string, opts StopOptions) (*desktop.Desktop, error) {
	op := desktop.OpStop
	if opts.Force {
		// Forced, a stop may begin from any state and cuts short whatever
		// operation holds the desktop.
		op = desktop.OpForceStop
	}
	d, err := m.ops.begin(ctx, id, op, desktop.StateStopped, actor)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = m.cfg.StopTimeout
	}
	cp := *d
	m.ops.background(id, func(ctx context.Context) { m.stop(ctx, &cp, opts) })
	return d, nil
}

func (m *Manager) stop(ctx context.Context, d *desktop.Desktop, opts StopOptions) {
	begun := time.Now()
	how, err := m.powerOff(ctx, d.DomainName(), opts)
	m.ops.observe("stop", begun, err)
	if err != nil {
		m.ops.fail(ctx, d, "stop", err)
		return
	}
	m.ops.end(ctx, d, desktop.OpOf(d.Operation), true, "", "")
	m.ops.event(ctx, d.ID, "stopped", "bureau", "stopped (%s) in %s", how, time.Since(begun).Round(time.Millisecond))
}

// powerOff brings a VM to shut-off and says how.
func (m *Manager) powerOff(ctx context.Context, name string, opts StopOptions) (string, error) {
	st, err := m.hv.State(ctx, name)
	if err != nil {
		return "", err
	}
	switch st {
	case desktop.VMShutoff, desktop.VMMissing:
		return "already off", nil
	case desktop.VMSaved:
		// Stopping a hibernated desktop is asked for explicitly: its saved
		// RAM goes, its disks stay.
		if err := m.hv.DiscardHibernation(ctx, name); err != nil {
			return "", err
		}
		return "saved RAM of the hibernated desktop discarded", nil
	case desktop.VMPaused:
		// A frozen guest cannot answer ACPI.
		if err := m.hv.Destroy(ctx, name); err != nil {
			return "", err
		}
		return "powered off while paused", nil
	}
	if !opts.Force && st == desktop.VMRunning {
		if err := m.hv.Shutdown(ctx, name); err != nil {
			m.log.Warn("ACPI shutdown refused; forcing", "domain", name, "err", err)
		} else if m.waitFor(ctx, name, desktop.VMShutoff, opts.Timeout) {
			return "guest shut down", nil
		}
	}
	if err := m.hv.Destroy(ctx, name); err != nil {
		return "", err
	}
	if opts.Force {
		return "forced", nil
	}
	return fmt.Sprintf("forced after %s without ACPI shutdown", opts.Timeout), nil
}

// waitFor polls the VM's state until it is want or timeout passes.
func (m *Manager) waitFor(ctx context.Context, name string, want desktop.VMState, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, err := m.hv.State(ctx, name); err == nil && (st == want || want == desktop.VMShutoff && st == desktop.VMMissing) {
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
func (m *Manager) Reboot(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	d, err := m.ops.begin(ctx, id, desktop.OpReboot, desktop.StateRunning, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	m.ops.background(id, func(ctx context.Context) {
		if err := m.hv.Reboot(ctx, cp.DomainName()); err != nil {
			m.ops.fail(ctx, &cp, "reboot", err)
			return
		}
		m.ops.end(ctx, &cp, desktop.OpReboot, true, "", "")
		m.ops.event(ctx, cp.ID, "rebooted", "bureau", "reboot sent to the guest")
	})
	return d, nil
}

// DeleteResult says what a delete did with the data disk.
type DeleteResult struct {
	Desktop      *desktop.Desktop `json:"desktop"`
	DataDeleted  bool             `json:"data_deleted"`
	DataDiskKept string           `json:"data_disk_kept,omitempty"`
}

// Delete removes a desktop's VM, OS disk and seed. Its data disk is kept
// unless deleteData is set, and the result says where it was kept. It runs
// to the end even if the caller goes away.
func (m *Manager) Delete(ctx context.Context, id, actor string, deleteData bool) (*DeleteResult, error) {
	d, err := m.ops.begin(ctx, id, desktop.OpDelete, desktop.StateDeleted, actor)
	if err != nil {
		return nil, err
	}
	if deleteData {
		d.Operation = "delete+data"
		m.ops.save(ctx, d)
	}
	defer m.ops.unlock(id)
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return m.finishDelete(opCtx, d, deleteData)
}

func (m *Manager) finishDelete(ctx context.Context, d *desktop.Desktop, deleteData bool) (*DeleteResult, error) {
	name := d.DomainName()
	m.ops.step(ctx, d, "destroy")
	if err := m.hv.Destroy(ctx, name); err != nil && !isMissing(ctx, m.hv, name) {
		m.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	m.ops.failpoint("delete:after-destroy")
	m.ops.step(ctx, d, "undefine")
	if err := m.hv.Undefine(ctx, name); err != nil {
		m.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	m.ops.failpoint("delete:after-undefine")
	m.ops.step(ctx, d, "files")
	res := &DeleteResult{Desktop: d, DataDeleted: deleteData}
	files, err := m.filesOf(ctx, d)
	if err != nil {
		m.ops.fail(ctx, d, "delete", err)
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
		m.ops.fail(ctx, d, "delete", err)
		return nil, err
	}
	if kept {
		res.DataDiskKept = d.DataDiskPath
	} else {
		d.DataDiskPath = ""
	}
	return m.deleted(ctx, d, res)
}

// deleted records a delete whose VM and files are gone.
func (m *Manager) deleted(ctx context.Context, d *desktop.Desktop, res *DeleteResult) (*DeleteResult, error) {
	if err := m.store.DeleteSnapshots(ctx, d.ID); err != nil {
		m.log.Error("forgetting snapshots of a deleted desktop", "desktop", d.ID, "err", err)
	}
	m.dropAddressAndRules(ctx, d)
	now := time.Now().UTC()
	d.DeletedAt = &now
	if err := m.ops.end(ctx, d, desktop.OpDelete, true, "", d.LastError); err != nil {
		return nil, err
	}
	if res.DataDiskKept != "" && d.Remote() {
		m.ops.event(ctx, d.ID, "deleted", "bureau", "deleted; data disk kept at %s on host %s", res.DataDiskKept, d.Host)
	} else if res.DataDiskKept != "" {
		m.ops.event(ctx, d.ID, "deleted", "bureau", "deleted; data disk kept at %s", res.DataDiskKept)
	} else {
		m.ops.event(ctx, d.ID, "deleted", "bureau", "deleted with its data disk")
	}
	return res, nil
}

func isMissing(ctx context.Context, hv Hypervisor, name string) bool {
	st, err := hv.State(ctx, name)
	return err == nil && st == desktop.VMMissing
}
