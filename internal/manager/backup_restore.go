package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/desktop"
)

// RestoreSource fills a new desktop's data disk instead of making an empty
// one (a restore from a backup).
type RestoreSource struct {
	// DataDiskGiB is the size the restored disk has.
	DataDiskGiB int
	// Fill writes the data disk at path (a qcow2 that does not exist yet).
	Fill func(ctx context.Context, path string) error
}

// Restore makes a new desktop whose data disk is the backup's; it boots in
// the background like a create (on bureau's own host, booted cold: its OS
// disk is a fresh one of the backup's image, and memory is not backed up).
func (b *Backups) Restore(ctx context.Context, backupID string, req RestoreRequest) (*desktop.Desktop, error) {
	bk, t, repo, m, err := b.openRestorable(ctx, backupID)
	if err != nil {
		return nil, err
	}
	owner := req.Owner
	if owner == "" {
		owner = bk.Owner
	}
	gib := int((m.DiskBytes + 1<<30 - 1) >> 30)
	fill := func(ctx context.Context, path string) error {
		release, err := b.moveData(ctx, t.ID)
		if err != nil {
			return err
		}
		defer release()
		begun := time.Now()
		err = backup.RestoreDisk(ctx, repo, m, path, nil)
		b.ops.observe("restore", begun, err)
		if err != nil {
			return fmt.Errorf("restore the data disk from backup %s: %w", bk.ID, err)
		}
		b.log.Info("data disk restored", "backup", bk.ID, "bytes", m.DiskBytes, "took", time.Since(begun).Round(time.Millisecond))
		return nil
	}
	d, err := b.creates.Create(ctx, CreateRequest{Owner: owner, Name: req.Name, Actor: req.Actor, Unlimited: req.Unlimited,
		Spec:    desktop.Spec{Image: m.Image, VCPUs: m.VCPUs, MemoryMiB: m.MemoryMiB, DataDiskGiB: gib},
		Restore: &RestoreSource{DataDiskGiB: gib, Fill: fill}})
	if err != nil {
		return nil, err
	}
	b.ops.event(ctx, d.ID, "restore_requested", req.Actor, "restoring backup %s (%s, of desktop %s, taken %s) from target %s: the data disk comes from the backup, the OS disk is a fresh one of image %s",
		bk.ID, bk.Kind, bk.DesktopName, bk.StartedAt.Format(time.RFC3339), t.Name, m.Image)
	return d, nil
}

// Verify re-reads every chunk a backup uses and checks it.
func (b *Backups) Verify(ctx context.Context, backupID, actor string) (*desktop.BackupCheck, error) {
	bk, t, repo, m, err := b.openBackup(ctx, backupID, "verified")
	if errors.Is(err, backup.ErrNotFound) {
		return &desktop.BackupCheck{BackupID: bk.ID, Missing: []string{"backups/" + bk.ID}}, nil
	}
	if err != nil {
		return nil, err
	}
	mu := b.locks.of(t.ID)
	mu.RLock()
	check, err := repo.Verify(ctx, m)
	mu.RUnlock()
	if err != nil {
		return nil, err
	}
	verdict := "every chunk is intact"
	if !check.OK {
		verdict = fmt.Sprintf("%d chunks missing, %d corrupt", len(check.Missing), len(check.Corrupt))
	}
	b.ops.event(ctx, bk.DesktopID, "backup_verified", actor, "backup %s verified: %d chunks read, %s", bk.ID, check.Chunks, verdict)
	return check, nil
}

// openRestorable is openBackup for a restore: a manifest gone from the
// target is a conflict (the backup cannot be restored).
func (b *Backups) openRestorable(ctx context.Context, id string) (*desktop.Backup, *desktop.BackupTarget, *backup.Repo, *backup.Manifest, error) {
	bk, t, repo, m, err := b.openBackup(ctx, id, "restored")
	if errors.Is(err, backup.ErrNotFound) {
		return nil, nil, nil, nil, &desktop.ConflictError{Message: fmt.Sprintf("backup %s is no longer in target %s (its manifest is gone)", bk.ID, t.Name)}
	}
	return bk, t, repo, m, err
}

// openBackup reads what restoring or verifying a backup starts from: its
// record (only a complete one can be), its target and
// repository there, and its manifest. A manifest gone from the target is
// backup.ErrNotFound, with the record and target still returned.
func (b *Backups) openBackup(ctx context.Context, id, how string) (*desktop.Backup, *desktop.BackupTarget, *backup.Repo, *backup.Manifest, error) {
	if err := b.on(); err != nil {
		return nil, nil, nil, nil, err
	}
	bk, err := b.records.GetBackup(ctx, id)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if bk.State != desktop.BackupComplete {
		return nil, nil, nil, nil, &desktop.ConflictError{Message: fmt.Sprintf("backup %s is %s: only a complete backup can be %s", bk.ID, bk.State, how)}
	}
	t, repo, err := b.reach(ctx, bk.TargetID)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	m, err := repo.Manifest(ctx, bk.ID)
	return bk, t, repo, m, err
}
