package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/desktop"
)

// RestoreOntoRequest asks for a backup written over a stopped desktop's
// data disk.
type RestoreOntoRequest struct {
	// Desktop is the desktop's id.
	Desktop string
	// ReplaceDataDisk must be set: the caller says it wants the desktop's
	// /home replaced.
	ReplaceDataDisk bool
	Actor           string
	// Unlimited skips the owner's quota for the snapshot kept of the disk
	// as it was (admins).
	Unlimited bool
}

// beforeRestore prefixes the snapshot a restore onto a desktop keeps of
// its data disk as it was.
const beforeRestore = "before-restore-"

// restoreSnapshots takes the snapshot a restore onto a desktop keeps of
// its data disk first (Snapshots.CreateSnapshot).
type restoreSnapshots interface {
	CreateSnapshot(ctx context.Context, id string, req SnapshotRequest) (*desktop.Snapshot, error)
}

// RestoreOnto writes a backup's disk over a stopped desktop's data disk, in
// place: the desktop keeps its OS disk, settings and identity, and its
// /home becomes the backup's (the backup may be of another desktop of the
// same owner). The data disk as it was is kept first as a data snapshot,
// "before-restore-<backup id>", which reverts the restore; a restore that
// fails puts it back. The desktop is "reverting" meanwhile and stopped
// after: it boots from the restored disk when started. Refused (nothing
// done) unless ReplaceDataDisk is set, the desktop is stopped and on this
// host, and its data disk is at least as large as the backup's.
func (b *Backups) RestoreOnto(ctx context.Context, backupID string, req RestoreOntoRequest) (*desktop.Desktop, error) {
	bk, t, repo, m, err := b.openRestorable(ctx, backupID)
	if err != nil {
		return nil, err
	}
	d, err := b.ops.live(ctx, req.Desktop)
	if err != nil {
		return nil, err
	}
	if !req.ReplaceDataDisk {
		return nil, &desktop.ValidationError{Field: "replace_data_disk", Message: fmt.Sprintf(
			"restoring backup %s onto desktop %s replaces its data disk (its /home); say so with replace_data_disk: true (its content now is kept as snapshot %q)",
			bk.ID, d.Name, beforeRestore+bk.ID)}
	}
	if err := localOnly(d, "restoring a backup onto it"); err != nil {
		return nil, err
	}
	if _, err := desktop.Begin(desktop.OpRestoreData, d.State); err != nil {
		return nil, err
	}
	if have := int64(d.DataDiskGiB) << 30; m.DiskBytes > have {
		return nil, &desktop.ConflictError{Message: fmt.Sprintf(
			"backup %s holds a %s data disk, desktop %s has %d GiB: grow its data disk to at least %d GiB first",
			bk.ID, gibString(m.DiskBytes), d.Name, d.DataDiskGiB, (m.DiskBytes+1<<30-1)>>30)}
	}
	over := overDisk{b}
	snap, err := over.keepBefore(ctx, d, bk, req)
	if err != nil {
		return nil, err
	}
	d, err = b.ops.begin(ctx, d.ID, desktop.OpRestoreData, desktop.StateStopped, req.Actor)
	if err != nil {
		return nil, err
	}
	b.ops.event(ctx, d.ID, "restore_requested", req.Actor,
		"restoring backup %s (%s, of desktop %s, taken %s) from target %s over the data disk; its content before is snapshot %q",
		bk.ID, bk.Kind, bk.DesktopName, bk.StartedAt.Format(time.RFC3339), t.Name, snap.Name)
	cp := *d
	b.ops.background(d.ID, func(ctx context.Context) { over.restoreOnto(ctx, &cp, bk, t, repo, m, snap, req.Actor) })
	return d, nil
}

// overDisk is a restore over a stopped desktop's data disk once
// RestoreOnto checked it: the snapshot kept first, the write, and the way
// back when the write fails.
type overDisk struct{ b *Backups }

// keepBefore takes the data snapshot that keeps a desktop's disk as it was
// before a restore, under a name free among its snapshots.
func (o overDisk) keepBefore(ctx context.Context, d *desktop.Desktop, bk *desktop.Backup, req RestoreOntoRequest) (*desktop.Snapshot, error) {
	b := o.b
	name := beforeRestore + bk.ID
	for i := 2; ; i++ {
		sn, err := b.snaps.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: name, Scope: desktop.ScopeData, Actor: req.Actor, Unlimited: req.Unlimited,
			Description: fmt.Sprintf("the data disk before backup %s was restored over it", bk.ID)})
		if errors.Is(err, desktop.ErrNameTaken) && i < 100 {
			name = fmt.Sprintf("%s%s-%d", beforeRestore, bk.ID, i)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("keeping the data disk as it is before the restore (snapshot %q): %w", name, err)
		}
		return sn, nil
	}
}

func (o overDisk) restoreOnto(ctx context.Context, d *desktop.Desktop, bk *desktop.Backup, t *desktop.BackupTarget, repo *backup.Repo,
	m *backup.Manifest, snap *desktop.Snapshot, actor string) {
	b := o.b
	begun := time.Now()
	err := func() error {
		release, err := b.moveData(ctx, t.ID)
		if err != nil {
			return err
		}
		defer release()
		return backup.RestoreOver(ctx, repo, m, d.DataDiskPath, nil)
	}()
	b.ops.observe("restore", begun, err)
	if err == nil {
		b.ops.end(ctx, d, desktop.OpRestoreData, true, desktop.StateStopped, "")
		b.ops.event(ctx, d.ID, "data_disk_restored", actor, "data disk restored from backup %s in %s; revert snapshot %q to undo",
			bk.ID, time.Since(begun).Round(time.Millisecond), snap.Name)
		return
	}
	// The disk is put back as it was (it may be half written), in a
	// context of its own: a restore cut short by its deadline still
	// reverts.
	back, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if rerr := o.revertBefore(back, d, snap); rerr != nil {
		b.ops.fail(back, d, string(desktop.OpRestoreData), fmt.Errorf("%w; putting the data disk back as it was failed too: %v (revert snapshot %q)", err, rerr, snap.Name))
		return
	}
	b.ops.end(back, d, desktop.OpRestoreData, false, desktop.StateStopped,
		fmt.Sprintf("restoring backup %s failed: %v; the data disk is as it was", bk.ID, err))
	b.ops.event(back, d.ID, "restore_data_failed", "bureau", "%s", d.LastError)
}

// revertBefore puts a desktop's data disk back to the snapshot taken before
// a restore.
func (o overDisk) revertBefore(ctx context.Context, d *desktop.Desktop, snap *desktop.Snapshot) error {
	disks, err := o.b.hosts.stoppedDisks(ctx, d)
	if err != nil {
		return err
	}
	return disks.RevertSnapshot(ctx, d.DataDiskPath, snap.Name)
}

// restoreInterrupted is what a restore onto a desktop that a restart cut
// short tells its owner: the snapshot its disk was kept in, the newest
// whose name says so.
func restoreInterrupted(snaps []*desktop.Snapshot) string {
	var last *desktop.Snapshot
	for _, sn := range snaps {
		if strings.HasPrefix(sn.Name, beforeRestore) && (last == nil || sn.CreatedAt.After(last.CreatedAt)) {
			last = sn
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("; its data disk may be half written: revert snapshot %q (the disk before the restore) or restore again", last.Name)
}

// gibString is n bytes in GiB, for messages: "2 GiB", "1.5 GiB".
func gibString(n int64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/(1<<30)), "0"), ".") + " GiB"
}
