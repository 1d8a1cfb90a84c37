package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// SnapshotRequest asks for a snapshot of a desktop.
type SnapshotRequest struct {
	Name        string
	Description string
	Scope       string // desktop.ScopeAll (default), ScopeData or ScopeOS
	// Memory includes the RAM, so running programs come back on revert. Nil
	// means: yes when the desktop runs and the scope is "all".
	Memory *bool
	Actor  string
	// Unlimited skips the owner's quota (admins).
	Unlimited bool
	// Wait is how long to wait for another operation on the desktop (a
	// snapshot, a revert…) to end; 0 answers ErrBusy at once.
	Wait time.Duration
}

// snapshotFiles are the disk files a scope covers.
func (m *Manager) snapshotFiles(d *desktop.Desktop, scope string) []string {
	osDisk := filepath.Join(d.Dir, "os.qcow2")
	switch scope {
	case desktop.ScopeData:
		return []string{d.DataDiskPath}
	case desktop.ScopeOS:
		return []string{osDisk}
	}
	return []string{osDisk, d.DataDiskPath}
}

// CreateSnapshot takes a named snapshot: with RAM of a running desktop
// (libvirt internal snapshot), disk-only of a running one (QMP, quiesced by
// the guest agent when it answers), or of a stopped one's files (qemu-img,
// run on the desktop's host).
// Nothing is recorded unless every disk was snapshotted.
func (m *Manager) CreateSnapshot(ctx context.Context, id string, req SnapshotRequest) (*desktop.Snapshot, error) {
	if req.Scope == "" {
		req.Scope = desktop.ScopeAll
	}
	if err := desktop.ValidateSnapshot(req.Name, req.Scope, req.Memory != nil && *req.Memory); err != nil {
		return nil, err
	}
	if err := m.lockWithin(ctx, id, "snapshot", req.Wait); err != nil {
		return nil, err
	}
	defer m.unlock(id)
	// A client that goes away mid-snapshot must not leave a snapshot in the
	// disks that the list does not show: the snapshot finishes either way.
	ctx, cancel := m.detach(ctx)
	defer cancel()
	d, err := m.live(ctx, id)
	if err != nil {
		return nil, err
	}
	running := d.State == desktop.StateRunning || d.State.Frozen()
	if !running && d.State != desktop.StateStopped {
		return nil, &desktop.TransitionError{Op: "snapshot", State: d.State}
	}
	memory := running && req.Scope == desktop.ScopeAll
	if req.Memory != nil {
		memory = *req.Memory
	}
	if memory && !running {
		return nil, &desktop.ValidationError{Field: "memory", Message: "the desktop is stopped: its snapshot can only hold its disks"}
	}
	if _, err := m.store.GetSnapshot(ctx, id, req.Name); err == nil {
		return nil, fmt.Errorf("snapshot %q of desktop %s: %w", req.Name, id, desktop.ErrNameTaken)
	} else if !errors.Is(err, desktop.ErrNotFound) {
		return nil, err
	}
	existing, err := m.store.ListSnapshots(ctx, id)
	if err != nil {
		return nil, err
	}

	// The snapshot is recorded before it is taken: a bureau killed half-way
	// leaves a listed snapshot (deletable even if it never got made), never
	// an invisible one inside the disk files. Recording it checks the quota.
	sn := &desktop.Snapshot{ID: newID(), DesktopID: id, Name: req.Name, Description: req.Description,
		Scope: req.Scope, Memory: memory, Parent: latest(existing), CreatedAt: time.Now().UTC()}
	if err := m.recordSnapshot(ctx, d, sn, req.Unlimited); err != nil {
		return nil, err
	}
	files := m.snapshotFiles(d, req.Scope)
	before, measured := m.allocated(ctx, d, files)
	begun := time.Now()
	how := "disk-only, desktop stopped"
	switch {
	case memory:
		err = m.hv.SnapshotWithMemory(ctx, d.DomainName(), req.Name, req.Description)
		how = "with memory"
	case running:
		var quiesced bool
		quiesced, err = m.hv.LiveDiskSnapshot(ctx, d.DomainName(), req.Name, files)
		how = "disk-only, live, filesystems frozen by the guest agent"
		if !quiesced {
			how = "disk-only, live, crash-consistent (guest agent did not freeze filesystems)"
		}
	default:
		err = m.snapshotFilesOffline(ctx, d, files, req.Name)
	}
	m.observe("snapshot", begun, err)
	if err != nil {
		m.undoSnapshot(ctx, d, sn)
		return nil, fmt.Errorf("snapshot %q: %w", req.Name, diskFull(err))
	}
	m.failpoint("snapshot:after-create")
	if after, ok := m.allocated(ctx, d, files); ok && measured {
		sn.SizeBytes = max(0, after-before)
		if err := m.store.SetSnapshotSize(ctx, sn.ID, sn.SizeBytes); err != nil {
			m.log.Warn("recording snapshot size", "desktop", id, "snapshot", sn.Name, "err", err)
		}
	}
	m.event(ctx, id, "snapshot_created", req.Actor, "snapshot %q (%s, scope %s) in %s", sn.Name, how, sn.Scope,
		time.Since(begun).Round(time.Millisecond))
	return sn, nil
}

