package manager

import (
	"context"
	"time"
)

// firstRetry is how long a failed scheduled backup waits before it is
// tried again the first time; each failure in a row doubles it, up to the
// schedule's own period.
const firstRetry = 5 * time.Minute

// retryAfter is the wait after failures failed scheduled backups in a row.
func retryAfter(failures int, every time.Duration) time.Duration {
	d := firstRetry
	for i := 1; i < failures && d < every; i++ {
		d *= 2
	}
	return min(d, every)
}

// scheduledFailed brings a desktop's next scheduled backup forward after
// one failed or could not start (a target down, full or refusing): tried
// again after 5 min, then 10, 20…, never later than the schedule's period.
// It returns when the next one is due.
func (b *Backups) scheduledFailed(ctx context.Context, desktopID string, now time.Time) time.Time {
	s, err := b.schedules.Schedule(ctx, desktopID)
	if err != nil {
		return time.Time{}
	}
	b.mu.Lock()
	b.failures[desktopID]++
	n := b.failures[desktopID]
	b.mu.Unlock()
	at := now.Add(retryAfter(n, time.Duration(s.EveryMinutes)*time.Minute))
	if !at.Before(s.NextAt) {
		return s.NextAt
	}
	if err := b.schedules.ScheduleNext(ctx, desktopID, at); err != nil {
		b.log.Error("bringing a failed scheduled backup forward", "desktop", desktopID, "err", err)
		return s.NextAt
	}
	return at
}

// backedUp ends a desktop's run of failed backups.
func (b *Backups) backedUp(desktopID string) {
	b.mu.Lock()
	delete(b.failures, desktopID)
	b.mu.Unlock()
}
