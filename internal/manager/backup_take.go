package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/backup/qcow2"
	"github.com/bureau/bureau/internal/desktop"
)

// markPrefix names the internal snapshots backups leave in data disks; they
// are bureau's, not the user's, and never listed as snapshots.
const markPrefix = "bureau-backup-"

// markWait is how long a backup waits for another operation on the desktop
// to end before it marks the disk (and before it drops an old mark).
const markWait = 10 * time.Minute

// Start records a backup of a desktop's data disk and takes it in the
// background; the record shows its progress.
func (b *Backups) Start(ctx context.Context, desktopID string, req BackupRequest) (*desktop.Backup, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	d, err := b.ops.live(ctx, desktopID)
	if err != nil {
		return nil, err
	}
	if err := localOnly(d, "a backup"); err != nil {
		return nil, err
	}
	if _, ok := markable(d.State); !ok {
		return nil, &desktop.TransitionError{Op: "backup", State: d.State}
	}
	t, repo, err := b.reach(ctx, req.Target)
	if err != nil {
		return nil, err
	}
	bk := &desktop.Backup{ID: newID(), DesktopID: d.ID, DesktopName: d.Name, Owner: d.Owner, TargetID: t.ID,
		State: desktop.BackupRunning, Kind: desktop.BackupFull, Image: d.Image, VCPUs: d.VCPUs, MemoryMiB: d.MemoryMiB,
		StartedAt: time.Now().UTC()}
	bk.Mark = markPrefix + bk.ID
	b.mu.Lock()
	if other, busy := b.running[d.ID]; busy {
		b.mu.Unlock()
		return nil, &desktop.ConflictError{Message: fmt.Sprintf("a backup of desktop %s is running (%s): wait for it to end", d.Name, other)}
	}
	b.running[d.ID] = bk.ID
	b.mu.Unlock()
	if err := b.records.CreateBackup(ctx, bk); err != nil {
		b.done(d.ID)
		return nil, err
	}
	b.ops.event(ctx, d.ID, "backup_started", req.Actor, "backup %s of the data disk to target %s started", bk.ID, t.Name)
	cp := *bk
	b.ops.spawn(6*time.Hour, func(ctx context.Context) {
		defer b.done(d.ID)
		b.take(ctx, &cp, t, repo, req.Actor)
	})
	return bk, nil
}

func (b *Backups) done(desktopID string) {
	b.mu.Lock()
	delete(b.running, desktopID)
	b.mu.Unlock()
}

// markable reports whether a desktop in state s can be marked, and how: live
// while its QEMU runs (running or frozen), else on its files.
func markable(s desktop.State) (live, ok bool) {
	switch {
	case s == desktop.StateRunning || s.Frozen():
		return true, true
	case s == desktop.StateStopped || s == desktop.StateHibernated:
		return false, true
	}
	return false, false
}

// take marks the disk, reads what changed since the previous backup to the
// same target (all of it for a full one), uploads what the target lacks and
// writes the manifest; then it drops marks no chain needs any more.
func (b *Backups) take(ctx context.Context, bk *desktop.Backup, t *desktop.BackupTarget, repo *backup.Repo, actor string) {
	begun := time.Now()
	err := b.takeSteps(ctx, bk, t, repo)
	b.ops.observe("backup", begun, err)
	fin := time.Now().UTC()
	bk.FinishedAt = &fin
	took := fin.Sub(begun).Round(100 * time.Millisecond)
	defer func() {
		if b.ended != nil {
			b.ended(bk)
		}
	}()
	if err != nil {
		bk.State, bk.Error = desktop.BackupFailed, err.Error()
		b.record(ctx, bk)
		b.dropMarks(ctx, bk.DesktopID, nil)
		retry := ""
		if actor == scheduleActor {
			if at := b.scheduledFailed(ctx, bk.DesktopID, time.Now().UTC()); !at.IsZero() {
				retry = "; tried again at " + at.Format(time.RFC3339)
			}
		}
		b.ops.event(ctx, bk.DesktopID, "backup_failed", actor, "backup %s to target %s failed after %s: %v%s", bk.ID, t.Name, took, err, retry)
		return
	}
	b.backedUp(bk.DesktopID)
	bk.State = desktop.BackupComplete
	b.record(ctx, bk)
	why := ""
	if bk.WhyFull != "" {
		why = " (" + bk.WhyFull + ")"
	}
	b.ops.event(ctx, bk.DesktopID, "backup_completed", actor, "%s backup %s to target %s%s, %s: read %s, %d of %d chunks new (%s uploaded) in %s",
		bk.Kind, bk.ID, t.Name, why, bk.Consistency, mib(bk.BytesRead), bk.ChunksNew, bk.Chunks, mib(bk.BytesNew), took)
	b.dropMarks(ctx, bk.DesktopID, nil)
	if s, err := b.schedules.Schedule(ctx, bk.DesktopID); err == nil && s.TargetID == t.ID {
		b.prune(ctx, s, t, repo)
	}
}