// undoWithin bounds how long a failed snapshot's undo retries.
const undoWithin = 30 * time.Second

// undoSnapshot removes what a failed snapshot may have left in the disks
// and then its record. A call cut off by a libvirtd restart can have been
// carried out all the same, so the removal is retried while libvirt comes
// back. If the disks cannot be reached in time the record stays: the
// snapshot is listed and can be deleted, never hidden in the disk files.
func (m *Manager) undoSnapshot(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot) {
	giveUp := time.Now().Add(undoWithin)
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 4*time.Second) {
		err := m.dropSnapshot(ctx, d, sn)
		if err == nil {
			break
		}
		if time.Now().Add(wait).After(giveUp) || ctx.Err() != nil {
			m.log.Error("a failed snapshot could not be removed from the disks; it stays listed", "desktop", d.ID, "snapshot", sn.Name, "err", err)
			return
		}
		sleep(ctx, wait)
	}
	if err := m.store.DeleteSnapshot(ctx, sn.ID); err != nil {
		m.log.Error("forgetting a failed snapshot", "desktop", d.ID, "snapshot", sn.Name, "err", err)
	}
}

// snapshotFilesOffline snapshots each of a stopped desktop's files,
// undoing the ones done if one fails.
func (m *Manager) snapshotFilesOffline(ctx context.Context, d *desktop.Desktop, files []string, name string) error {
	disks, err := m.stoppedDisks(ctx, d)
	if err != nil {
		return err
	}
	for i, f := range files {
		if err := disks.Snapshot(ctx, f, name); err != nil {
			for _, done := range files[:i] {
				disks.DeleteSnapshot(context.WithoutCancel(ctx), done, name)
			}
			return err
		}
	}
	return nil
}

// ListSnapshots returns a desktop's snapshots, oldest first.
func (m *Manager) ListSnapshots(ctx context.Context, id string) ([]*desktop.Snapshot, error) {
	if _, err := m.live(ctx, id); err != nil {
		return nil, err
	}
	return m.store.ListSnapshots(ctx, id)
}

// RevertSnapshot returns a desktop to a snapshot in the background. A memory
// snapshot comes back running with its programs; a disk-only one needs the
// VM off, so a running desktop is shut down, reverted and started again.
func (m *Manager) RevertSnapshot(ctx context.Context, id, name, actor string) (*desktop.Desktop, error) {
	ctx, cancel := m.detach(ctx)
	defer cancel()
	if err := m.lock(id, "revert"); err != nil {
		return nil, err
	}
	if _, err := m.live(ctx, id); err != nil {
		m.unlock(id)
		return nil, err
	}
	sn, err := m.store.GetSnapshot(ctx, id, name)
	if err != nil {
		m.unlock(id)
		return nil, err
	}
	wasRunning := false
	d, err := m.beginRow(ctx, id, desktop.OpRevert, func(d *desktop.Desktop) desktop.State {
		// It comes back running with a memory snapshot, or as it was.
		wasRunning = d.State != desktop.StateStopped
		if sn.Memory || wasRunning {
			return desktop.StateRunning
		}
		return d.DesiredState
	})
	if err != nil {
		m.unlock(id)
		return nil, err
	}
	m.event(ctx, id, "revert_requested", actor, "revert to snapshot %q requested", name)
	cp := *d
	m.background(id, func(ctx context.Context) { m.revert(ctx, &cp, sn, wasRunning, actor) })
	return d, nil
}

func (m *Manager) revert(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot, wasRunning bool, actor string) {
	begun := time.Now()
	name := d.DomainName()
	vm := desktop.StateStopped // what the revert leaves its VM
	if sn.Memory {
		if err := m.hv.RevertSnapshot(ctx, name, sn.Name); err != nil {
			m.fail(ctx, d, "revert", err)
			return
		}
		if m.movedSince(ctx, d.ID, sn.CreatedAt) {
			// Its RAM holds the address it had on the host it was on then.
			m.renewAddress(ctx, d)
		}
		vm = desktop.StateRunning
	} else {
		if _, err := m.powerOff(ctx, name, StopOptions{Timeout: m.cfg.StopTimeout}); err != nil {
			m.fail(ctx, d, "revert", err)
			return
		}
		disks, err := m.stoppedDisks(ctx, d)
		if err != nil {
			m.fail(ctx, d, "revert", err)
			return
		}
		for _, f := range m.snapshotFiles(d, sn.Scope) {
			if err := disks.RevertSnapshot(ctx, f, sn.Name); err != nil {
				m.fail(ctx, d, "revert", err)
				return
			}
		}
		if wasRunning {
			if err := m.hv.Start(ctx, name); err != nil {
				m.fail(ctx, d, "revert", err)
				return
			}
			vm = desktop.StateRunning
		}
	}
	m.observe("revert", begun, nil)
	now := time.Now().UTC()
	sn.RevertedAt = &now
	if err := m.store.MarkSnapshotReverted(ctx, sn); err != nil {
		m.log.Error("recording revert", "desktop", d.ID, "err", err)
	}
	m.end(ctx, d, desktop.OpRevert, true, vm, "")
	m.event(ctx, d.ID, "reverted", actor, "reverted to snapshot %q in %s", sn.Name, time.Since(begun).Round(time.Millisecond))
}

