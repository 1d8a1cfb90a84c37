package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Snapshots takes, lists, reverts and deletes desktops' snapshots (the
// API's Snapshots). It holds the operation core and what snapshots need
// beside it, each by the role it plays here.
type Snapshots struct {
	ops   *runner
	store snapshotRecords
	vms   snapshotVMs
	quota snapshotQuota
	hosts diskHosts
	power powerSwitch
	moves addressRenewal
	log   *slog.Logger
	// stopTimeout is how long a guest may take to shut down before a
	// disk-only revert forces it off (Config.StopTimeout).
	stopTimeout time.Duration
}

// snapshotRecords keeps the list of desktops' snapshots (a new one is
// recorded through snapshotQuota).
type snapshotRecords interface {
	GetSnapshot(ctx context.Context, desktopID, name string) (*desktop.Snapshot, error)
	ListSnapshots(ctx context.Context, desktopID string) ([]*desktop.Snapshot, error)
	MarkSnapshotReverted(ctx context.Context, sn *desktop.Snapshot) error
	SetSnapshotSize(ctx context.Context, id string, size int64) error
	DeleteSnapshot(ctx context.Context, id string) error
}

// snapshotVMs takes, reverts and removes VMs' snapshots, and starts a VM
// again after a disk-only revert.
type snapshotVMs interface {
	VMSnapshots
	State(ctx context.Context, name string) (desktop.VMState, error)
	Start(ctx context.Context, name string) error
}

// snapshotQuota records a snapshot about to be taken if its owner's quota
// and the host have room for it (quotas.recordSnapshot, quota.go).
type snapshotQuota interface {
	recordSnapshot(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot, unlimited bool) error
}

// diskHosts reaches a desktop's files on whichever host they are: what
// works on them while its VM is off, and what measures them
// (desktopHosts.stoppedDisks, desktopHosts.filesOf).
type diskHosts interface {
	stoppedDisks(ctx context.Context, d *desktop.Desktop) (StoppedDisks, error)
	filesOf(ctx context.Context, d *desktop.Desktop) (desktopFiles, error)
}

// powerSwitch brings a VM to shut-off (lifecycle.powerOff, lifecycle.go).
type powerSwitch interface {
	powerOff(ctx context.Context, name string, opts StopOptions) (string, error)
}

// addressRenewal gives a guest whose RAM came from another host the
// address of the host it is on now (migrate.go, coldmove.go).
type addressRenewal interface {
	movedSince(ctx context.Context, id string, t time.Time) bool
	renewAddress(ctx context.Context, d *desktop.Desktop)
}

// Snapshots takes, lists, reverts and deletes desktops' snapshots (the
// API's Snapshots).
func (m *Manager) Snapshots() *Snapshots { return m.snaps }

// snapshotFiles are the disk files a scope covers.
func snapshotFiles(d *desktop.Desktop, scope string) []string {
	osDisk := filepath.Join(d.Dir, "os.qcow2")
	switch scope {
	case desktop.ScopeData:
		return []string{d.DataDiskPath}
	case desktop.ScopeOS:
		return []string{osDisk}
	}
	return []string{osDisk, d.DataDiskPath}
}