func (b *Backups) takeSteps(ctx context.Context, bk *desktop.Backup, t *desktop.BackupTarget, repo *backup.Repo) error {
	release, err := b.moveData(ctx, t.ID)
	if err != nil {
		return err
	}
	defer release()
	d, err := b.mark(ctx, bk)
	if err != nil {
		return err
	}
	b.record(ctx, bk)
	b.ops.failpoint("backup:after-mark")
	parent, prevMark, why := b.chain(ctx, bk, repo, t)
	src, err := qcow2.NewSource(d.DataDiskPath, bk.Mark, prevMark, backup.CellSize)
	if errors.Is(err, qcow2.ErrNoSnapshot) && prevMark != "" {
		parent, why = nil, "the previous backup's mark is gone from the data disk (the desktop moved between hosts, or its disk was replaced)"
		src, err = qcow2.NewSource(d.DataDiskPath, bk.Mark, "", backup.CellSize)
	}
	if err != nil {
		return fmt.Errorf("read the data disk at its mark: %w", err)
	}
	defer src.Close()
	bk.DiskBytes = src.Size()
	if parent != nil {
		bk.Kind, bk.Parent, bk.WhyFull = desktop.BackupIncremental, parent.ID, ""
	} else {
		bk.Kind, bk.Parent, bk.WhyFull = desktop.BackupFull, "", why
	}
	b.record(ctx, bk)
	meta := backup.Meta{ID: bk.ID, DesktopID: bk.DesktopID, DesktopName: bk.DesktopName, Owner: bk.Owner,
		Image: bk.Image, VCPUs: bk.VCPUs, MemoryMiB: bk.MemoryMiB, Kind: bk.Kind, WhyFull: bk.WhyFull,
		Consistency: bk.Consistency, Parent: bk.Parent, CreatedAt: bk.StartedAt}
	last := time.Time{}
	_, p, err := repo.Backup(ctx, src, parent, meta, func(p backup.Progress) {
		progressInto(bk, p)
		if time.Since(last) >= time.Second {
			last = time.Now()
			b.record(ctx, bk)
		}
	})
	progressInto(bk, p)
	return err
}

func progressInto(bk *desktop.Backup, p backup.Progress) {
	bk.BytesRead, bk.ReadTotal, bk.Chunks, bk.ChunksNew, bk.BytesNew = p.BytesRead, p.ReadTotal, p.Chunks, p.ChunksNew, p.BytesNew
}

// mark takes the backup's internal snapshot of the data disk under the
// desktop's lock: live (quiesced when the guest agent freezes the
// filesystems) or on the stopped desktop's file.
func (b *Backups) mark(ctx context.Context, bk *desktop.Backup) (*desktop.Desktop, error) {
	if err := b.ops.lockWithin(ctx, bk.DesktopID, "backup", markWait); err != nil {
		return nil, err
	}
	defer b.ops.unlock(bk.DesktopID)
	d, err := b.ops.live(ctx, bk.DesktopID)
	if err != nil {
		return nil, err
	}
	if err := localOnly(d, "a backup"); err != nil {
		return nil, err
	}
	live, ok := markable(d.State)
	if !ok {
		return nil, &desktop.TransitionError{Op: "backup", State: d.State}
	}
	if live {
		quiesced, err := b.vms.LiveDiskSnapshot(ctx, d.DomainName(), bk.Mark, []string{d.DataDiskPath})
		if err != nil {
			return nil, fmt.Errorf("mark the data disk: %w", err)
		}
		bk.Consistency = desktop.ConsistencyCrash
		if quiesced {
			bk.Consistency = desktop.ConsistencyFilesystem
		}
		return d, nil
	}
	disks, err := b.hosts.stoppedDisks(ctx, d)
	if err != nil {
		return nil, err
	}
	if err := disks.Snapshot(ctx, d.DataDiskPath, bk.Mark); err != nil {
		return nil, fmt.Errorf("mark the data disk: %w", err)
	}
	bk.Consistency = desktop.ConsistencyStopped
	return d, nil
}

