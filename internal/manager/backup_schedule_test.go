package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestBackupSchedule: a schedule's backups start when due (not before),
// and its retention deletes the older ones from the target and the list.
func TestBackupSchedule(t *testing.T) {
	h, d := newBackupHarness(t)
	_, dir := addDirTarget(t, h, "nas")
	ctx := context.Background()
	b := h.m.Backups()
	n := func(v int) *int { return &v }
	var ve *desktop.ValidationError
	if _, err := b.SetSchedule(ctx, d.ID, ScheduleRequest{EveryMinutes: n(0)}); !errors.As(err, &ve) || ve.Field != "every_minutes" {
		t.Errorf("every 0 minutes: %v", err)
	}
	if _, err := b.Schedule(ctx, d.ID); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("no schedule yet: %v", err)
	}
	begun := time.Now().UTC()
	s, err := b.SetSchedule(ctx, d.ID, ScheduleRequest{EveryMinutes: n(10), KeepLast: n(2), KeepHourly: n(0), KeepDaily: n(0), KeepWeekly: n(0), Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if s.NextAt.Before(begun.Add(10*time.Minute)) || s.KeepLast != 2 || s.KeepHourly != 0 {
		t.Errorf("schedule: %+v", s)
	}
	if def, err := b.SetSchedule(ctx, d.ID, ScheduleRequest{}); err != nil || def.EveryMinutes != 60 || def.KeepHourly != 24 || def.KeepDaily != 7 || def.KeepWeekly != 4 {
		t.Errorf("the defaults: %+v %v", def, err)
	}
	if _, err := b.SetSchedule(ctx, d.ID, ScheduleRequest{EveryMinutes: n(10), KeepLast: n(2), KeepHourly: n(0), KeepDaily: n(0), KeepWeekly: n(0)}); err != nil {
		t.Fatal(err)
	}

	complete := func() []*desktop.Backup {
		list, err := b.List(ctx, BackupFilter{DesktopID: d.ID, State: desktop.BackupComplete})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	b.runDue(ctx, begun.Add(5*time.Minute))
	if all, _ := b.List(ctx, BackupFilter{DesktopID: d.ID}); len(all) != 0 {
		t.Fatalf("a backup before the schedule was due: %+v", all)
	}
	var taken []string
	for i := range 3 {
		qemuIO(t, d.DataDiskPath, "write -P 0x"+string(rune('a'+i))+"1 "+string(rune('0'+i))+"M 1M")
		b.runDue(ctx, begun.Add(time.Duration(11+11*i)*time.Minute))
		all, _ := b.List(ctx, BackupFilter{DesktopID: d.ID})
		if len(all) == 0 {
			t.Fatalf("round %d: no scheduled backup started", i)
		}
		bk := awaitBackup(t, h, all[0].ID)
		if bk.State != desktop.BackupComplete {
			t.Fatalf("round %d: the scheduled backup is %s: %s", i, bk.State, bk.Error)
		}
		taken = append(taken, bk.ID)
	}
	kept := complete()
	if len(kept) != 2 || kept[0].ID != taken[2] || kept[1].ID != taken[1] {
		t.Fatalf("after three scheduled backups with keep_last 2: %+v", kept)
	}
	if _, err := os.Stat(filepath.Join(dir, "backups", taken[0])); !os.IsNotExist(err) {
		t.Errorf("the pruned backup's manifest is still in the target: %v", err)
	}
	if m := marks(t, d.DataDiskPath); len(m) != 1 || m[0] != markPrefix+taken[2] {
		t.Errorf("marks after pruning: %v", m)
	}
	if err := b.DeleteSchedule(ctx, d.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Schedule(ctx, d.ID); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("a deleted schedule: %v", err)
	}
	b.runDue(ctx, begun.Add(24*time.Hour))
	if all, _ := b.List(ctx, BackupFilter{DesktopID: d.ID}); len(all) != 2 {
		t.Errorf("a backup ran after the schedule was deleted: %d backups", len(all))
	}
}

// TestBackupDelete: a deleted backup's manifest and record go, the next
// one stays whole, and the chunks only it used are swept.
func TestBackupDelete(t *testing.T) {
	h, d := newBackupHarness(t)
	_, dir := addDirTarget(t, h, "nas")
	ctx := context.Background()
	b := h.m.Backups()
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M", "write -P 0x12 1M 1M")
	first := takeBackup(t, h, d.ID, BackupRequest{})
	qemuIO(t, d.DataDiskPath, "write -P 0x22 0 1M")
	second := takeBackup(t, h, d.ID, BackupRequest{})
	chunks := func() int {
		list, _ := filepath.Glob(filepath.Join(dir, "chunks", "*", "*"))
		return len(list)
	}
	if got := chunks(); got != 3 {
		t.Fatalf("%d chunks before the delete, want 3", got)
	}
	if err := b.Delete(ctx, first.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, first.ID); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("a deleted backup's record: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for chunks() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := chunks(); got != 2 {
		t.Errorf("%d chunks after the delete, want 2 (the one only the first backup used swept)", got)
	}
	if check, err := b.Verify(ctx, second.ID, "alice"); err != nil || !check.OK {
		t.Errorf("the backup taken against the deleted one: %+v %v", check, err)
	}
	if err := b.Delete(ctx, first.ID, "alice"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("deleting it again: %v", err)
	}
}