// DeleteSnapshot removes a snapshot from the disks and the list.
func (m *Manager) DeleteSnapshot(ctx context.Context, id, name, actor string) error {
	ctx, cancel := m.detach(ctx)
	defer cancel()
	if err := m.lock(id, "delete snapshot"); err != nil {
		return err
	}
	defer m.unlock(id)
	d, err := m.live(ctx, id)
	if err != nil {
		return err
	}
	sn, err := m.store.GetSnapshot(ctx, id, name)
	if err != nil {
		return err
	}
	if err := m.dropSnapshot(ctx, d, sn); err != nil {
		return fmt.Errorf("delete snapshot %q: %w", name, err)
	}
	if err := m.store.DeleteSnapshot(ctx, sn.ID); err != nil {
		return err
	}
	m.event(ctx, id, "snapshot_deleted", actor, "snapshot %q deleted", name)
	return nil
}

// dropSnapshot removes a snapshot's data from the disks, by the route that
// fits how it was taken and whether the VM has its disks open.
func (m *Manager) dropSnapshot(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot) error {
	if sn.Memory {
		return m.hv.DeleteSnapshot(ctx, d.DomainName(), sn.Name)
	}
	files := m.snapshotFiles(d, sn.Scope)
	st, err := m.hv.State(ctx, d.DomainName())
	if err != nil {
		return err
	}
	if st == desktop.VMRunning || st == desktop.VMPaused {
		return ignoreMissingSnapshot(m.hv.DeleteLiveDiskSnapshot(ctx, d.DomainName(), sn.Name, files))
	}
	disks, err := m.stoppedDisks(ctx, d)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := ignoreMissingSnapshot(disks.DeleteSnapshot(ctx, f, sn.Name)); err != nil {
			return err
		}
	}
	return nil
}

// live loads a desktop that has not been deleted.
func (m *Manager) live(ctx context.Context, id string) (*desktop.Desktop, error) {
	d, err := m.store.GetDesktop(ctx, id)
	if err == nil && d.DeletedAt != nil {
		err = fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
	}
	return d, err
}

// latest is the snapshot the desktop last came from: the newest one created
// or reverted to.
func latest(snaps []*desktop.Snapshot) string {
	var name string
	var at time.Time
	for _, s := range snaps {
		t := s.CreatedAt
		if s.RevertedAt != nil && s.RevertedAt.After(t) {
			t = *s.RevertedAt
		}
		if !t.Before(at) {
			name, at = s.Name, t
		}
	}
	return name
}

// allocated sums the bytes d's files take on its host's disk; false when
// they could not be measured there (a snapshot then keeps the size it was
// counted for when it was recorded).
func (m *Manager) allocated(ctx context.Context, d *desktop.Desktop, files []string) (int64, bool) {
	if !d.Remote() {
		var n int64
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				n += blocks(fi)
			}
		}
		return n, true
	}
	n, err := m.allocatedThere(ctx, d, files)
	if err != nil {
		m.log.Warn("measuring a remote desktop's files", "desktop", d.ID, "host", d.Host, "err", err)
		return 0, false
	}
	return n, true
}

// allocatedThere sums the bytes d's files take on its remote host.
func (m *Manager) allocatedThere(ctx context.Context, d *desktop.Desktop, files []string) (int64, error) {
	s, err := m.site(ctx, d)
	if err != nil {
		return 0, err
	}
	if s.Sizes == nil {
		return 0, errors.New("its files are not measured there")
	}
	var n int64
	for _, f := range files {
		size, err := s.Sizes.Allocated(ctx, f)
		if err != nil {
			return 0, err
		}
		n += size
	}
	return n, nil
}

// ignoreMissingSnapshot treats "no such snapshot" as deleted: a snapshot a
// killed bureau recorded but never made, or one already half removed.
func ignoreMissingSnapshot(err error) error {
	if errors.Is(err, desktop.ErrNoSnapshot) {
		return nil
	}
	return err
}
