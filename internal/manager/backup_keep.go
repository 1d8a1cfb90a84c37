package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/desktop"
)

// targetLocks keeps a sweep of a target apart from what uploads or reads
// its chunks: backups, restores and verifies hold a target's lock shared, a
// sweep (which removes chunks no manifest uses yet) holds it alone.
type targetLocks struct{ m sync.Map }

func (l *targetLocks) of(targetID string) *sync.RWMutex {
	mu, _ := l.m.LoadOrStore(targetID, &sync.RWMutex{})
	return mu.(*sync.RWMutex)
}

// moveData waits for one of the host's slots for moving backup data and
// takes the target's lock shared (sweeps take it alone); release gives both
// back.
func (b *Backups) moveData(ctx context.Context, targetID string) (release func(), err error) {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	mu := b.locks.of(targetID)
	mu.RLock()
	return func() { mu.RUnlock(); <-b.slots }, nil
}

// Delete removes a backup: its manifest from the target (other backups,
// those taken against it included, are whole without it), then its record;
// the chunks nothing uses any more are swept from the target in the
// background. A running backup cannot be deleted.
func (b *Backups) Delete(ctx context.Context, id, actor string) error {
	if err := b.on(); err != nil {
		return err
	}
	bk, err := b.records.GetBackup(ctx, id)
	if err != nil {
		return err
	}
	if bk.State == desktop.BackupRunning {
		return &desktop.ConflictError{Message: fmt.Sprintf("backup %s is running: it can be deleted once it ends", bk.ID)}
	}
	t, repo, err := b.reach(ctx, bk.TargetID)
	if err != nil {
		return err
	}
	if err := b.forget(ctx, repo, bk); err != nil {
		return err
	}
	b.files.cache.Forget(bk.ID)
	b.ops.event(ctx, bk.DesktopID, "backup_deleted", actor, "backup %s (%s, taken %s) deleted from target %s",
		bk.ID, bk.Kind, bk.StartedAt.Format(time.RFC3339), t.Name)
	b.ops.spawn(time.Hour, func(ctx context.Context) { b.sweep(ctx, t, repo) })
	return nil
}

// forget removes a backup's manifest (a complete one has one) and record.
func (b *Backups) forget(ctx context.Context, repo *backup.Repo, bk *desktop.Backup) error {
	if bk.State == desktop.BackupComplete {
		if err := repo.Forget(ctx, bk.ID); err != nil {
			return err
		}
	}
	return b.records.DeleteBackup(ctx, bk.ID)
}

// sweep removes the chunks of a target that no backup uses, with no backup,
// restore or verify of this install touching the target meanwhile.
func (b *Backups) sweep(ctx context.Context, t *desktop.BackupTarget, repo *backup.Repo) {
	mu := b.locks.of(t.ID)
	mu.Lock()
	defer mu.Unlock()
	begun := time.Now()
	res, err := repo.Sweep(ctx)
	if err != nil {
		b.log.Error("sweeping unused chunks from a backup target", "target", t.Name, "err", err)
		return
	}
	b.log.Info("unused chunks swept from a backup target", "target", t.Name, "backups", res.Manifests,
		"chunks", res.Chunks, "deleted", res.Deleted, "took", time.Since(begun).Round(time.Millisecond))
}

// prune thins a desktop's complete backups in a target out by its
// schedule's retention, then sweeps the target when it deleted any.
func (b *Backups) prune(ctx context.Context, s *desktop.BackupSchedule, t *desktop.BackupTarget, repo *backup.Repo) {
	list, err := b.records.ListBackups(ctx, desktop.BackupFilter{DesktopID: s.DesktopID, TargetID: t.ID, State: desktop.BackupComplete})
	if err != nil {
		b.log.Error("listing backups to thin out", "desktop", s.DesktopID, "err", err)
		return
	}
	keep := keepers(list, s)
	gone := 0
	for _, bk := range list {
		if keep[bk.ID] {
			continue
		}
		if err := b.forget(ctx, repo, bk); err != nil && !errors.Is(err, desktop.ErrNotFound) {
			b.log.Error("thinning backups out", "backup", bk.ID, "err", err)
			continue
		}
		gone++
	}
	if gone == 0 {
		return
	}
	b.ops.event(ctx, s.DesktopID, "backups_pruned", "schedule", "%d older backups in target %s deleted by the schedule's retention (last %d, hourly %d, daily %d, weekly %d); %d kept",
		gone, t.Name, s.KeepLast, s.KeepHourly, s.KeepDaily, s.KeepWeekly, len(list)-gone)
	b.sweep(ctx, t, repo)
}

// keepers picks the backups a schedule's retention keeps from a desktop's
// complete backups in one target, newest first (as restic's forget does):
// the newest always, the KeepLast newest, and the newest of each of the
// KeepHourly newest hours, KeepDaily days and KeepWeekly ISO weeks that
// have one, in UTC.
func keepers(newestFirst []*desktop.Backup, s *desktop.BackupSchedule) map[string]bool {
	keep := map[string]bool{}
	if len(newestFirst) == 0 {
		return keep
	}
	keep[newestFirst[0].ID] = true
	for i := 0; i < len(newestFirst) && i < s.KeepLast; i++ {
		keep[newestFirst[i].ID] = true
	}
	buckets := []struct {
		n   int
		key func(time.Time) string
	}{
		{s.KeepHourly, func(t time.Time) string { return t.UTC().Format("2006-01-02T15") }},
		{s.KeepDaily, func(t time.Time) string { return t.UTC().Format("2006-01-02") }},
		{s.KeepWeekly, func(t time.Time) string { y, w := t.UTC().ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
	}
	for _, bucket := range buckets {
		seen := map[string]bool{}
		for _, bk := range newestFirst {
			if len(seen) >= bucket.n {
				break
			}
			if k := bucket.key(bk.StartedAt); !seen[k] {
				seen[k] = true
				keep[bk.ID] = true
			}
		}
	}
	return keep
}