// CreateSnapshot takes a named snapshot of a desktop: with RAM of a
// running one (libvirt internal snapshot), disk-only of a running one
// (QMP, quiesced by the guest agent when it answers), or of a stopped
// one's files (qemu-img, run on the desktop's host).
// Nothing is recorded unless every disk was snapshotted.
func (s *Snapshots) CreateSnapshot(ctx context.Context, id string, req SnapshotRequest) (*desktop.Snapshot, error) {
	if req.Scope == "" {
		req.Scope = desktop.ScopeAll
	}
	if err := desktop.ValidateSnapshot(req.Name, req.Scope, req.Memory != nil && *req.Memory); err != nil {
		return nil, err
	}
	if err := s.ops.lockWithin(ctx, id, "snapshot", req.Wait); err != nil {
		return nil, err
	}
	defer s.ops.unlock(id)
	// A client that goes away mid-snapshot must not leave a snapshot in the
	// disks that the list does not show: the snapshot finishes either way.
	ctx, cancel := s.ops.detach(ctx)
	defer cancel()
	d, err := s.ops.live(ctx, id)
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
	if _, err := s.store.GetSnapshot(ctx, id, req.Name); err == nil {
		return nil, fmt.Errorf("snapshot %q of desktop %s: %w", req.Name, id, desktop.ErrNameTaken)
	} else if !errors.Is(err, desktop.ErrNotFound) {
		return nil, err
	}
	existing, err := s.store.ListSnapshots(ctx, id)
	if err != nil {
		return nil, err
	}

	// The snapshot is recorded before it is taken: a bureau killed half-way
	// leaves a listed snapshot (deletable even if it never got made), never
	// an invisible one inside the disk files. Recording it checks the quota.
	sn := &desktop.Snapshot{ID: newID(), DesktopID: id, Name: req.Name, Description: req.Description,
		Scope: req.Scope, Memory: memory, Parent: latest(existing), CreatedAt: time.Now().UTC()}
	if err := s.quota.recordSnapshot(ctx, d, sn, req.Unlimited); err != nil {
		return nil, err
	}
	files := snapshotFiles(d, req.Scope)
	before, measured := s.allocated(ctx, d, files)
	begun := time.Now()
	how := "disk-only, desktop stopped"
	switch {
	case memory:
		err = s.vms.SnapshotWithMemory(ctx, d.DomainName(), req.Name, req.Description)
		how = "with memory"
	case running:
		var quiesced bool
		quiesced, err = s.vms.LiveDiskSnapshot(ctx, d.DomainName(), req.Name, files)
		how = "disk-only, live, filesystems frozen by the guest agent"
		if !quiesced {
			how = "disk-only, live, crash-consistent (guest agent did not freeze filesystems)"
		}
	default:
		err = s.takeOffline(ctx, d, files, req.Name)
	}
	s.ops.observe("snapshot", begun, err)
	if err != nil {
		s.undo(ctx, d, sn)
		return nil, fmt.Errorf("snapshot %q: %w", req.Name, diskFull(err))
	}
	s.ops.failpoint("snapshot:after-create")
	if after, ok := s.allocated(ctx, d, files); ok && measured {
		sn.SizeBytes = max(0, after-before)
		if err := s.store.SetSnapshotSize(ctx, sn.ID, sn.SizeBytes); err != nil {
			s.log.Warn("recording snapshot size", "desktop", id, "snapshot", sn.Name, "err", err)
		}
	}
	s.ops.event(ctx, id, "snapshot_created", req.Actor, "snapshot %q (%s, scope %s) in %s", sn.Name, how, sn.Scope,
		time.Since(begun).Round(time.Millisecond))
	return sn, nil
}

// undoWithin bounds how long a failed snapshot's undo retries.
const undoWithin = 30 * time.Second

// undo removes what a failed snapshot may have left in the disks
// and then its record. A call cut off by a libvirtd restart can have been
// carried out all the same, so the removal is retried while libvirt comes
// back. If the disks cannot be reached in time the record stays: the
// snapshot is listed and can be deleted, never hidden in the disk files.
func (s *Snapshots) undo(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot) {
	giveUp := time.Now().Add(undoWithin)
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 4*time.Second) {
		err := s.drop(ctx, d, sn)
		if err == nil {
			break
		}
		if time.Now().Add(wait).After(giveUp) || ctx.Err() != nil {
			s.log.Error("a failed snapshot could not be removed from the disks; it stays listed", "desktop", d.ID, "snapshot", sn.Name, "err", err)
			return
		}
		sleep(ctx, wait)
	}
	if err := s.store.DeleteSnapshot(ctx, sn.ID); err != nil {
		s.log.Error("forgetting a failed snapshot", "desktop", d.ID, "snapshot", sn.Name, "err", err)
	}
}

