package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// ScheduleRequest sets a desktop's backup schedule. Nil fields take the
// defaults: hourly, keeping 24 hourly, 7 daily and 4 weekly backups.
type ScheduleRequest struct {
	// Target is the target's id or name ("" = the only one there is).
	Target       string
	EveryMinutes *int
	KeepLast     *int
	KeepHourly   *int
	KeepDaily    *int
	KeepWeekly   *int
	Actor        string
}

// Schedule is the schedule req asks for, of desktop desktopID to target
// targetID, set at now: what req leaves out takes its default, and its
// first backup is due one period on. A schedule out of bounds is a
// ValidationError.
func (req ScheduleRequest) Schedule(desktopID, targetID string, now time.Time) (*desktop.BackupSchedule, error) {
	or := func(p *int, def int) int {
		if p == nil {
			return def
		}
		return *p
	}
	s := &desktop.BackupSchedule{DesktopID: desktopID, TargetID: targetID, EveryMinutes: or(req.EveryMinutes, desktop.DefaultBackupEvery),
		KeepLast: or(req.KeepLast, 0), KeepHourly: or(req.KeepHourly, desktop.DefaultKeepHourly),
		KeepDaily: or(req.KeepDaily, desktop.DefaultKeepDaily), KeepWeekly: or(req.KeepWeekly, desktop.DefaultKeepWeekly),
		UpdatedAt: now, UpdatedBy: req.Actor}
	if err := desktop.ValidateBackupSchedule(s); err != nil {
		return nil, err
	}
	s.NextAt = now.Add(time.Duration(s.EveryMinutes) * time.Minute)
	return s, nil
}

// scheduleActor is who takes scheduled backups, in events.
const scheduleActor = "schedule"

// scheduleTick is how often due schedules are looked for.
const scheduleTick = 20 * time.Second

// SetSchedule sets (or replaces) a desktop's backup schedule; its first
// backup is due one period from now.
func (b *Backups) SetSchedule(ctx context.Context, desktopID string, req ScheduleRequest) (*desktop.BackupSchedule, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	d, err := b.ops.live(ctx, desktopID)
	if err != nil {
		return nil, err
	}
	if err := localOnly(d, "a backup schedule"); err != nil {
		return nil, err
	}
	t, err := b.target(ctx, req.Target)
	if err != nil {
		return nil, err
	}
	s, err := req.Schedule(d.ID, t.ID, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	if err := b.schedules.PutSchedule(ctx, s); err != nil {
		return nil, err
	}
	b.ops.event(ctx, d.ID, "backup_scheduled", req.Actor, "backed up every %d min to target %s, keeping the last %d, hourly %d, daily %d, weekly %d; next at %s",
		s.EveryMinutes, t.Name, s.KeepLast, s.KeepHourly, s.KeepDaily, s.KeepWeekly, s.NextAt.Format(time.RFC3339))
	return s, nil
}

// Schedule returns a desktop's backup schedule (not found: it has none).
func (b *Backups) Schedule(ctx context.Context, desktopID string) (*desktop.BackupSchedule, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	if _, err := b.ops.live(ctx, desktopID); err != nil {
		return nil, err
	}
	s, err := b.schedules.Schedule(ctx, desktopID)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, fmt.Errorf("desktop %s has no backup schedule: %w", desktopID, desktop.ErrNotFound)
	}
	return s, err
}

// DeleteSchedule stops a desktop's scheduled backups; its backups stay.
func (b *Backups) DeleteSchedule(ctx context.Context, desktopID, actor string) error {
	if err := b.on(); err != nil {
		return err
	}
	if _, err := b.ops.live(ctx, desktopID); err != nil {
		return err
	}
	if err := b.schedules.DeleteSchedule(ctx, desktopID); err != nil {
		return err
	}
	b.ops.event(ctx, desktopID, "backup_unscheduled", actor, "scheduled backups stopped; the backups taken stay")
	return nil
}

// watchSchedules starts the backups that are due, every tick, until the
// manager closes. A due desktop that cannot be backed up now (busy with a
// backup, or in a state without a disk to mark) waits for its next period.
func (b *Backups) watchSchedules(tick time.Duration) {
	if b.on() != nil {
		return
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-b.ops.ctx.Done():
			return
		case <-t.C:
			b.runDue(b.ops.ctx, time.Now().UTC())
		}
	}
}

// runDue starts every schedule's backup that is due at now.
func (b *Backups) runDue(ctx context.Context, now time.Time) {
	due, err := b.schedules.DueSchedules(ctx, now)
	if err != nil {
		b.log.Error("looking for due backups", "err", err)
		return
	}
	for _, s := range due {
		next := now.Add(time.Duration(s.EveryMinutes) * time.Minute)
		if err := b.schedules.ScheduleNext(ctx, s.DesktopID, next); err != nil {
			b.log.Error("moving a backup schedule on", "desktop", s.DesktopID, "err", err)
			continue
		}
		d, err := b.ops.live(ctx, s.DesktopID)
		if errors.Is(err, desktop.ErrNotFound) {
			b.schedules.DeleteSchedule(ctx, s.DesktopID) // the desktop is gone; its backups stay
			continue
		}
		if err != nil {
			continue
		}
		if _, ok := markable(d.State); !ok {
			b.ops.event(ctx, d.ID, "backup_skipped", "schedule", "scheduled backup skipped: the desktop is %s; next at %s", d.State, next.Format(time.RFC3339))
			continue
		}
		if _, err := b.Start(ctx, d.ID, BackupRequest{Target: s.TargetID, Actor: scheduleActor}); err != nil {
			if at := b.scheduledFailed(ctx, d.ID, now); !at.IsZero() {
				next = at
			}
			b.ops.event(ctx, d.ID, "backup_skipped", scheduleActor, "scheduled backup not started: %v; tried again at %s", err, next.Format(time.RFC3339))
		}
	}
}