// chain finds the backup this one is taken against: the desktop's last
// complete backup to the same target, with its manifest. Without one the
// backup is full, and why says why.
func (b *Backups) chain(ctx context.Context, bk *desktop.Backup, repo *backup.Repo, t *desktop.BackupTarget) (*backup.Manifest, string, string) {
	done, err := b.records.ListBackups(ctx, desktop.BackupFilter{DesktopID: bk.DesktopID, TargetID: t.ID, State: desktop.BackupComplete})
	if err != nil || len(done) == 0 {
		return nil, "", "the desktop's first backup to target " + t.Name
	}
	prev := done[0]
	m, err := repo.Manifest(ctx, prev.ID)
	if err != nil {
		return nil, "", fmt.Sprintf("the previous backup %s could not be read from the target (%v)", prev.ID, err)
	}
	return m, prev.Mark, ""
}

// record writes a backup's progress and outcome; a failed write is logged
// (the backup goes on: its manifest, not this row, is what makes it real).
func (b *Backups) record(ctx context.Context, bk *desktop.Backup) {
	if err := b.records.UpdateBackup(context.WithoutCancel(ctx), bk); err != nil {
		b.log.Error("recording backup progress", "backup", bk.ID, "err", err)
	}
}

// dropMarks removes the marks in a desktop's data disk that no backup chain
// needs: every mark but those of the newest complete backup to each target
// and those of backups running now (keep adds more). It waits for the
// desktop's lock a while and gives up quietly: the next backup tries again.
func (b *Backups) dropMarks(ctx context.Context, desktopID string, keep map[string]bool) {
	ctx = context.WithoutCancel(ctx)
	all, err := b.records.ListBackups(ctx, desktop.BackupFilter{DesktopID: desktopID})
	if err != nil {
		return
	}
	if keep == nil {
		keep = map[string]bool{}
	}
	newest := map[string]bool{}
	for _, bk := range all { // newest first
		switch {
		case bk.State == desktop.BackupRunning:
			keep[bk.Mark] = true
		case bk.State == desktop.BackupComplete && !newest[bk.TargetID]:
			newest[bk.TargetID] = true
			keep[bk.Mark] = true
		}
	}
	if err := b.ops.lockWithin(ctx, desktopID, "backup", time.Minute); err != nil {
		return
	}
	defer b.ops.unlock(desktopID)
	d, err := b.ops.live(ctx, desktopID)
	if err != nil || d.Remote() {
		return
	}
	f, err := os.Open(d.DataDiskPath)
	if err != nil {
		return
	}
	snaps, err := qcow2.Snapshots(f)
	f.Close()
	if err != nil {
		b.log.Warn("listing the data disk's backup marks", "desktop", desktopID, "err", err)
		return
	}
	live, ok := markable(d.State)
	if !ok {
		return
	}
	for _, s := range snaps {
		if !strings.HasPrefix(s.Name, markPrefix) || keep[s.Name] {
			continue
		}
		if live {
			err = b.vms.DeleteLiveDiskSnapshot(ctx, d.DomainName(), s.Name, []string{d.DataDiskPath})
		} else if disks, derr := b.hosts.stoppedDisks(ctx, d); derr != nil {
			err = derr
		} else {
			err = disks.DeleteSnapshot(ctx, d.DataDiskPath, s.Name)
		}
		if err != nil {
			b.log.Warn("dropping an old backup mark", "desktop", desktopID, "mark", s.Name, "err", err)
		}
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