// takeOffline snapshots each of a stopped desktop's files,
// undoing the ones done if one fails.
func (s *Snapshots) takeOffline(ctx context.Context, d *desktop.Desktop, files []string, name string) error {
	disks, err := s.hosts.stoppedDisks(ctx, d)
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
func (s *Snapshots) ListSnapshots(ctx context.Context, id string) ([]*desktop.Snapshot, error) {
	if _, err := s.ops.live(ctx, id); err != nil {
		return nil, err
	}
	return s.store.ListSnapshots(ctx, id)
}

// RevertSnapshot returns a desktop to a snapshot in the background. A
// memory snapshot comes back running with its programs; a disk-only one
// needs the VM off, so a running desktop is shut down, reverted and
// started again.
func (s *Snapshots) RevertSnapshot(ctx context.Context, id, name, actor string) (*desktop.Desktop, error) {
	ctx, cancel := s.ops.detach(ctx)
	defer cancel()
	if err := s.ops.lock(id, "revert"); err != nil {
		return nil, err
	}
	if _, err := s.ops.live(ctx, id); err != nil {
		s.ops.unlock(id)
		return nil, err
	}
	sn, err := s.store.GetSnapshot(ctx, id, name)
	if err != nil {
		s.ops.unlock(id)
		return nil, err
	}
	wasRunning := false
	d, err := s.ops.beginRow(ctx, id, desktop.OpRevert, func(d *desktop.Desktop) desktop.State {
		// It comes back running with a memory snapshot, or as it was.
		wasRunning = d.State != desktop.StateStopped
		if sn.Memory || wasRunning {
			return desktop.StateRunning
		}
		return d.DesiredState
	})
	if err != nil {
		s.ops.unlock(id)
		return nil, err
	}
	s.ops.event(ctx, id, "revert_requested", actor, "revert to snapshot %q requested", name)
	cp := *d
	s.ops.background(id, func(ctx context.Context) { s.revertTo(ctx, &cp, sn, wasRunning, actor) })
	return d, nil
}

// revertTo does the revert; the caller holds d.
func (s *Snapshots) revertTo(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot, wasRunning bool, actor string) {
	begun := time.Now()
	name := d.DomainName()
	vm := desktop.StateStopped // what the revert leaves its VM
	if sn.Memory {
		if err := s.vms.RevertSnapshot(ctx, name, sn.Name); err != nil {
			s.ops.fail(ctx, d, "revert", err)
			return
		}
		if s.moves.movedSince(ctx, d.ID, sn.CreatedAt) {
			// Its RAM holds the address it had on the host it was on then.
			s.moves.renewAddress(ctx, d)
		}
		vm = desktop.StateRunning
	} else {
		if _, err := s.power.powerOff(ctx, name, StopOptions{Timeout: s.stopTimeout}); err != nil {
			s.ops.fail(ctx, d, "revert", err)
			return
		}
		disks, err := s.hosts.stoppedDisks(ctx, d)
		if err != nil {
			s.ops.fail(ctx, d, "revert", err)
			return
		}
		for _, f := range snapshotFiles(d, sn.Scope) {
			if err := disks.RevertSnapshot(ctx, f, sn.Name); err != nil {
				s.ops.fail(ctx, d, "revert", err)
				return
			}
		}
		if wasRunning {
			if err := s.vms.Start(ctx, name); err != nil {
				s.ops.fail(ctx, d, "revert", err)
				return
			}
			vm = desktop.StateRunning
		}
	}
	s.ops.observe("revert", begun, nil)
	now := time.Now().UTC()
	sn.RevertedAt = &now
	if err := s.store.MarkSnapshotReverted(ctx, sn); err != nil {
		s.log.Error("recording revert", "desktop", d.ID, "err", err)
	}
	s.ops.end(ctx, d, desktop.OpRevert, true, vm, "")
	s.ops.event(ctx, d.ID, "reverted", actor, "reverted to snapshot %q in %s", sn.Name, time.Since(begun).Round(time.Millisecond))
}

// DeleteSnapshot removes a snapshot from the disks and the list.
func (s *Snapshots) DeleteSnapshot(ctx context.Context, id, name, actor string) error {
	ctx, cancel := s.ops.detach(ctx)
	defer cancel()
	if err := s.ops.lock(id, "delete snapshot"); err != nil {
		return err
	}
	defer s.ops.unlock(id)
	d, err := s.ops.live(ctx, id)
	if err != nil {
		return err
	}
	sn, err := s.store.GetSnapshot(ctx, id, name)
	if err != nil {
		return err
	}
	if err := s.drop(ctx, d, sn); err != nil {
		return fmt.Errorf("delete snapshot %q: %w", name, err)
	}
	if err := s.store.DeleteSnapshot(ctx, sn.ID); err != nil {
		return err
	}
	s.ops.event(ctx, id, "snapshot_deleted", actor, "snapshot %q deleted", name)
	return nil
}

// drop removes a snapshot's data from the disks, by the route that
// fits how it was taken and whether the VM has its disks open.
func (s *Snapshots) drop(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot) error {
	if sn.Memory {
		return s.vms.DeleteSnapshot(ctx, d.DomainName(), sn.Name)
	}
	files := snapshotFiles(d, sn.Scope)
	st, err := s.vms.State(ctx, d.DomainName())
	if err != nil {
		return err
	}
	if st == desktop.VMRunning || st == desktop.VMPaused {
		return ignoreMissingSnapshot(s.vms.DeleteLiveDiskSnapshot(ctx, d.DomainName(), sn.Name, files))
	}
	disks, err := s.hosts.stoppedDisks(ctx, d)
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
func (s *Snapshots) allocated(ctx context.Context, d *desktop.Desktop, files []string) (int64, bool) {
	n, err := s.allocatedOn(ctx, d, files)
	if err != nil {
		s.log.Warn("measuring a desktop's files", "desktop", d.ID, "host", d.Host, "err", err)
		return 0, false
	}
	return n, true
}

// allocatedOn sums the bytes d's files take on its host.
func (s *Snapshots) allocatedOn(ctx context.Context, d *desktop.Desktop, files []string) (int64, error) {
	there, err := s.hosts.filesOf(ctx, d)
	if err != nil {
		return 0, err
	}
	if there.Sizes == nil {
		return 0, errors.New("its files are not measured there")
	}
	var n int64
	for _, f := range files {
		size, err := there.Sizes.Allocated(ctx, f)
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
