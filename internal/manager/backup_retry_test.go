package manager

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestRetryAfter(t *testing.T) {
	hour := time.Hour
	for _, c := range []struct {
		failures int
		every    time.Duration
		want     time.Duration
	}{{1, hour, 5 * time.Minute}, {2, hour, 10 * time.Minute}, {4, hour, 40 * time.Minute}, {5, hour, hour}, {9, hour, hour}, {1, 2 * time.Minute, 2 * time.Minute}} {
		if got := retryAfter(c.failures, c.every); got != c.want {
			t.Errorf("retryAfter(%d, %s) = %s, want %s", c.failures, c.every, got, c.want)
		}
	}
}

// TestScheduledBackupRetried: a scheduled backup that fails (its target
// cannot take chunks) is tried again after 5 minutes, then 10, not an
// hour later; once one completes the schedule keeps its period again.
func TestScheduledBackupRetried(t *testing.T) {
	h, d := newBackupHarness(t)
	_, dir := addDirTarget(t, h, "nas")
	ctx := context.Background()
	b := h.m.Backups()
	if _, err := b.SetSchedule(ctx, d.ID, ScheduleRequest{}); err != nil {
		t.Fatal(err)
	}
	qemuIO(t, d.DataDiskPath, "write -P 0x31 0 1M")
	chunks := filepath.Join(dir, "chunks")
	os.RemoveAll(chunks)
	os.WriteFile(chunks, nil, 0o600) // the target can take no chunk
	run := func(at time.Time) *desktop.Backup {
		t.Helper()
		b.runDue(ctx, at)
		all, _ := b.List(ctx, BackupFilter{DesktopID: d.ID})
		if len(all) == 0 {
			t.Fatal("no scheduled backup started")
		}
		return awaitBackup(t, h, all[0].ID)
	}
	next := func() time.Duration {
		s, err := b.Schedule(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(s.NextAt)
	}
	if bk := run(time.Now().Add(61 * time.Minute)); bk.State != desktop.BackupFailed {
		t.Fatalf("first try: %s", bk.State)
	}
	if n := next(); n < 4*time.Minute || n > 5*time.Minute {
		t.Errorf("after one failure the next try is in %s, want 5 min", n)
	}
	if bk := run(time.Now().Add(6 * time.Minute)); bk.State != desktop.BackupFailed {
		t.Fatalf("second try: %s", bk.State)
	}
	if n := next(); n < 9*time.Minute || n > 10*time.Minute {
		t.Errorf("after two failures the next try is in %s, want 10 min", n)
	}
	os.Remove(chunks)
	at := time.Now().Add(11 * time.Minute)
	if bk := run(at); bk.State != desktop.BackupComplete {
		t.Fatalf("once the target takes chunks again: %s %s", bk.State, bk.Error)
	}
	if s, _ := b.Schedule(ctx, d.ID); !s.NextAt.Equal(at.UTC().Add(time.Hour).Truncate(time.Millisecond)) {
		t.Errorf("after a success the next backup is at %s, want the period on from the run (%s)", s.NextAt, at.Add(time.Hour))
	}
	b.mu.Lock()
	left := b.failures[d.ID]
	b.mu.Unlock()
	if left != 0 {
		t.Errorf("%d failures still counted after a success", left)
	}
}
